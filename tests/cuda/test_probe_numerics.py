"""Probe findings (issue 15): backend="cuda" against eager numpy on values where a kernel's
formula and numpy's rule part ways."""
import numpy as np
import pytest

import graphc as gc
from cuda_helpers import agree

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")     # numpy's, edge values

EDGES = [-0.0, -np.inf, np.inf, 0.0, -1.0, 2.0, np.nan, 1e-30]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_scalar_half_is_c_pow(dtype):
    """pow with a scalar exponent 0.5 is C's pow (TF's): -0.0 ** 0.5 = +0.0 and
    -inf ** 0.5 = +inf, eagerly too (numpy's power would take sqrt: -0.0 and nan)."""
    x = np.array(EDGES, dtype)
    half = np.full(x.shape, 0.5, dtype)
    runs = agree(lambda a, h: [a ** 0.5, (a * 2.0) ** 0.5 + 1.0, a ** h, a ** -0.5,
                               a ** 2.0], x, half, kernels=1)
    assert runs.fallbacks == 0
    got = gc.function(lambda a: a ** 0.5, backend="cuda")(gc.constant(x)).numpy()
    assert not np.signbit(got[0]) and got[1] == np.inf     # TF's values, as eager's
