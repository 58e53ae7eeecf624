"""gc.where(condition), gc.boolean_mask and gather with batch_dims on the cuda backend: the
data-dependent ops run their numpy rule on the host (a fallback) and the ops around them
stay on the device; the results are numpy's and eager's."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError

X = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0) / 4.0


def _masked(x):
    idx = gc.where(x > 0.0)
    kept = gc.boolean_mask(x, x > 0.0)
    return gc.cast(idx, gc.float32) * 2.0 + 1.0, gc.exp(kept) - 1.0, gc.reduce_sum(idx, axis=0)


def _grad(x, m):
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.reduce_sum(gc.tanh(gc.boolean_mask(x, m)) * 3.0)
    return tape.gradient(y, x)


def _same(got, want):
    for g, w in zip(got, want):
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("signature", [None, [gc.TensorSpec([None, 4], gc.float32)]])
def test_where_and_boolean_mask_agree_with_numpy(signature, cuda_stats):
    want = gc.function(_masked, backend="numpy")(X)
    eager = _masked(gc.constant(X))
    f = gc.function(_masked, backend="cuda", input_signature=signature)
    with cuda_stats.count():
        got = f(X)
    assert cuda_stats.fallbacks >= 1           # where_indices: its rule on the host
    _same(got, want)
    _same(got, eager)


def test_boolean_mask_gradient_agrees_with_numpy():
    sig = [gc.TensorSpec([None, 4], gc.float32), gc.TensorSpec([None], gc.bool)]
    m = np.array([True, False, True])
    want = _grad(gc.constant(X), gc.constant(m))
    got = gc.function(_grad, backend="cuda", input_signature=sig)(X, m)
    _same([got], [want])
    with pytest.raises(InvalidArgumentError, match="mask of shape") as e:
        gc.function(_grad, backend="cuda", input_signature=sig)(X, m[:2]).numpy()
    assert "test_cuda_selection.py" in str(e.value)


def test_batch_gather_and_its_gradient_agree_with_numpy(cuda_stats):
    p = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[0, 3, 3], [1, 1, 2]], np.int32)

    def fn(x, i):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.gather(x, i, axis=2, batch_dims=1) * 2.0
            loss = gc.reduce_sum(y * y)
        return y, tape.gradient(loss, x)
    want = gc.function(fn, backend="numpy")(p, idx)
    with cuda_stats.count():
        got = gc.function(fn, backend="cuda")(p, idx)
    assert cuda_stats.fallbacks >= 2          # batch_gather and its scatter: on the host
    _same(got, want)
    _same(got, fn(gc.constant(p), gc.constant(idx)))
    with pytest.raises(InvalidArgumentError, match="out of range"):
        gc.function(fn, backend="cuda")(p, idx + 1)[0].numpy()
