"""C++/CUDA extension builds: the parent's build service, the extension cache and the worker's client of it, and
the sandboxed build step (docs/architecture.md)."""
