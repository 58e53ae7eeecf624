"""gc.function's native entry (runtime/native_entry.py): after GRAPHC_NATIVE_ENTRY calls the
hot entry's checks, and a one-loop graph's kernel call and result, run as machine code.
Every check compares with eager on the same inputs, asserts that the native code itself
ran (its own counter, or no Python entry frame), and covers what it must hand back to the
Python entry: other dtypes, shapes, layouts, keywords, arity, traces, eager mode."""
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels import stats
from graphc.runtime import native_entry, native_layout

from concurrency import run_together
from test_loop_call_entry import HERE, N, branchy, counted, walk, weighted

pytestmark = [pytest.mark.usefixtures("kernel_env"),
              pytest.mark.skipif(native_layout._probe() is None or not native_layout._supported(),
                                 reason="no native entries on this interpreter")]


@pytest.fixture(autouse=True)
def native_after_two(monkeypatch):
    monkeypatch.setenv("GRAPHC_NATIVE_ENTRY", "2")


def _native(f):
    return type(f) is f._entry and type(type(f).__dict__["__call__"]).__name__ == \
        "method_descriptor"


def _warm(f, *args):
    for _ in range(4):
        f(*args)
    assert _native(f), "the native entry was not installed"


def _values(n=N, seed=0, dtype=np.float32):
    v = np.random.default_rng(seed).standard_normal(n).astype(dtype)
    v[:4] = [-0.0, np.inf, 1e30, -1e-40]
    return v


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


class _Frames:
    """Names of the generated entry's Python functions entered while active (the native
    path enters none but `body`, the Python body it calls for a trace that is no loop)."""

    def __enter__(self):
        self.names = []
        sys.setprofile(lambda frame, event, arg: event == "call" and
                       frame.f_code.co_filename.startswith("<graphc entry") and
                       self.names.append(frame.f_code.co_name))
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)


def test_the_loop_runs_from_machine_code_and_agrees(numba_forced):
    f = gc.function(branchy, backend="numba")
    v = _values()
    x = gc.constant(v)
    _warm(f, x)
    want = branchy(x).numpy()
    native0, py0 = stats._NATIVE[1], stats.COUNTS._loop_calls
    with numba_forced.expect(loops=True), _Frames() as seen:
        for arg in (x, v, gc.constant(v.copy())):
            got = f(arg)
            assert type(got) is gc.Tensor and type(got.numpy()) is np.float32
            _same(got.numpy(), want)
    assert stats._NATIVE[1] - native0 == 3 and stats.COUNTS._loop_calls == py0
    assert "__call__" not in seen.names


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_each_dtype_agrees_with_eager(numba_forced, dtype):
    f = gc.function(branchy, backend="numba")
    with np.errstate(all="ignore"):
        v = _values(dtype=dtype) if np.dtype(dtype).kind == "f" else \
            np.random.default_rng(1).integers(-2**20, 2**20, N).astype(dtype) * 3000
        want = branchy(gc.constant(v)).numpy()
        _warm(f, v)
        native0 = stats._NATIVE[1]
        with numba_forced.expect(loops=True):
            got = f(v)
    assert stats._NATIVE[1] == native0 + 1
    assert type(got.numpy()) is np.dtype(dtype).type
    _same(got.numpy(), want)


def test_calls_it_cannot_take_get_the_python_entrys_answer(numba_forced):
    f = gc.function(branchy, backend="numba")
    base = _values()
    _warm(f, base)
    readonly = base.copy()
    readonly.flags.writeable = False
    raw = np.zeros(base.nbytes + 1, np.uint8)[1:]
    unaligned = raw.view(np.float32)
    unaligned[...] = base
    # the last two are new traces: the function's entry is then theirs
    cases = [readonly, np.repeat(base, 2)[::2], unaligned, gc.constant(np.float32(2.0) * base),
             base.astype(np.float64), _values(N + 3)]
    for arg in cases:
        native0 = stats._NATIVE[1]
        with numba_forced.expect(loops=True):
            got = f(arg).numpy()
        _same(got, branchy(gc.constant(np.ascontiguousarray(arg))).numpy())
        behaved = type(arg) is gc.Tensor
        assert stats._NATIVE[1] - native0 == behaved, arg
    _warm(f, base)
    _same(f(x=base).numpy(), branchy(gc.constant(base)).numpy())
    with pytest.raises(TypeError):
        f(base, base)
    with pytest.raises(TypeError):
        f()
    assert _native(f)


def test_scalars_ints_and_python_values(numba_forced):
    n, k = gc.constant(50, gc.int32), gc.constant(3, gc.int32)

    def some(n, k, flag, tag):
        return counted(n, k, flag)[0] + (1 if tag == "one" else 0)

    f = gc.function(some, backend="numba")
    _warm(f, n, k, True, "one")        # Python values in the signature: checked natively
    with _Frames() as seen:
        got = f(n, k, True, "one")
    assert "__call__" not in seen.names and got.numpy() == some(n, k, True, "one").numpy()
    for flag, tag in ((False, "one"), (1, "one"), (True, "two"), (True, b"one")):
        _warm(f, n, k, True, "one")
        with _Frames() as seen:
            got = f(n, k, flag, tag)
        assert "__call__" in seen.names, (flag, tag)           # handed to the Python entry
        assert got.numpy() == some(n, k, flag, tag).numpy()
    h = gc.function(lambda n, k, flag: counted(n, k, flag)[0], backend="numba")
    _warm(h, n, k, True)                # a one-loop graph with a Python value: the kernel
    native0 = stats._NATIVE[1]
    assert h(n, k, True).numpy() == counted(n, k, True)[0].numpy()
    assert stats._NATIVE[1] == native0 + 1
    g = gc.function(lambda n, k: counted(n, k, False)[0], backend="numba")
    _warm(g, n, k)
    for a, b in ((n, k), (np.array(40, np.int32), k), (np.int32(7), np.int32(5))):
        want = counted(gc.constant(a), gc.constant(b), False)[0].numpy()
        with numba_forced.expect(loops=True):
            got = g(a, b).numpy()
        assert type(got) is np.int32 and got == want


