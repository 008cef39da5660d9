"""From a model to faster kernels (docs/model.md)."""
