"""What the CUDA backend asks of the kernel generators: one fused group, or one matmul.

Contract between `backend` (plumbing: memory, fallback, control flow) and the generators:

- `lower_group(group)` takes a `kernels.fusion.Group` exactly as `fuse()` yields it (a
  single-op group included) and returns a `GroupKernel`, or None when the group has
  nothing CUDA can run (the backend then runs its ops one by one on the fallback path).
- `GroupKernel(inputs)`: `inputs` are device arrays (numba-cuda DeviceNDArray, or the
  simulator's stand-in) in `group.inputs` order, 0-d included; it launches on the default
  stream and returns new device arrays for `group.outputs`, shapes and dtypes as the
  numpy rules give. It raises the graphc error the numpy rules raise for bad shapes.
  `.describe()` is the text `graphc graph --backend cuda` shows (kernel kind, launch
  shape, source).
- `matmul(a, b, **attrs)` with the matmul op's attrs: a device array, numpy's result.
"""


def lower_group(group):
    return None


def matmul(a, b, **attrs):
    raise NotImplementedError("cuda matmul: provided by the kernel generators")
