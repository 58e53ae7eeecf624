"""Fused kernels on inputs in any memory layout: transposed, sliced, reversed, broadcast
views and mixes of them give the numpy backend's values, and reach the kernel the way
groups.how_called says (flat over F-ordered memory, or C-contiguous copies), never as a
strided overload of the kernel."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.kernels.cpu import groups
from agreement_helpers import TOL

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py


def chain(x, y):
    return gc.tanh(gc.sin(x) * 2.0 + gc.exp(-y)) * x


def row_softmax(x, y):
    z = x * y
    e = gc.exp(z - gc.reduce_max(z, axis=-1, keepdims=True))
    return e / gc.reduce_sum(e, axis=-1, keepdims=True)


def _view(base, how):
    """`base` (C-contiguous, 2-d) seen through a view of the same shape and values' kind."""
    if how == "C":
        return base
    if how == "F":
        return np.asfortranarray(base)
    if how == "T":                  # a transposed C array of the transposed shape: F memory
        return np.ascontiguousarray(base.T).T
    if how == "sliced":
        wide = np.repeat(base, 2, axis=1)
        return wide[:, ::2]
    if how == "reversed":
        return np.ascontiguousarray(base[::-1, ::-1])[::-1, ::-1]
    if how == "broadcast":          # zero strides: every row the first one
        return np.broadcast_to(base[:1], base.shape)
    raise AssertionError(how)


LAYOUTS = ["C", "F", "T", "sliced", "reversed", "broadcast"]


def _runners(f, *args):
    plan = f.get_concrete_function(*args).graph._numba_plan
    assert plan.groups, "nothing was fused"
    return plan.groups


def _check(fn, x, y, dtype):
    ref = gc.function(fn, backend="numpy")(x, y).numpy()
    fast = gc.function(fn, backend="numba")
    from graphc.kernels.stats import COUNTS
    before = COUNTS.kernel_calls
    got = np.asarray(fast(x, y))       # the result's own memory (.numpy() copies to C)
    assert COUNTS.kernel_calls > before, "no fused kernel ran"
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, equal_nan=True, **TOL[dtype])
    return fast, got


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lx=st.sampled_from(LAYOUTS), ly=st.sampled_from(LAYOUTS),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16),
       fn=st.sampled_from([chain, row_softmax]))
def test_any_layout_agrees_with_the_numpy_backend(lx, ly, dtype, seed, fn):
    rng = np.random.default_rng(seed)
    x = _view(rng.standard_normal((6, 9)).astype(dtype), lx)
    y = _view(rng.standard_normal((6, 9)).astype(dtype), ly)
    x_before, y_before = x.copy(), y.copy()
    fast, _ = _check(fn, x, y, dtype)
    np.testing.assert_array_equal(x, x_before)      # inputs untouched (copies are ours)
    np.testing.assert_array_equal(y, y_before)
    for runner in _runners(fast, x, y):
        for lay in runner.layouts.values():
            assert all(h in (groups.FLAT, groups.FLAT_F, groups.ND) or groups.is_copied(h)
                       for h in lay.calls)
        for kern in runner.used.values():          # one C-contiguous overload per kernel
            for sig in kern.serial.overloads:
                arrays = [t for t in sig if hasattr(t, "layout")]
                assert all(t.layout == "C" for t in arrays), sig


def test_f_ordered_inputs_run_flat_and_give_f_ordered_results():
    """As numpy's ufuncs do: F-ordered inputs make an F-ordered result (no copy either way)."""
    rng = np.random.default_rng(1)
    x = np.asfortranarray(rng.standard_normal((40, 30)).astype(np.float32))
    y = np.asfortranarray(rng.standard_normal((40, 30)).astype(np.float32))
    fast, got = _check(chain, x, y, "float32")
    assert got.flags.f_contiguous and not got.flags.c_contiguous
    (runner,) = _runners(fast, x, y)
    (lay,) = runner.layouts.values()
    assert list(lay.calls) == [groups.FLAT_F]
    assert not runner.decisions or all("copied" not in k[1] for k in runner.decisions)


def test_strided_calls_after_contiguous_ones_copy_and_decide_apart():
    """A group keeps one decision per layout class: calls on copies are measured apart from
    calls on contiguous arrays (the copy costs), and a strided call after contiguous ones
    (whose steady call is cached) is still routed to the copying path."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 16)).astype(np.float64)
    y = rng.standard_normal((8, 16)).astype(np.float64)
    fast, _ = _check(row_softmax, x, y, "float64")
    wide = np.repeat(x, 3, axis=1)[:, ::3]
    _check(row_softmax, wide, y, "float64")
    got = fast(wide, y).numpy()
    ref = gc.function(row_softmax, backend="numpy")(wide, y).numpy()
    np.testing.assert_allclose(got, ref, **TOL["float64"])
    runner = [r for r in _runners(fast, x, y) if r.group.rank == 2][0]
    (lay,) = runner.layouts.values()
    assert set(lay.calls) == {groups.ND, groups.ND_COPY + ":AC"}
    assert {k[1] for k in runner.decisions} == {"8x16", "8x16/nd-copied:AC"}


def test_how_called_names_each_layout():
    class Lay:
        flat_spec = object()
    flat, nd = Lay(), type("Nd", (), {"flat_spec": None})()
    c = np.zeros((3, 4))
    f = np.asfortranarray(c)
    s = np.zeros((3, 8))[:, ::2]
    zero_d = np.zeros(())
    assert groups.how_called(flat, [c, zero_d]) == groups.FLAT
    assert groups.how_called(flat, [f, zero_d]) == groups.FLAT_F
    assert groups.how_called(flat, [c, f]) == groups.FLAT_COPY + ":CF"
    assert groups.how_called(flat, [s]) == groups.FLAT_COPY + ":A"
    assert groups.how_called(nd, [c]) == groups.ND
    assert groups.how_called(nd, [f]) == groups.ND_COPY + ":F"
    assert groups.how_called(nd, [c, s]) == groups.ND_COPY + ":CA"
