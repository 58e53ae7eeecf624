"""gc.function's cached-call fast path (a fingerprint of the positional arguments) gives
exactly what the general path (signature keys) gives: the same values, the same traces,
the same retraces. Each check runs a sequence of calls through two Functions of one body:
`Function` as users get it, and `General`, whose every call takes the general path."""

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import graphc as gc
from graphc.runtime import fingerprint, function as function_mod
from graphc.runtime.function import Function

from concurrency import run_together


class General(Function):
    def __call__(self, *args, **kwargs):
        return self._call_general(args, kwargs)


class Counted(Function):
    """Counts the calls that missed the fast path."""
    general_calls = 0

    def _call_general(self, args, kwargs):
        self.general_calls += 1
        return super()._call_general(args, kwargs)

    def _call_and_learn(self, args, fp, leaves):
        self.general_calls += 1
        return super()._call_and_learn(args, fp, leaves)


def _num(v):
    """A Python value as a number (strings by length, None as 0), a tensor as float64."""
    if isinstance(v, str):
        return float(len(v))
    if v is None:
        return 0.0
    if isinstance(v, (bool, int, float)):
        return float(v)
    static = float(sum(v.shape) + 10 * len(v.shape))    # baked in: a wrong trace shows
    return gc.reduce_sum(gc.cast(v, gc.float64)) + static


def _flat(b):
    if isinstance(b, (list, tuple)):
        for x in b:
            yield from _flat(x)
    else:
        yield b


def body(a, b, c):
    """Uses every kind of argument: tensors, Python values (as structure and as numbers);
    a list and a tuple give different values, so a trace taken for the other shows."""
    total = _num(a) + (100.0 if isinstance(b, tuple) else 0.0)
    for p in _flat(b):
        total = total + _num(p)
    return {"sum": total * _num(c), "a": a}


def same(x, y):
    assert type(x) is type(y)
    if isinstance(x, dict):
        assert x.keys() == y.keys()
        for k in x:
            same(x[k], y[k])
        return
    xa, ya = x.numpy(), y.numpy()
    assert xa.dtype == ya.dtype and np.shape(xa) == np.shape(ya)
    np.testing.assert_array_equal(xa, ya)
    assert np.array_equal(np.signbit(xa), np.signbit(ya)) if xa.dtype.kind == "f" else True


def run_both(fn, calls, **options):
    """Each call through the fast-path Function and the general one: same results, same
    tracing_count after every call. Returns the fast-path Function."""
    fast, general = Counted(fn, **options), General(fn, **options)
    for args, kwargs in calls:
        got, want = fast(*args, **kwargs), general(*args, **kwargs)
        same(got, want)
        assert fast.tracing_count == general.tracing_count
    return fast


DTYPES = [np.float32, np.int64]          # few kinds, so that near-misses are frequent
SHAPES = [(), (2,), (1, 2)]
scalars = st.one_of(st.integers(0, 1), st.booleans(), st.sampled_from(["", "ab", None]),
                    st.sampled_from([0.0, -0.0, 1.0, float("nan")]))


@st.composite
def tensor_like(draw):
    dtype, shape = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(SHAPES))
    value = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) - draw(st.integers(0, 2))
    kind = draw(st.sampled_from(["tensor", "array", "variable"]))
    if kind == "tensor":
        return gc.constant(value)
    if kind == "variable":
        return gc.Variable(value)
    return value


items = st.one_of(tensor_like(), scalars)
second = st.one_of(tensor_like(), scalars, st.lists(items, max_size=2),
                   st.lists(items, max_size=2).map(tuple),
                   st.lists(st.lists(items, max_size=1), max_size=1))      # nested: general


def _near_misses():
    f32 = [gc.constant(np.float32([1, 2])), gc.constant(np.float32([[1, 2]])),
           gc.Variable(np.float32([1, 2])), np.float32([1, 2])]
    pair = [f32[0], 1]
    return f32, [0, True, None, "ab", pair, tuple(pair), [f32[1], 1], [f32[0], True]], \
        [0.0, -0.0, 1]


