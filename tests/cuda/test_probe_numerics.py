"""Probe findings (issue 15): backend="cuda" against eager numpy on values where a kernel's
formula and numpy's rule part ways."""
import numpy as np
import pytest

import graphc as gc
from cuda_helpers import agree

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")     # numpy's, edge values

EDGES = [-0.0, -np.inf, np.inf, 0.0, -1.0, 2.0, np.nan, 1e-30]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_scalar_half_is_numpy_sqrt(dtype):
    """numpy's power with a scalar exponent 0.5 is sqrt: -0.0 ** 0.5 = -0.0 and
    -inf ** 0.5 = nan (C's pow gives +0.0 and +inf); an array exponent stays C's pow."""
    x = np.array(EDGES, dtype)
    half = np.full(x.shape, 0.5, dtype)
    runs = agree(lambda a, h: [a ** 0.5, (a * 2.0) ** 0.5 + 1.0, a ** h, a ** -0.5,
                               a ** 2.0], x, half, kernels=1)
    assert runs.fallbacks == 0
    got = gc.function(lambda a: a ** 0.5, backend="cuda")(gc.constant(x)).numpy()
    assert np.signbit(got[0]) and np.isnan(got[1])         # the eager values, exactly
