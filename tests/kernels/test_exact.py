"""graphc.kernels.cpu.exact: the building blocks that keep kernels on numpy's rules."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import njit
from numba.core.errors import TypingError

from graphc.kernels.cpu import exact


@njit
def _block_sum(a, n):
    return exact.block_sum(a, n)


@njit
def _cascade(sums):
    levels = exact.stack_array(np.float64, 64)   # exact.LEVELS (a literal here)
    count = 0
    for s in sums:
        count = exact.cascade_push(levels, count, s)
    return exact.cascade_total(levels, count, 0.0)


def _pairwise(xs):
    """The pairwise tree cascade_push/cascade_total build: complete trees of 2**k leaves
    from the left, then the partial trees added right to left."""
    trees, i = [], 0
    n = len(xs)
    for k in range(64, -1, -1):
        if n & (1 << k):
            leaves = xs[i:i + (1 << k)]
            while len(leaves) > 1:
                leaves = [leaves[j] + leaves[j + 1] for j in range(0, len(leaves), 2)]
            trees.append(leaves[0])
            i += 1 << k
    total = 0.0
    for t in reversed(trees):
        total = t if total == 0.0 and t is trees[-1] else t + total
    return total


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 700), st.integers(0, 2**32 - 1),
       st.sampled_from([np.float32, np.float64]))
def test_block_sum_is_accurate_and_depends_only_on_n(n, seed, dt):
    x = np.random.default_rng(seed).standard_normal(n + 5).astype(dt)
    got = _block_sum(x, n)
    assert type(got) is float or got.dtype == dt
    bound = 4 * math.log2(n + 2) * np.finfo(dt).eps * np.abs(x[:n]).sum() + 1e-300
    assert abs(float(got) - math.fsum(x[:n].tolist())) <= bound
    assert _block_sum(x[:n].copy(), n) == got           # elements past n are not read
    assert _block_sum(x, n) == got                      # a fixed order: same bits


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 13, 64, 100])
def test_cascade_adds_blocks_as_a_pairwise_tree(n):
    xs = [float(v) for v in np.random.default_rng(n).standard_normal(n) * 1e8]
    assert _cascade(np.array(xs)) == _pairwise(xs)


def test_nan_and_inf_survive_block_sums():
    x = np.ones(300, np.float32)
    x[7] = np.nan
    assert np.isnan(_block_sum(x, 300))
    x[7], x[200] = np.inf, -np.inf
    assert np.isnan(_block_sum(x, 300))
    x[200] = 1.0
    assert _block_sum(x, 300) == np.inf


@njit
def _wrapping(a, b):
    return (exact.wadd(a, b), exact.wsub(a, b), exact.wmul(a, b), exact.wneg(a),
            exact.wabs(a), exact.wadd(a, b) > a)


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_wrapping_helpers_give_numpys_twos_complement(dt):
    info = np.iinfo(dt)
    for a, b in [(info.max, 1), (info.min, -1), (info.min, info.min), (info.max, info.max),
                 (12345, -678)]:
        a, b = dt(a), dt(b)
        with np.errstate(over="ignore"):
            want = (a + b, a - b, a * b, -a, np.abs(a), a + b > a)
        got = _wrapping(a, b)
        assert _wrapping.nopython_signatures[-1].return_type.types[0].bitwidth == \
            8 * np.dtype(dt).itemsize                    # computed in the argument's width
        assert list(got) == list(want)


def test_wrapping_helpers_refuse_mixed_types():
    @njit
    def mixed(a, b):
        return exact.wadd(a, b)
    with pytest.raises(TypingError, match="cast them first"):
        mixed(np.int32(1), np.int64(2))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_float_to_int_casts_match_numpy_on_this_machine(dt):
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.0**31, -2.0**31, 2.0**63, -2.0**63,
                  -2.5, 2.5, 1e300 if dt == np.float64 else 3e38], dt)
    to32 = njit(lambda v: [exact.to_int32(e) for e in v])
    to64 = njit(lambda v: [exact.to_int64(e) for e in v])
    with np.errstate(invalid="ignore"):
        assert to32(x) == x.astype(np.int32).tolist()
        assert to64(x) == x.astype(np.int64).tolist()