@settings(max_examples=150, deadline=None)
@example(*_near_misses(), [(i, j, k, False) for i in range(3) for j in range(8)
                           for k in range(3)] * 2)
@given(st.lists(tensor_like(), min_size=1, max_size=3), st.lists(second, min_size=1, max_size=3),
       st.lists(scalars, min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2),
                          st.sampled_from([False, False, False, True])),
                min_size=4, max_size=16))
def test_fast_path_gives_what_the_general_path_gives(firsts, seconds, thirds, picks):
    """Each argument drawn from its own small pool, so signatures repeat and near-misses
    (same dtype, other shape; same value, other type) meet."""
    calls = []
    for i, j, k, as_kwarg in picks:
        a, b, c = firsts[i % len(firsts)], seconds[j % len(seconds)], thirds[k % len(thirds)]
        calls.append(((a, b), {"c": c}) if as_kwarg else ((a, b, c), {}))
    with np.errstate(all="ignore"):
        run_both(body, calls, autograph=False, backend="numpy")


def test_cached_calls_take_the_fast_path_and_retrace_when_they_must():
    f = Counted(lambda x, k: x * 2 if k else x, autograph=False, backend="numpy")
    x32, x64 = gc.constant(np.float32([1, 2])), gc.constant(np.float64([1, 2]))
    f(x32, 1), f(x32, 1)
    assert (f.tracing_count, f.general_calls) == (1, 1)
    for _ in range(3):                                   # cached: no general path
        np.testing.assert_array_equal(f(x32, 1).numpy(), [2, 4])
    assert (f.tracing_count, f.general_calls) == (1, 1)
    f(np.float32([5, 6]), 1)                             # an array fits the same trace
    assert (f.tracing_count, f.general_calls) == (1, 1)
    retraces = [(x64, 1), (gc.constant(np.float32([1, 2, 3])), 1), (x32, 2), (x32, True),
                (x32, 0), (x32, 0.0), (x32, -0.0), (x32, "s"), (x32, None)]
    for n, args in enumerate(retraces, start=2):
        f(*args)
        assert f.tracing_count == n, args
        f(*args)
        assert f.tracing_count == n, args
    assert f.general_calls == 1 + len(retraces)


def test_nan_float_arguments_keep_one_trace():
    f = Counted(lambda x, s: x + s, autograph=False, backend="numpy")
    x = gc.constant(1.0)
    for _ in range(3):
        assert np.isnan(f(x, float("nan")).numpy())
    assert (f.tracing_count, f.general_calls) == (1, 1)


def test_input_signature_conversions_stay_on_the_general_path():
    """A Python list or a numpy array is converted to the spec's dtype (a new array): such
    fingerprints are marked slow; tensors of the spec take the fast path."""
    spec = [gc.TensorSpec([None], gc.float32)]
    f = run_both(lambda v: v * 2.0, [(([1.0, 2.0],), {}), (([1.0, 2.0],), {}),
                                     ((np.float32([3, 4]),), {}), ((np.float32([3, 4]),), {}),
                                     ((gc.constant([1.0]),), {}), ((gc.constant([1.0]),), {})],
                 input_signature=spec, backend="numpy", autograph=False)
    assert f.tracing_count == 1
    assert fingerprint.SLOW in f._fast.values()
    x = gc.constant([5.0, 6.0, 7.0])
    f(x)                                      # a new fingerprint: learned
    before = f.general_calls
    np.testing.assert_array_equal(f(x).numpy(), [10.0, 12.0, 14.0])
    assert f.general_calls == before and f.tracing_count == 1
    with pytest.raises(TypeError, match="dtype float64"):
        f(gc.constant(np.float64([1.0])))


