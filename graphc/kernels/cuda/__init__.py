"""The CUDA target on numba-cuda: availability checks, device memory (`device`: copies,
variables; `memory`: allocation and the buffer pool), the backend (`backend`: the plan;
`env`: one call's slots; `control`: cond/while and variable steps; `records`: STATS and
describe()), the scalar library the shared expression code calls on the device
(`scalar`), and kernels lowered from the same fusion groups as the CPU target
(`lowering`, the backend's entry point; its generators: `elementwise` grid-stride
kernels, `reduce` row / column / full reductions, `gemm`, and `codegen`, what they
share). Imported on demand: numba-cuda is optional (`pip install 'graphc[cuda]'`)."""
