"""Reduction groups under the simulator against the numpy rules on the same inputs: row
kernels, two-pass column and full reductions, softmax/logsumexp/layernorm, every
reduction kind and dtype, NaN propagation, wrap-around, products in numpy's order."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cuda import codegen, lowering
from cuda_kernel_cases import (F32, F64, I32, I64, KINDS, layernorm, logsumexp,
                               reductions, softmax)
from cuda_kernel_helpers import check

# float sums differ from numpy's by rounding only (tree order)
TOL = {"float32": 2e-6, "float64": 1e-13}
LONG = codegen.THREADS * 32 + 37      # a row this long, alone, takes the two-pass kernels


def _data(dt, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dt.is_floating:
        return (rng.standard_normal(shape) * 2).astype(dt.np)
    return rng.integers(-50, 50, shape).astype(dt.np)


def _all_kinds(dt, axis):
    fns = [reductions(kind, dt, axis) for kind in KINDS]
    return lambda x: tuple(f(x) for f in fns)


WIDE = codegen.THREADS + 24           # columns enough for a thread per column (40 simulated)
_LAYOUTS = [(1, (5, 7), "row", False), (0, (5, WIDE), "two_pass", True),
            ([0, 1], (3, 5), "two_pass", False)]
_MORE = [(-1, (2, 3, 6), "row", False), (0, (9, 4), "two_pass", False),
         ([0, 2], (3, 2, 4), "two_pass", False)]


@pytest.mark.parametrize("dt,axis,shape,layout,columns",
                         [(dt,) + c for dt in (F32, F64, I32, I64) for c in _LAYOUTS] +
                         [(F32,) + c for c in _MORE])
def test_every_kind_dtype_and_layout(dt, axis, shape, layout, columns):
    """sum, prod, max, min, all, any of one input: groups with several outputs."""
    x = _data(dt, shape, seed=len(shape))
    tol = 4 * TOL.get(dt.name, 0)
    kernels = check(_all_kinds(dt, axis), [gc.TensorSpec(list(shape), dt)], [x], rtol=tol,
                    atol=tol)
    assert sum(len(k.group.outputs) for k in kernels) == 6   # CSE: x * 2 and x > 0 shared
    assert {(k.last.kind, k.last.columns) for k in kernels} == {(layout, columns)}


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [0, 1, [0, 1]])
def test_keepdims_and_outputs_of_outer_statements(keepdims, axis):
    def fn(x, b):
        s = gc.reduce_sum(x * x, axis=axis, keepdims=keepdims)
        return s * 0.5 + 1.0, gc.reduce_max(x + b, axis=axis, keepdims=keepdims)
    x = _data(F32, (6, 5))
    b = _data(F32, (5,), 1)
    check(fn, [gc.TensorSpec([6, 5], F32), gc.TensorSpec([5], F32)], [x, b], rtol=2e-6)


@pytest.mark.parametrize("axis", [1, 0, [0, 1]])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_float_max_min_propagate_nan(axis, kind):
    x = _data(F32, (4, 6))
    x[1, 2] = np.nan
    x[3, 0] = np.inf
    x[0, 5] = -np.inf
    check(reductions(kind, F32, axis), [gc.TensorSpec([4, 6], F32)], [x])


@pytest.mark.parametrize("axis", [1, 0, [0, 1]])
def test_float_products_in_numpys_order(axis):
    # regrouped, (1e300 * 1e300) * (1e-300 * 1e-300) is inf * 0 = NaN; numpy gives inf
    x = np.array([[1e300, 1e300, 1e-300, 1e-300]] * 3, np.float64).T.copy() if axis == 0 \
        else np.array([[1e300, 1e300, 1e-300, 1e-300]] * 3, np.float64)
    fn = lambda v: gc.reduce_prod(v, axis=axis)   # noqa: E731
    check(fn, [gc.TensorSpec(list(x.shape), F64)], [x])


@pytest.mark.parametrize("axis", [1, 0, [0, 1]])
@pytest.mark.parametrize("dt", [I32, I64])
def test_integer_sums_and_products_wrap(axis, dt):
    info = np.iinfo(dt.np)
    x = np.full((3, 40), info.max // 3 + 7, dt.np)
    x[1, ::3] = info.min
    x[2, 1::2] = 3
    check(lambda v: (gc.reduce_sum(v, axis=axis), gc.reduce_prod(v, axis=axis)),
          [gc.TensorSpec([3, 40], dt)], [x])


@pytest.mark.parametrize("shape", [(6, 10), (1, LONG)])
def test_softmax_logsumexp_layernorm(shape):
    layout = "row" if shape[0] > 1 else "two_pass"
    x = _data(F32, shape)
    x[0, 1] = 30.0      # exp overflows without the max subtraction
    (k,) = check(softmax, [gc.TensorSpec(list(shape), F32)], [x], rtol=1e-5, atol=1e-7)
    assert k.last.kind == layout
    check(logsumexp, [gc.TensorSpec(list(shape), F64)], [x.astype(np.float64)], rtol=1e-12,
          kinds=[layout])
    g, b = _data(F32, shape[1:], 1), _data(F32, shape[1:], 2)
    (k,) = check(layernorm, [gc.TensorSpec(list(shape), F32), gc.TensorSpec([shape[1]], F32),
                             gc.TensorSpec([shape[1]], F32)], [x, g, b], rtol=1e-4, atol=1e-5)
    assert k.last.kind == layout
    assert "reduce_sum" in k.describe() and "cuda_kernel_cases.py:" in k.describe()


def test_softmax_row_kernel_is_one_launch_reading_rows_per_pass():
    (k,) = check(softmax, [gc.TensorSpec([3, 8], F32)], [_data(F32, (3, 8))], rtol=1e-6)
    assert k.last.launches == [("row", 3, codegen.row_threads(8))]
    src = k.last.source
    assert src.count("cuda.shared.array") == 2 and src.count("exp(") == 2


def test_two_pass_uses_several_chunks_per_row(monkeypatch):
    monkeypatch.setattr(lowering, "ONE_BLOCK_STEPS", 0)
    x = _data(F32, (2, 3 * codegen.THREADS + 5))
    (k,) = check(lambda v: gc.reduce_sum(v, axis=[0, 1]), [gc.TensorSpec(list(x.shape), F32)],
                 [x], rtol=2e-6)
    names = [name for name, _, _ in k.last.launches]
    assert names == ["partials_0", "final"]     # the last block combines the partials
    assert k.last.launches[0][1] > 1      # several blocks of partials


def test_small_column_and_full_reductions_are_one_launch():
    x = _data(F32, (2, 3 * codegen.THREADS + 5))
    (k,) = check(lambda v: gc.reduce_sum(v, axis=[0, 1]), [gc.TensorSpec(list(x.shape), F32)],
                 [x], rtol=2e-6)
    assert k.last.launches == [("one_block", 1, codegen.THREADS)] and k.last.one_block


_FORMS = [(F32, 0, (5, WIDE)), (I64, [0, 1], (3, 5)), (F64, 0, (9, 4)),
          (I32, [0, 2], (3, 2, 4)), (F32, [0, 1], (2, 3 * codegen.THREADS + 5)),
          (F64, 0, (2 * codegen.THREADS + 3, WIDE))]


@pytest.mark.parametrize("one_block", [True, False])
@pytest.mark.parametrize("dt,axis,shape", _FORMS)
def test_one_block_and_last_block_forms_agree(monkeypatch, one_block, dt, axis, shape):
    """Both forms of a column/full reduction, every kind, run twice (the last block's
    count of finished blocks is reset for the next launch)."""
    monkeypatch.setattr(lowering, "ONE_BLOCK_STEPS", 1 << 60 if one_block else 0)
    tol = 4 * TOL.get(dt.name, 0)
    for seed in (1, 2):
        kernels = check(_all_kinds(dt, axis), [gc.TensorSpec(list(shape), dt)],
                        [_data(dt, shape, seed)], rtol=tol, atol=tol)
    for k in kernels:
        names = [name for name, _, _ in k.last.launches]
        n = len(k.last.body.reductions)
        assert names == (["one_block"] if one_block else
                         [f"partials_{j}" for j in range(n)] + ["final"])


@pytest.mark.parametrize("one_block", [True, False])
def test_layernorm_long_rows_in_both_forms(monkeypatch, one_block):
    """Two reductions, the second reading the first's results (rb_0)."""
    monkeypatch.setattr(lowering, "ONE_BLOCK_STEPS", 1 << 60 if one_block else 0)
    shape = (1, LONG)
    x = _data(F32, shape)
    g, b = _data(F32, shape[1:], 1), _data(F32, shape[1:], 2)
    (k,) = check(layernorm, [gc.TensorSpec(list(shape), F32), gc.TensorSpec([LONG], F32),
                             gc.TensorSpec([LONG], F32)], [x, g, b], rtol=1e-4, atol=1e-5)
    names = [name for name, _, _ in k.last.launches]
    assert names == (["one_block"] if one_block else ["partials_0", "partials_1", "final"])


