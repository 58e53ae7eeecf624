"""Writes tests/saving/data/list_ops_v1/: a SavedModel whose graph holds every gradient list
primitive of IR version 1 (list_grad_*, loop_stack_*), its input, and what that graphc
computed from it on the numpy backend and on the numba backend with its kernels forced on.

The committed copy was written by graphc at commit 39ab312 (IR version 1, before the list
primitives were folded into tensor_list_*), run as
    python tests/saving/data/make_list_ops_v1.py <dir>
from a checkout of that commit. test_saved_model_upgrade.py loads it with today's graphc.
"""
import os
import sys
import tempfile

# as the tests' numba_forced, with a kernel cache of its own
os.environ.update(GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel",
                  GRAPHC_COMPILE="sync", GRAPHC_CACHE_DIR=tempfile.mkdtemp())

import numpy as np  # noqa: E402

import graphc as gc  # noqa: E402

X = np.array([[1.5, -0.5, 2.0], [0.25, 3.0, -1.0]], np.float32)


class ListGrads(gc.Module):
    @gc.function(input_signature=[gc.TensorSpec([2, 3], gc.float32)])
    def grads(self, x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = x[0, 1:] * x[1, :2]
            ta = gc.TensorArray(gc.float32, size=2)
            ta = ta.write(0, y).write(1, y * 2.0)
            z = ta.stack() + ta.read(0) + ta.read(1) + gc.reduce_sum(ta.gather([1, 0]))
            tu = gc.TensorArray(gc.float32, size=2).unstack(x * 3.0)
            z = z + tu.read(1)[1:]
            tc = gc.TensorArray(gc.float32, size=2, element_shape=[3]).unstack(gc.tanh(x))
            s = gc.reduce_sum(tc.concat()) * 0.5
            i = gc.constant(0)
            while i < 3:
                s = s + gc.reduce_sum(z) * gc.cast(i, gc.float32) + gc.reduce_sum(
                    tc.read(i % 2) * x[i % 2])
                i += 1
            loss = s + gc.reduce_sum(gc.tanh(x))
        return tape.gradient(loss, x)


def main(out):
    gc.saved_model.save(ListGrads(), out)
    np.save(os.path.join(out, "x.npy"), X, allow_pickle=False)
    for backend in ("numpy", "numba"):
        got = gc.saved_model.load(out, backend=backend).grads(gc.constant(X)).numpy()
        np.save(os.path.join(out, f"expected_{backend}.npy"), got, allow_pickle=False)


if __name__ == "__main__":
    main(sys.argv[1])
