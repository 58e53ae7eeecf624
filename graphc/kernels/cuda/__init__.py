"""The CUDA target on numba-cuda: availability checks, device memory and the backend
(`backend`), the scalar library the shared expression code calls on the device
(`scalar`), and kernels lowered from the same fusion groups as the CPU target
(`lowering`, the backend's entry point; its generators: `elementwise` grid-stride
kernels, `reduce` row / column / full reductions, `gemm`, and `codegen`, what they
share). Imported on demand: numba-cuda is optional (`pip install 'graphc[cuda]'`)."""
