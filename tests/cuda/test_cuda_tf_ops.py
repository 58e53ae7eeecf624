"""gather_nd/scatter_nd/tensor_scatter, sort/top_k, the segment reductions, einsum and the
gc.debugging checks on the cuda backend: the new primitives run their numpy rules on the
host (a fallback), the ops around them stay on the device, and the results (gradients
included) are the numpy backend's; run-time check failures raise as there."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError

X = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0) / 4.0


def _ops(x):
    idx = gc.constant([[0, 1], [2, 3], [0, 1]])
    with gc.GradientTape() as tape:
        tape.watch(x)
        g = gc.gather_nd(gc.debugging.check_numerics(x * 2.0 + 1.0, "x"), idx)
        s = gc.tensor_scatter_nd_add(x, idx, g) + gc.scatter_nd(idx, g, gc.shape(x))
        seg = gc.math.unsorted_segment_max(x, [1, 0, 1], 2) + gc.math.segment_sum(x, [0, 0, 1])
        e = gc.einsum("ij,kj->ik", x, x)
        loss = gc.reduce_sum(gc.tanh(s)) + gc.reduce_sum(gc.sort(x) * 3.0) \
            + gc.reduce_sum(gc.math.top_k(x, 2).values) + gc.reduce_sum(seg) + gc.reduce_sum(e)
    gc.debugging.assert_less(loss, 1e6)
    return loss * 1.0 + 0.0, tape.gradient(loss, x) * 2.0 - 1.0, gc.argsort(x, axis=0)


@pytest.mark.parametrize("signature", [None, [gc.TensorSpec([None, 4], gc.float32)]])
def test_tf_ops_agree_with_numpy(signature, cuda_stats):
    want = gc.function(_ops, backend="numpy")(X)
    f = gc.function(_ops, backend="cuda", input_signature=signature)
    with cuda_stats.count():
        got = f(X)
    assert cuda_stats.fallbacks >= 1
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-6, atol=1e-5)


def test_run_time_checks_raise_on_cuda():
    f = gc.function(_ops, backend="cuda")
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidArgumentError, match="x : Tensor had NaN values"):
        f(bad)
