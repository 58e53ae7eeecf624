"""gc.function's hot entry calls a one-loop graph's kernel through the compiled overload's
entry point, without numba's dispatch (kernels/cpu/loops_entry.direct_call), when the
arrays are as numba would type them for that overload (C-contiguous, aligned, writable);
every other array goes through the dispatcher. Spies on both calls say which one ran."""
import numpy as np
import pytest

import graphc as gc
from graphc.runtime import context

from test_loop_call_entry import N, branchy  # the same one-loop program

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py: compile at once


@pytest.fixture(autouse=True)
def python_entries(monkeypatch):
    """The spies sit in the Python entry: no native entry takes the calls here
    (tests/kernels/test_native_entry.py tests those)."""
    monkeypatch.setenv("GRAPHC_NATIVE_ENTRY", "0")


def counted(n, k):
    s = gc.constant(0, gc.int32)
    i = gc.constant(0, gc.int32)
    while i < n:
        s += i * k % 7
        i += 1
    return s


def _values(n=N, seed=0, dtype=np.float32):
    v = np.random.default_rng(seed).standard_normal(n).astype(dtype)
    v[:4] = [-0.0, np.inf, 1e30, -1e-40]
    return v


def _spy(f):
    """Wrap the entry's kernel calls: returns the list of 'ep' / 'dispatch' calls made."""
    ns = type(f).py_call.__globals__
    assert type(f) is f._entry and "k_ep" in ns, "the entry does not call the entry point"
    calls, ep, fn = [], ns["k_ep"], ns["k_fn"]
    ns["k_ep"] = lambda *a: calls.append("ep") or ep(*a)
    ns["k_fn"] = lambda *a: calls.append("dispatch") or fn(*a)
    return calls


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def _unaligned(v):
    raw = np.zeros(v.nbytes + 1, np.uint8)[1:]
    out = raw.view(v.dtype)
    out[...] = v
    assert not out.flags.aligned
    return out


def test_behaved_arrays_take_the_entry_point_and_others_the_dispatcher(numba_forced):
    f = gc.function(branchy, backend="numba")
    base = _values()
    x = gc.constant(base)
    for _ in range(3):
        f(x)
    calls = _spy(f)
    readonly = base.copy()
    readonly.flags.writeable = False
    strided = np.repeat(base, 2)[::2]           # same dtype and shape, not contiguous
    cases = [(x, "ep"), (base, "ep"), (gc.constant(base.copy()), "ep"),
             (readonly, "dispatch"), (strided, "dispatch"), (_unaligned(base), "dispatch")]
    want = branchy(x).numpy()
    with numba_forced.expect(loops=True):
        for arg, path in cases:
            del calls[:]
            got = f(arg)
            assert calls == [path], (arg, calls)
            assert type(got) is gc.Tensor and type(got.numpy()) is np.float32
            _same(got.numpy(), want)
    assert f.tracing_count == 1


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_each_dtype_agrees_with_eager_through_the_entry_point(numba_forced, dtype):
    f = gc.function(branchy, backend="numba")
    with np.errstate(all="ignore"):
        if np.dtype(dtype).kind == "f":
            v = _values(dtype=dtype)
        else:                   # squares that wrap around, as numpy's do
            v = np.random.default_rng(1).integers(-2**20, 2**20, N).astype(dtype) * 3000
        want = branchy(gc.constant(v)).numpy()
        for _ in range(3):
            f(v)
        calls = _spy(f)
        with numba_forced.expect(loops=True):
            _same(f(v).numpy(), want)
            _same(f(gc.constant(v)).numpy(), want)
    assert calls == ["ep", "ep"]


def test_scalar_arguments_go_in_as_numpy_scalars(numba_forced):
    f = gc.function(counted, backend="numba")
    n, k = gc.constant(50, gc.int32), gc.constant(3, gc.int32)
    for _ in range(3):
        f(n, k)
    calls = _spy(f)
    for a, b in ((n, k), (np.int32(40), np.int32(5)), (np.array(7, np.int32), k)):
        with numba_forced.expect(loops=True):
            got = f(a, b)
        want = counted(gc.constant(a), gc.constant(b)).numpy()
        assert type(got.numpy()) is np.int32 and got.numpy() == want
    assert calls == ["ep", "ep"]        # a numpy scalar is no array: the general path takes it


def test_a_call_the_entry_cannot_take_gets_the_functions_own_answer(numba_forced):
    f = gc.function(counted, backend="numba")
    n = gc.constant(50, gc.int32)
    for _ in range(3):
        f(n, 3)
    assert type(f) is f._entry
    plain = gc.function(counted, backend="numba")
    for args, kwargs in (((), {}), ((n,), {}), ((n, 3, 4), {}), ((), {"n": n, "k": 3}),
                         ((n,), {"k": 3}), ((n,), {"n": n})):
        try:
            want = plain(*args, **kwargs).numpy()
        except TypeError as e:
            with pytest.raises(TypeError) as got:
                f(*args, **kwargs)
            assert str(got.value) == str(e)
        else:
            assert f(*args, **kwargs).numpy() == want
    assert f(n, 3).numpy() == counted(n, 3).numpy() and type(f) is f._entry


def test_eager_mode_is_counted_once_in_busy():
    before = context._busy[0]
    try:
        gc.config.run_functions_eagerly(True)
        gc.config.run_functions_eagerly(True)
        assert context._busy[0] == before + 1 and gc.config.functions_run_eagerly()
        gc.config.run_functions_eagerly(False)
        assert context._busy[0] == before
    finally:
        gc.config.run_functions_eagerly(False)
    gc.config.run_functions_eagerly(False)
    assert context._busy[0] == before
