"""The cached call of a graph that is one compiled loop: gc.function's generated entry and
the ConcreteFunction's call inline the kernel call (kernels/cpu/loops_entry.py,
runtime/function_entry.py). Each check compares against numpy and eager on the same
inputs, asserts that compiled code ran, and covers what must fall out of the entry."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.stats import COUNTS
from graphc.runtime.function import Function

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py: compile at once
HERE = __file__
N = 32


def branchy(x):
    acc = gc.zeros([], x.dtype)
    for i in gc.range(N):
        if x[i] > 0:
            acc += x[i] ** 2
        else:
            acc -= x[i]
    return acc


def counted(n, k, flag):
    step = 2 if flag is True else 1        # True and 1 must not share a trace
    s = gc.constant(0, gc.int32)
    i = gc.constant(0, gc.int32)
    while i < n:
        s += i * k % 7
        i += step
    return s, i


def walk(x, n):
    s = gc.constant(0.0, gc.float32)
    for i in gc.range(n):
        s += x[i]  # walk-line
    return s


def _fused(f):
    """f's calls go to its entry (its class), which inlines a loop kernel (its namespace
    holds the kernel)."""
    return type(f) is f._entry and "k_fn" in f._entry.py_call.__globals__


def _warm(f, *args):
    for _ in range(3):
        f(*args)


def _values(n=N, seed=0):
    v = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    v[:4] = [-0.0, np.inf, 1e30, -1e-40]      # signed zero, inf, overflow to inf, a denormal
    return v


def _eager(fn):
    """fn run eagerly (the reference: gc.functions of any backend share the entry code)."""
    return lambda *args: fn(*[gc.constant(a) if isinstance(a, np.ndarray) else a
                              for a in args])


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)                  # a NaN's sign is the hardware's choice
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def test_the_entry_inlines_the_kernel_and_agrees(numba_forced):
    xv = _values()
    x = gc.constant(xv)
    f = gc.function(branchy, backend="numba")
    want = gc.function(branchy, backend="numpy")(x).numpy()
    _warm(f, x)
    assert _fused(f)
    cf = f.get_concrete_function(x)
    assert "k_fn" in cf._call_leaves.__globals__          # the trace's own call too
    before = COUNTS.loop_calls
    with numba_forced.expect(loops=True):
        for arg in (x, xv, gc.constant(xv.copy())):       # a tensor or an array: one trace
            got = f(arg)
            assert type(got) is gc.Tensor and type(got.numpy()) is np.float32
            _same(got.numpy(), want)
        _same(cf(x).numpy(), want)
    assert COUNTS.loop_calls - before == 4                # each call counted once
    _same(branchy(x).numpy(), want)                        # eager
    assert f.tracing_count == 1


def test_other_arguments_fall_out_of_the_entry(numba_forced):
    f = gc.function(branchy, backend="numba")
    ref = _eager(branchy)
    x = gc.constant(_values())
    _warm(f, x)
    entry = f._entry
    assert _fused(f)
    odd = np.zeros(N, np.dtype("float32", metadata={"unit": "m"}))   # equal dtype, not `is`
    cases = [_values().astype(np.float64),          # another dtype: a new trace
             _values(N + 3),                        # another shape: a new trace
             _values()[::-1],                       # not contiguous: the kernel copies it
             odd]
    for v in cases:
        with numba_forced.expect(loops=True):
            for _ in range(3):
                _same(f(v).numpy(), ref(v).numpy())
    assert f.tracing_count == 3
    with numba_forced.expect(loops=True):
        _same(f(x=x).numpy(), ref(x).numpy())        # keywords: the fingerprint path
    # the entry's checks send each of these to Function.__call__ (the fingerprint path)
    ns, sent = entry.py_call.__globals__, []
    real = ns["F_call"]
    ns["F_call"] = lambda self, *args, **kwargs: sent.append((self, args, kwargs)) or sent
    try:
        for bad in (gc.constant(_values(N + 3)), _values().astype(np.float64), [1.0] * N, 3.0):
            assert entry.__call__(f, bad) is sent and sent[-1] == (f, (bad,), {})
        assert entry.__call__(f, x, x) is sent and entry.__call__(f, x=x) is sent
    finally:
        ns["F_call"] = real
    assert len(sent) == 6


def test_python_scalars_are_checked_by_type_and_value(numba_forced):
    f = gc.function(counted, backend="numba")
    ref = _eager(counted)
    n = gc.constant(50, gc.int32)
    for k, flag in ((3, True), (3, 1), (3, True), (5, 1), (3, 1)):
        with numba_forced.expect(loops=True):
            for _ in range(3):
                got, want = f(n, k, flag), ref(n, k, flag)
                for g, w in zip(got, want):
                    _same(g.numpy(), w.numpy())
                    assert type(g.numpy()) is np.int32
        assert _fused(f)
    assert f.tracing_count == 3
    for g, w in zip(f(n, 5, 1), counted(n, 5, 1)):            # eager
        _same(g.numpy(), w.numpy())


def test_errors_inside_the_kernel_name_the_users_line(numba_forced):
    f = gc.function(walk, backend="numba")
    x = gc.constant(np.arange(8, dtype=np.float32))
    with numba_forced.expect(loops=True):
        for _ in range(3):
            assert float(f(x, gc.constant(8))) == 28.0
        assert _fused(f)
        with pytest.raises(InvalidArgumentError) as e:
            f(x, gc.constant(9))
    line = next(i for i, text in enumerate(open(HERE), 1) if text.rstrip().endswith("# walk-line"))
    msg = str(e.value)
    assert msg.endswith(f"at {HERE}:{line} in walk") and "op getitem '" in msg, msg
    assert e.value.__cause__ is not None
    assert float(f(x, gc.constant(4))) == 6.0 and _fused(f)     # the entry stays


def test_eager_mode_and_traces_inside_other_traces_skip_the_entry(numba_forced):
    seen = []

    def body(x):
        seen.append(1)
        return branchy(x)
    f = gc.function(body, backend="numba")
    x = gc.constant(_values())
    _warm(f, x)
    assert _fused(f) and len(seen) == 1
    gc.config.run_functions_eagerly(True)
    try:
        _same(f(x).numpy(), branchy(x).numpy())
        assert len(seen) == 2
    finally:
        gc.config.run_functions_eagerly(False)
    outer = gc.function(lambda t: f(t) + 1.0, backend="numba")
    _same(outer(x).numpy(), branchy(x).numpy() + np.float32(1.0))
    assert len(seen) == 3                          # inlined into the outer trace


def test_a_variable_read_in_the_loop_keeps_the_plan_and_its_lock(numba_forced):
    v = gc.Variable(np.float32(2.0))

    def scaled(x):
        scale = v.read_value()
        acc = gc.constant(0.0, gc.float32)
        for i in gc.range(N):
            acc += x[i] * scale
        return acc
    f = gc.function(scaled, backend="numba")
    x = gc.constant(_values())
    _warm(f, x)
    assert f._entry is not None and not _fused(f)   # the plan reads v holding its lock
    for value in (2.0, -3.0):
        v.assign(value)
        with numba_forced.expect(loops=True):
            got = f(x).numpy()
        _same(got, scaled(x).numpy())


def test_threads_calling_the_entry_get_their_own_results(numba_forced):
    f = gc.function(branchy, backend="numba")
    ref = _eager(branchy)
    inputs = [gc.constant(_values(seed=s)) for s in range(4)] + \
             [gc.constant(_values(seed=9).astype(np.float64))]
    wants = [ref(x).numpy() for x in inputs]
    _warm(f, inputs[0])
    errors = []

    def work(i):
        try:
            for k in range(200):
                j = (i + k) % len(inputs) if k % 3 == 0 else i % len(inputs)
                _same(f(inputs[j]).numpy(), wants[j])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(5)]
    with numba_forced.expect(loops=True):
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert not errors, errors[0]
    assert f.tracing_count == 2


def test_entries_are_made_afresh_when_the_kernel_comes(numba_forced, monkeypatch):
    """Interpreted first (the loop has not cost enough yet): the entry calls the plan; once
    the kernel is installed, the trace tells the function, whose next entry inlines it."""
    monkeypatch.delenv("GRAPHC_NUMBA_MIN_SIZE")
    from graphc.kernels.cpu import loops
    monkeypatch.setattr(loops, "LOOP_COMPILE_AFTER", 1e9)
    def branchy_late(x):              # a kernel of its own (another start): none on disk yet
        acc = gc.constant(1.0, gc.float32)
        for i in gc.range(N):
            if x[i] > 0:
                acc += x[i] ** 2
            else:
                acc -= x[i]
        return acc
    f = Function(branchy_late, backend="numba")
    x = gc.constant(_values())
    with numba_forced.none("the loop is interpreted until it has cost enough"):
        _warm(f, x)
    assert f._entry is not None and not _fused(f)
    monkeypatch.setattr(loops, "LOOP_COMPILE_AFTER", 0.0)
    with numba_forced.expect(loops=True):
        _warm(f, x)
    assert _fused(f)
    _same(f(x).numpy(), branchy_late(x).numpy())


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float32, N, elements=st.floats(width=32, allow_nan=True)))
def test_any_float32_values_agree_with_eager(values):
    with np.errstate(all="ignore"):
        want = branchy(gc.constant(values)).numpy()
        got = [_BRANCHY(values).numpy() for _ in range(3)]
    for g in got:
        _same(g, want)
    assert _fused(_BRANCHY)


_BRANCHY = gc.function(branchy, backend="numba")


def test_a_kernel_compiled_in_the_background_joins_the_entry(numba_forced, monkeypatch,
                                                            tmp_path):
    """Background tier: calls interpret the loop while its kernel compiles (held on the
    gate), through an entry that calls the plan; once installed, the entry inlines it."""
    from graphc.kernels import tiers
    monkeypatch.setenv("GRAPHC_COMPILE", "background")
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path / "cache"))
    gate = threading.Event()
    monkeypatch.setitem(tiers.GATE, "event", gate)
    try:
        f = gc.function(branchy, backend="numba")
        x = gc.constant(_values())
        want = branchy(x).numpy()
        with numba_forced.none("the compile thread is held: the loop is interpreted"):
            for _ in range(3):
                _same(f(x).numpy(), want)
        assert f._entry is not None and not _fused(f)
        gate.set()
        tiers.wait_all(120)
        with numba_forced.expect(loops=True):
            for _ in range(3):
                _same(f(x).numpy(), want)
        assert _fused(f)
    finally:
        gate.set()
        tiers.wait_all(120)


def weighted(x):
    w = gc.constant(np.linspace(-1.0, 1.0, N).astype(np.float32))   # a constant the loop reads
    acc = gc.zeros([], x.dtype)
    for i in gc.range(N):
        acc += x[i] * w[i]
    return acc


def test_constants_feeding_the_loop_are_bound_in_the_entry(numba_forced):
    f = gc.function(weighted, backend="numba")
    x = gc.constant(_values())
    with numba_forced.expect(loops=True):
        _warm(f, x)
        got = f(x).numpy()
    assert _fused(f)
    assert any(k.startswith("k_c") for k in f._entry.py_call.__globals__)
    np.testing.assert_allclose(got, weighted(x).numpy(), rtol=2e-6)
