"""Native kernels for graphc's numba backend: vectorizable scalar math (`vecmath`), code
generation of fused elementwise/reduction kernels, and their on-disk cache. Submodules are
imported on demand (they compile with numba), never from here."""
