"""gc.while_loop: eager vs traced vs plain Python, loop-var nests, invariants, errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.runtime import nest
from cf_helpers import Pair, both, function, small_floats


def _collatz(n):
    def body(i, n):
        return i + 1, gc.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1)
    return gc.while_loop(lambda i, n: n > 1, body, [0, n])


def _collatz_python(n):
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 200))
def test_while_with_nested_cond_matches_python(n):
    for steps, last in both(_collatz, n):
        assert int(steps) == _collatz_python(n) and int(last) == 1


def test_loop_vars_keep_their_nest_structure():
    def run(x):
        state = ({"a": x, "b": (x * 0.0, [gc.constant(0)])}, Pair(gc.constant(1), x))

        def body(d, p):
            return ({"a": d["a"] + 1.0, "b": (d["b"][0] + d["a"], [d["b"][1][0] + 1])},
                    Pair(p.a * 2, p.b))
        return gc.while_loop(lambda d, p: d["b"][1][0] < 4, body, state)

    for d, p in both(run, np.float32(1.0)):
        assert isinstance(d, dict) and isinstance(d["b"], tuple) and isinstance(d["b"][1], list)
        assert type(p) is Pair
        assert float(d["a"]) == 5.0 and float(d["b"][0]) == 1 + 2 + 3 + 4
        assert int(d["b"][1][0]) == 4 and int(p.a) == 16 and float(p.b) == 1.0
    p = gc.while_loop(lambda a, b: a < 3, lambda a, b: Pair(a + 1, b * 2.0),
                      Pair(0, gc.constant(1.0)))   # a namedtuple of loop vars, unpacked
    assert type(p) is Pair and p.a == 3 and float(p.b) == 8.0


def test_single_loop_var_forms():
    def single(x):
        return gc.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, x)

    def one_list(x):   # loop_vars holds one list; the body may return that list bare
        return gc.while_loop(lambda l: l[0] < 5.0, lambda l: [l[0] + 1.0, l[1] * 2.0], [[x, x]])

    for r in both(single, np.float32(2.0)):
        assert float(r) == 162.0
    for r in both(one_list, np.float32(2.0)):
        assert isinstance(r, list) and isinstance(r[0], list)
        assert [float(v) for v in r[0]] == [5.0, 16.0]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 8), st.integers(0, 8))
def test_maximum_iterations(limit, stop):
    def run(limit_t):
        outs = []
        for m in (limit, limit_t):   # a Python int and a (possibly symbolic) tensor
            outs.append(gc.while_loop(lambda i, s: i < stop, lambda i, s: (i + 1, s + i),
                                      [0, 0], maximum_iterations=m))
        return outs

    n = min(limit, stop)
    for outs in both(run, limit):
        for i, s in outs:
            assert int(i) == n and int(s) == n * (n - 1) // 2
    eager = gc.while_loop(lambda i: True, lambda i: i + 1, [gc.constant(0)],
                          maximum_iterations=gc.constant(limit, gc.int64))
    assert int(eager[0]) == limit
    with pytest.raises(TypeError, match="maximum_iterations must be an int"):
        gc.while_loop(lambda i: True, lambda i: i + 1, [0], maximum_iterations=1.5)


def test_shape_invariants_let_a_dimension_grow():
    def run(x):
        grown = gc.while_loop(lambda v: gc.shape(v)[0] < 8, lambda v: gc.concat([v, v * 2.0], 0),
                              [x], shape_invariants=[[None]])
        free = gc.while_loop(lambda v: gc.size(v) < 4, lambda v: gc.concat([v, v], 0),
                             (x,), shape_invariants=(None,))   # None: every dim may vary
        return grown[0], free[0]

    want = np.array([1.0], np.float32)
    while len(want) < 8:
        want = np.concatenate([want, want * 2])
    for grown, free in both(run, np.array([1.0], np.float32)):
        np.testing.assert_array_equal(grown.numpy(), want)
        assert free.shape == (4,)
    cf = function(run).get_concrete_function(np.array([1.0], np.float32))
    assert [o.shape for o in cf.outputs] == [(None,), (None,)]


def test_shape_invariant_errors():
    x = gc.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"invariant \[3\] for 'loop_vars\[0\]' does not fit "
                                         r"its initial shape \[2\]"):
        function(lambda x: gc.while_loop(lambda v: False, lambda v: v, [x],
                                         shape_invariants=[[3]]))(x)
    with pytest.raises(ValueError, match="does not nest like loop_vars"):
        gc.while_loop(lambda a, b: False, lambda a, b: (a, b), [x, x],
                      shape_invariants=[[None]])
    with pytest.raises(TypeError, match="shape invariant must be a list of ints"):
        gc.while_loop(lambda v: False, lambda v: v, [x], shape_invariants=["abc"])


@pytest.mark.parametrize("eager", [True, False])
def test_loop_var_changing_dtype_or_shape_is_named(eager):
    def run(fn):
        return fn if eager else function(fn)

    with pytest.raises(ValueError, match=r"loop variable 'loop_vars\[1\]' enters the loop as "
                                         r"int32\[\] but the body makes it float32\[\].*cast"):
        run(lambda n: gc.while_loop(lambda i, s: i < n,
                                    lambda i, s: (i + 1, gc.cast(s, gc.float32)), [0, 0]))(
            gc.constant(3))
    with pytest.raises(ValueError, match=r"'acc' has shape \[1\] on entry but \[2\] after.*"
                                         r"shape_invariants with None .*\[None\]"):
        run(lambda x: gc.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, gc.concat([v, v], 0)),
                                    [0, x], _names=["i", "acc"]))(gc.constant([1.0]))
    with pytest.raises(ValueError, match=r"body returned tuple\(value\) but the loop vars are "
                                         r"list\(value, value\)"):
        run(lambda x: gc.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1,), [0, x]))(
            gc.constant(1.0))
    with pytest.raises(TypeError, match=r"cond must return a scalar bool, got int32\[\]"):
        run(lambda x: gc.while_loop(lambda i: i, lambda i: i - 1, [x]))(gc.constant(3))


def test_while_inside_cond_and_cond_inside_while():
    def run(x, n):
        def count_up():
            return gc.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + x), [0, x * 0.0])[1]
        return gc.cond(n > 2, count_up, lambda: -x)

    for n in (1, 2, 3, 5):
        for r in both(run, np.float32(1.5), n):
            assert float(r) == (1.5 * n if n > 2 else -1.5)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 5), st.integers(0, 5), small_floats)
def test_while_in_while_captures_outer_vars_and_closures(n, m, scale):
    offset = gc.constant(np.float32(0.5))   # an eager tensor closed over by the inner body

    def run(x, n, m):
        def outer_body(i, total):
            def inner_body(j, t):   # uses the outer loop var i and closed-over tensors
                return j + 1, t + x * gc.cast(i * j, gc.float32) + offset
            _, t = gc.while_loop(lambda j, t: j < m, inner_body, [0, total])
            return i + 1, t
        return gc.while_loop(lambda i, total: i < n, outer_body, [0, x * 0.0])[1]

    s = np.float32(scale)
    want = np.float32(0.0)
    for i in range(n):
        for j in range(m):
            want = want + s * np.float32(i * j) + np.float32(0.5)
    for r in both(run, s, n, m):
        np.testing.assert_allclose(float(r), want, rtol=1e-5, atol=1e-4)


def test_loop_var_conversions():
    v = gc.Variable(3.0)

    def run(x):
        grown = gc.while_loop(lambda a: a < 100.0, lambda a: a * v, [v])   # a Variable's value
        # a Python number from the body takes the loop var's dtype (float64 here)
        _, zeroed = gc.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, 0), [0, x])
        return grown[0], zeroed

    for grown, zeroed in both(run, np.float64(2.0)):
        assert float(grown) == 243.0
        assert zeroed.dtype is gc.float64 and float(zeroed) == 0.0
    assert float(v.read_value()) == 3.0


def test_names_may_be_given_per_top_level_var():
    with pytest.raises(ValueError, match=r"loop variable 'b\[1\]' enters the loop as float32"):
        gc.while_loop(lambda a, b: True,
                      lambda a, b: (a, (b[0], gc.cast(b[1], gc.float64))),
                      [gc.constant(1), (gc.constant(1.0), gc.constant(2.0))], _names=["a", "b"])


def test_numba_backend_agrees_with_the_interpreter(numba_forced):
    pytest.importorskip("graphc.kernels.cpu.backend")   # registers the "numba" backend

    def ta_loop(x, n):
        ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True, element_shape=[2])

        def body(i, acc, ta):
            acc = acc * 0.5 + x
            return i + 1, acc, ta.write(i, acc)
        return gc.while_loop(lambda i, acc, ta: i < n, body, [0, gc.zeros([2]), ta],
                             maximum_iterations=3)[2].stack()

    def nested(x, n):
        return gc.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, gc.while_loop(
            lambda j, u: j < i, lambda j, u: (j + 1, u + x * gc.cast(j, gc.float32)),
            [0, t])[1]), [0, x * 0.0])[1]

    # what numba compiles of each (kernels forced): the loop, or nothing (and why)
    cases = ((_collatz, (gc.constant(27),), "loop"),
             (ta_loop, (gc.constant([1.0, 2.0]), gc.constant(5)),
              "a loop holding a TensorArray is interpreted, and loop bodies are not fused"),
             (nested, (gc.constant(1.5), gc.constant(4)), "loop"))
    for fn, args, compiled in cases:
        want = gc.function(fn, backend="numpy", autograph=False)(*args)
        fast = gc.function(fn, backend="numba", autograph=False)
        with numba_forced.expect(loops=True) if compiled == "loop" else \
                numba_forced.none(compiled):
            got = fast(*args)
        for w, g in zip(nest.flatten(want), nest.flatten(got), strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_variable_arguments_are_written_inside_loops_and_branches():
    @function
    def f(v, n):
        def body(i):
            v.assign_add(gc.cast(i, gc.float32))
            return i + 1
        gc.while_loop(lambda i: i < n, body, [0])
        return gc.cond(v > 5.0, lambda: v * 1.0, lambda: -v)

    a, b = gc.Variable(0.0), gc.Variable(10.0)
    assert float(f(a, gc.constant(3))) == -3.0      # a: 0 + 0 + 1 + 2
    assert float(f(b, gc.constant(3))) == 13.0
    assert float(f(a, gc.constant(3))) == 6.0
    assert f.tracing_count == 1 and float(a.numpy()) == 6.0 and float(b.numpy()) == 13.0


@pytest.mark.parametrize("traced", [False, True])
def test_tf_keywords_parallel_iterations_swap_memory_back_prop(traced):
    def grads(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            body = lambda i, y: (i + 1, y * x)          # noqa: E731
            a = gc.while_loop(lambda i, y: i < 3, body, [0, x], parallel_iterations=1,
                              swap_memory=True)[1]
            b = gc.while_loop(lambda i, y: i < 3, body, [0, x], back_prop=False)[1]
            c = b + x
        return a, b, tape.gradient(a, x), tape.gradient(c, x)
    run = gc.function(grads) if traced else grads
    a, b, da, db = run(gc.constant(2.0))
    assert float(a) == float(b) == 16.0
    assert float(da) == 32.0            # d(x^4)/dx
    assert float(db) == 1.0             # back_prop=False: only the `+ x` term
