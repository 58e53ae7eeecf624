"""graphc runtime: tensors, the op registry, the graph IR, tracing, the function cache, executor."""