def test_reduce_retracing_floats_match_the_general_path():
    """Floats that keep changing become tensors after the retrace warning; the fast path
    never keys floats for such a function, so both paths switch at the same call."""
    calls = [((gc.constant(2.0), float(s)), {}) for s in range(9)] * 2
    with pytest.warns(gc.RetracingWarning):
        f = run_both(lambda x, s: x * s, calls, reduce_retracing=True, backend="numpy",
                     autograph=False)
    assert f.tracing_count <= 7


def test_variables_as_arguments():
    def step(v, d):
        v.assign_add(d)
        return v.read_value()
    v1, v2 = gc.Variable(np.float32([1.0])), gc.Variable(np.float32([10.0]))
    f = Counted(step, backend="numpy", autograph=False)
    d = gc.constant(np.float32([1.0]))
    for v, want in [(v1, 2.0), (v1, 3.0), (v2, 11.0), (v1, 4.0), (v2, 12.0)]:
        np.testing.assert_array_equal(f(v, d).numpy(), [want])
    assert (f.tracing_count, f.general_calls) == (1, 1)
    f(gc.Variable(np.float32([[1.0]])), gc.constant(np.float32([[1.0]])))
    assert f.tracing_count == 2


def test_eager_mode_tapes_and_traces_still_run_the_python_body():
    seen = []

    def fn(x):
        seen.append(1)
        return x * x
    f = Function(fn, backend="numpy", autograph=False)
    x = gc.constant(3.0)
    f(x), f(x)
    assert len(seen) == 1
    gc.config.run_functions_eagerly(True)
    try:
        assert float(f(x)) == 9.0 and len(seen) == 2
    finally:
        gc.config.run_functions_eagerly(False)
    v = gc.Variable(3.0)
    with gc.GradientTape() as tape:
        y = f(v.read_value())
    assert float(tape.gradient(y, v)) == 6.0
    outer = gc.function(lambda t: f(t) + 1.0, backend="numpy", autograph=False)
    assert float(outer(x)) == 10.0


def test_a_full_fingerprint_table_starts_afresh(monkeypatch):
    monkeypatch.setattr(function_mod, "FAST_KEYS_MAX", 2)
    f = Counted(lambda x: x + 1, backend="numpy", autograph=False)
    xs = [gc.constant(np.zeros(n, np.int32)) for n in (1, 2, 3)]
    for _ in range(2):
        for x in xs:
            np.testing.assert_array_equal(f(x).numpy(), x.numpy() + 1)
            assert len(f._fast) <= 2
    assert f.tracing_count == 3


def test_threads_share_fingerprints_without_locks():
    f = Function(lambda x: x * 2, backend="numpy", autograph=False)
    inputs = [gc.constant(np.arange(n, dtype=np.float32)) for n in range(1, 5)]

    def work(i):
        for k in range(300):
            x = inputs[(i + k) % 4]
            np.testing.assert_array_equal(f(x).numpy(), x.numpy() * 2)
    run_together(4, work)
    assert f.tracing_count == 4


def test_numba_calls_go_straight_to_the_settled_plan(numba_forced):
    f = gc.function(lambda a, b: gc.exp(a * b) + a, backend="numba", autograph=False)
    x = gc.constant(np.float32([0.5, -1.0, 2.0]))
    with numba_forced.expect(kernels=True):
        for _ in range(3):
            np.testing.assert_allclose(f(x, x).numpy(), np.exp(x.numpy() ** 2) + x.numpy(),
                                       rtol=1e-6)
    cf = f.concrete_functions()[0]
    assert cf._call_leaves.__name__ != "first"


def _keywords(x, scale=2, *, shift=None, name="n"):
    out = x * scale
    return out if shift is None else out + shift


