"""ATen operators from real models: the tracer, the bundled model recipes and the suite generator (docs/aten.md)."""
