"""numba kernels: `x ** 0.5` with a scalar exponent is C's pow as eager's (TF's: -0.0 -> +0.0,
-inf -> +inf; numpy's power would take sqrt there), as is an array exponent (found by the
issue-15 probe; the CUDA twin is tests/cuda/test_probe_numerics.py; every special value:
tests/runtime/test_pow_special_values.py)."""
import numpy as np
import pytest

import graphc as gc

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_pow_half_matches_eager(numba_forced, dtype):
    x = np.array([-0.0, -np.inf, np.inf, 0.0, -1.0, 2.0, np.nan, 1e-30] * 8, dtype)
    half = np.full(x.shape, 0.5, dtype)

    def fn(a, h):
        return (a * 2.0) ** 0.5, (a * 2.0) ** h, (a * 2.0) ** -0.5

    with numba_forced.expect():
        got = gc.function(fn, backend="numba")(gc.constant(x), gc.constant(half))
    for g, e in zip(got, fn(gc.constant(x), gc.constant(half))):
        g, e = g.numpy(), e.numpy()
        np.testing.assert_allclose(g, e, rtol=1e-6, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(e))
    half_pow = got[0].numpy()                # TF's pow(-0.0, 0.5) = +0.0, pow(-inf, 0.5) = inf
    assert not np.signbit(half_pow[0]) and half_pow[1] == np.inf