def test_errors_inside_the_kernel_name_the_users_line(numba_forced):
    f = gc.function(walk, backend="numba")
    x = gc.constant(np.arange(8, dtype=np.float32))
    _warm(f, x, gc.constant(8))
    native0 = stats._NATIVE[1]
    with pytest.raises(InvalidArgumentError) as e:
        f(x, gc.constant(9))
    assert stats._NATIVE[1] == native0 + 1             # the native entry ran the kernel
    line = next(i for i, text in enumerate(open(HERE), 1) if text.rstrip().endswith("# walk-line"))
    assert str(e.value).endswith(f"at {HERE}:{line} in walk"), str(e.value)
    assert float(f(x, gc.constant(4))) == 6.0 and _native(f)


def test_constants_feeding_the_loop(numba_forced):
    f = gc.function(weighted, backend="numba")
    x = gc.constant(_values())
    _warm(f, x)
    native0 = stats._NATIVE[1]
    got = f(x).numpy()
    assert stats._NATIVE[1] == native0 + 1
    np.testing.assert_allclose(got, weighted(x).numpy(), rtol=2e-6)


def test_traces_eager_mode_and_threads(numba_forced):
    f = gc.function(branchy, backend="numba")
    v = _values()
    _warm(f, v)
    want = branchy(gc.constant(v)).numpy()

    @gc.function(backend="numba")
    def outer(x):
        return f(x) * 2.0                  # traced: the entry must not run the kernel

    _same(outer(v).numpy(), want * np.float32(2.0))
    gc.config.run_functions_eagerly(True)
    try:
        _same(f(v).numpy(), want)
    finally:
        gc.config.run_functions_eagerly(False)
    inputs = [_values(seed=s) for s in range(8)]
    wants = [branchy(gc.constant(a)).numpy() for a in inputs]

    def work(i):
        for _ in range(200):
            _same(f(inputs[i]).numpy(), wants[i])
    run_together(8, work)


def test_no_references_leak(numba_forced):
    f = gc.function(branchy, backend="numba")
    v = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    x = gc.constant(v)
    _warm(f, x)
    for _ in range(100):
        f(x)
    counts = sys.getrefcount(x), sys.getrefcount(v), sys.getrefcount(x._np)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20000):
            r = f(x)
            f(v)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # counted outside `assert`: pytest's rewriting keeps its operands alive
    result = sys.getrefcount(r), sys.getrefcount(r._np)
    after = sys.getrefcount(x), sys.getrefcount(v), sys.getrefcount(x._np)
    assert result == (2, 2) and after == counts
    assert grown < 20000, grown                # 40,000 results made and freed


def test_a_generic_body_is_called_with_the_checked_leaves(numba_forced):
    def fn(x, y):
        return gc.tanh(x) * y + 1.0

    f = gc.function(fn, backend="numba")
    a, b = _values(), _values(seed=1)
    _warm(f, a, b)
    with _Frames() as seen:
        got = f(a, b)
    assert "body" in seen.names and "__call__" not in seen.names
    ref = gc.function(fn, backend="numba")      # the same kernel, through the trace path
    _same(got.numpy(), ref(a, b).numpy())
    with _Frames() as seen:
        got = f(a[1:], b[1:])                   # another shape: the Python entry's miss
    assert "__call__" in seen.names
    _same(got.numpy(), ref(a[1:], b[1:]).numpy())


def test_a_busy_compiler_defers_the_native_entry_to_a_thread(numba_forced, monkeypatch):
    from numba.core.compiler_lock import global_compiler_lock
    monkeypatch.setenv("GRAPHC_NATIVE_ENTRY", "4")
    f = gc.function(branchy, backend="numba")
    v = _values()
    want = branchy(gc.constant(v)).numpy()
    for _ in range(2):
        f(v)                                # traced, compiled, its entry made
    held, release = threading.Event(), threading.Event()

    def hold():
        with global_compiler_lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(30)
    try:
        for _ in range(6):
            _same(f(v).numpy(), want)       # the Python entry answers meanwhile
        assert type(f) is f._entry and not _native(f)
    finally:
        release.set()
        t.join()
    for _ in range(200):
        if _native(f):
            break
        threading.Event().wait(0.05)
    assert _native(f)
    _same(f(v).numpy(), want)


def test_off_when_asked(numba_forced, monkeypatch):
    monkeypatch.setenv("GRAPHC_NATIVE_ENTRY", "0")
    f = gc.function(branchy, backend="numba")
    for _ in range(5):
        f(_values())
    assert type(f) is f._entry and not _native(f)


def test_the_probed_layout_reads_live_objects():
    lay = native_layout._probe()
    assert lay.slots["_np"] != lay.slots["_sym"]
    a = np.zeros((3, 4), np.float32)
    assert native_entry._MethodDef is not None and lay.array_nd > lay.ob_type
    import ctypes
    assert ctypes.c_int.from_address(id(a) + lay.array_nd).value == 2