def test_keywords_and_defaults_bind_like_inspect():
    """Keyword arguments and defaults bind to the same canonical values (one trace for
    f(x), f(x, 2) and f(x, scale=2)), keyword-only parameters included."""
    x = gc.constant(np.int32([1, 2]))
    calls = [((x,), {}), ((x, 2), {}), ((x,), {"scale": 2}), ((), {"x": x, "scale": 2}),
             ((x,), {"shift": 1}), ((x, 3), {"shift": 1, "name": "m"}),
             ((x,), {"name": "n", "shift": None})]
    f = run_both(_keywords, calls * 2, backend="numpy", autograph=False)
    assert f.tracing_count == 3          # (scale 2), (shift 1), (scale 3, shift 1, name m)
    before = f.general_calls
    np.testing.assert_array_equal(f(x, scale=2).numpy(), [2, 4])
    np.testing.assert_array_equal(f(x=x, shift=1, scale=3, name="m").numpy(), [4, 7])
    assert f.general_calls == before


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {}, "missing a required argument: 'x'"),
    ((gc.constant(1),), {"x": gc.constant(1)}, "multiple values for argument 'x'"),
    ((gc.constant(1),), {"bogus": 1}, "unexpected keyword argument 'bogus'"),
    ((gc.constant(1), 2, 3), {}, "too many positional arguments"),
])
def test_binding_errors_name_the_function(args, kwargs, message):
    f = Function(_keywords, backend="numpy", autograph=False)
    f(gc.constant(1))
    with pytest.raises(TypeError, match=r"_keywords\(\): (got an )?" + message):
        f(*args, **kwargs)


def test_signatures_with_var_arguments_take_the_general_path():
    def total(*xs, **named):
        return sum(xs) + sum(named.values())
    x = gc.constant(1.0)
    f = run_both(total, [((x, x), {}), ((x, x), {}), ((x,), {"a": x}), ((x,), {"a": x})],
                 backend="numpy", autograph=False)
    assert f.tracing_count == 2 and not f._fast


def test_sequence_lengths_split_the_fingerprint():
    """f([x, 1], [2], 3) and f([x], 1, [2, 3]) would give the same items in the same order
    without the lengths of their lists."""
    x = gc.constant(np.float32(1.0))

    def three(p, q, r):
        shape = [len(v) if isinstance(v, list) else -1 for v in (p, q, r)]
        return gc.constant(np.float32(shape)) + p[0]
    calls = [(([x, 1], [2], 3), {}), (([x], 1, [2, 3]), {})] * 2
    f = run_both(three, calls, backend="numpy", autograph=False)
    assert f.tracing_count == 2
    np.testing.assert_array_equal(f([x], 1, [2, 3]).numpy(), [2, 0, 3])


def test_hot_entries_tell_equal_values_of_other_types_apart():
    """Each value twice (the second call makes the hot entry), then the next one, equal to
    it in Python but keyed apart: the entry must send it on, as the fingerprint does."""
    x = gc.constant(np.float32([1, 2]))
    seq = [1, True, 1, False, 0, 0.0, None, "ab", b"ab", "ab", 2, 2.0]
    calls = [((x, v), {}) for v in seq for _ in range(2)]
    f = run_both(lambda t, v: t + (1.0 if v is True else 2.0 if isinstance(v, int) else 3.0),
                 calls, backend="numpy", autograph=False)
    assert sum(e is not None for e in f._entries.values()) >= 8     # all but the floats


def test_hot_entries_take_arrays_and_tensors_and_send_other_layouts_on():
    f = Counted(lambda a, b: a * b, backend="numpy", autograph=False)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        f(a, gc.constant(a))
    entry, before = f._entry, f.general_calls
    assert entry is not None
    for x, y in [(a, a), (gc.constant(a), a), (a.T.copy().T, a)]:   # tensors, arrays, F order
        np.testing.assert_array_equal(f(x, y).numpy(), a * a)
    assert f.general_calls == before and f._entry is entry
    a64 = a.astype(np.float64)
    for x, y in [(a.T, a.T), (a64, a64), (a[:1], a[:1]), (a64, gc.constant(a64))]:
        for _ in range(2):
            np.testing.assert_array_equal(f(x, y).numpy(), np.asarray(x) * np.asarray(y))
    assert f.tracing_count == 4