def test_sum_of_bools_and_all_any_of_comparisons():
    x = _data(F32, (4, 5))
    check(lambda v: gc.reduce_sum(gc.cast(v > 0, gc.int64), axis=1), [gc.TensorSpec([4, 5],
                                                                                     F32)], [x])
    check(lambda v: gc.reduce_all(v > -10, axis=0), [gc.TensorSpec([4, 5], F32)], [x])


def test_empty_reductions_follow_the_numpy_rules():
    (k,) = check(lambda v: (gc.reduce_sum(v * 2, axis=1), gc.reduce_max(v * 2, axis=1)),
                 [gc.TensorSpec([None, None], F32)], [np.ones((3, 0), np.float32)],
                 numpy_ok=True)
    assert k.last.kind is None and "numpy rules" in k.describe()


@pytest.mark.parametrize("n", [1, 3, 5, 9, 33])
def test_row_blocks_cover_short_rows_with_fewer_threads(n):
    (k,) = check(softmax, [gc.TensorSpec([2, n], F64)], [_data(F64, (2, n))], rtol=1e-13)
    assert k.last.threads == codegen.row_threads(n) <= codegen.THREADS
    assert k.last.threads >= min(n, codegen.THREADS) and k.last.kind == "row"


def test_two_pass_scratch_is_reused_by_later_calls_and_results_stay_right():
    from numba import cuda
    from cuda_kernel_helpers import groups, trace
    from graphc.kernels.cuda.lowering import lower_group
    (grp,) = groups(trace(lambda v: gc.reduce_sum(v * v, axis=0), gc.TensorSpec([6, 3], F64)))
    kern = lower_group(grp)
    for seed in range(2):
        x = _data(F64, (6, 3), seed)
        (out,) = kern([cuda.to_device(x)])
        np.testing.assert_allclose(out.copy_to_host(), (x * x).sum(axis=0), rtol=1e-14)
        bufs = dict(kern.last._scratch.bufs)
        if seed:
            assert all(bufs[j][0] is first[j][0] for j in bufs)
        first = bufs
