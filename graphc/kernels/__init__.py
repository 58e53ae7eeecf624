"""Kernels for graphc's compiled backends. Target-neutral pieces live here: fusion of
elementwise ops and reductions into groups (`fusion`), scalar expression code built from the
registry's templates (`expr`), the content-addressed kernel cache (`cache`, `cache_trust`),
background compile tiers (`tiers`) and run counters (`stats`). Each target has its own
subpackage: `cpu` (numba CPU, OpenMP, BLAS), `cuda` (numba-cuda); `vecmath` holds the
vectorizable float math the CPU kernels call. Submodules are imported on demand (they
compile with numba), never from here."""
