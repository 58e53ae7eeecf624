"""gc.cond (and cond/while together): eager vs traced vs Python, errors, effects, text."""
import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.runtime import nest
from cf_helpers import Pair, both, function, small_floats
from graphc.runtime.graph import walk


# -- cond ----------------------------------------------------------------------------------

def _branchy(x, y):
    return gc.cond(x > y, lambda: (x - y, {"m": x * y, "k": [x]}),
                   lambda: (y - x, {"m": x + y, "k": [y]}))


@settings(max_examples=30, deadline=None)
@given(small_floats, small_floats)
def test_cond_matches_python(x, y):
    x32, y32 = np.float32(x), np.float32(y)
    if x32 > y32:
        want = (x32 - y32, x32 * y32, x32)
    else:
        want = (y32 - x32, x32 + y32, y32)
    for diff, d in both(_branchy, x32, y32):
        assert isinstance(d, dict) and isinstance(d["k"], list)
        np.testing.assert_allclose([float(diff), float(d["m"]), float(d["k"][0])], want,
                                   rtol=1e-6)


def test_cond_on_python_bool_picks_a_branch_while_tracing():
    @function
    def f(x, flag):
        return gc.cond(flag, lambda: x + 1, lambda: x - 1)

    assert int(f(gc.constant(1), True)) == 2 and int(f(gc.constant(1), False)) == 0
    cf = f.get_concrete_function(gc.constant(1), True)
    assert "cond" not in [op.type for op in cf.graph.operations]


@pytest.mark.parametrize("pred, what", [(gc.constant(1), r"int32\[\]"),
                                        (gc.constant([True, False]), r"bool\[2\]"),
                                        (np.array([True]), r"bool\[1\]")])
def test_pred_must_be_a_scalar_bool(pred, what):
    with pytest.raises(TypeError, match=f"pred must be a scalar bool tensor, got {what}"):
        gc.cond(pred, lambda: 1, lambda: 2)

    @function
    def f(p):
        return gc.cond(p, lambda: 1, lambda: 2)

    with pytest.raises(TypeError, match=f"pred must be a scalar bool tensor, got {what}"):
        f(pred)
    with pytest.raises(TypeError, match="pred must be a bool"):
        gc.cond(1, lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="callables"):
        gc.cond(True, 1, lambda: 2)


def test_branches_with_different_shapes_give_none_dims():
    @function
    def f(x, p):
        return gc.cond(p, lambda: gc.concat([x, x], 0), lambda: x * 2.0)

    x = np.array([1.0, 2.0], np.float32)
    assert f.get_concrete_function(x, gc.constant(True)).outputs[0].shape == (None,)
    np.testing.assert_array_equal(f(x, gc.constant(True)).numpy(), [1, 2, 1, 2])
    np.testing.assert_array_equal(f(x, gc.constant(False)).numpy(), [2, 4])


def test_branch_mismatches_are_errors():
    def trace(t_fn, f_fn, **kw):
        @function
        def f(x, p):
            return gc.cond(p, lambda: t_fn(x), lambda: f_fn(x), **kw)
        return f(np.float32(1.0), gc.constant(True))

    with pytest.raises(ValueError, match=r"different structures: tuple\(value, value\) vs value"):
        trace(lambda x: (x, x), lambda x: x)
    with pytest.raises(TypeError, match=r"'output\[1\]' is float32\[\] in the true branch but "
                                        r"int32\[\] in the false"):
        trace(lambda x: (x, x), lambda x: (x, gc.constant(1)))
    with pytest.raises(TypeError, match="'total' is float32"):
        trace(lambda x: x, lambda x: gc.constant(1), _names=["total"])
    with pytest.raises(ValueError, match=r"'output\['b'\]' is None in the false branch"):
        trace(lambda x: {"a": x, "b": x}, lambda x: {"a": x, "b": None})
    with pytest.raises(ValueError, match="rank 1 in the true branch but 0 in the false"):
        trace(lambda x: gc.stack([x]), lambda x: x)


def test_python_values_in_branches():
    seen = []

    @function
    def f(x, p):
        # a Python number takes the other branch's dtype; one object from both passes through
        out, tag, nothing = gc.cond(p, lambda: (x * 2.0, "tag", None), lambda: (0, "tag", None))
        seen.append((tag, nothing))
        return out

    x = np.float64(3.0)
    out = f(x, gc.constant(True))
    assert out.dtype is gc.float64 and float(out) == 6.0 and seen == [("tag", None)]
    assert float(f(x, gc.constant(False))) == 0.0


def test_bool_variable_as_pred_is_read_on_every_call():
    flag = gc.Variable(True)

    @function
    def f(x):
        return gc.cond(flag, lambda: x + 1.0, lambda: x - 1.0)

    assert float(f(gc.constant(1.0))) == 2.0
    flag.assign(False)
    assert float(f(gc.constant(1.0))) == 0.0
    assert f.tracing_count == 1


# -- effects and captures --------------------------------------------------------------------

def test_prints_and_assigns_run_in_program_order_on_every_call(capsys):
    counter = gc.Variable(0)
    stream = io.StringIO()

    def run(n):
        def body(i):
            gc.print("iter", i)
            counter.assign_add(1)
            gc.cond(i % 2 == 0, lambda: gc.print("even", counter),
                    lambda: gc.print("odd", counter, output_stream=stream))
            return i + 1
        gc.while_loop(lambda i: i < n, body, [0])
        gc.print("done", counter)

    def expected(c, n=3):   # what plain Python would print, starting from counter == c
        out, odd = [], []
        for i in range(n):
            out.append(f"iter {i}")
            c += 1
            (out if i % 2 == 0 else odd).append(f"{'even' if i % 2 == 0 else 'odd'} {c}")
        return "".join(x + "\n" for x in out + [f"done {c}"]), "".join(x + "\n" for x in odd)

    run(gc.constant(3))
    assert (capsys.readouterr().out, stream.getvalue()) == expected(0)
    compiled = function(run)
    for start in (3, 6):
        stream.seek(0), stream.truncate()
        compiled(gc.constant(3))
        assert (capsys.readouterr().out, stream.getvalue()) == expected(start)
    assert int(counter.read_value()) == 9 and compiled.tracing_count == 1


def test_closed_over_variables_and_tensors_are_captured_not_baked_in():
    step = gc.Variable(2.0)
    base = gc.constant(10.0)

    @function
    def f(n):
        return gc.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + step),
                             [0, gc.cond(n > 0, lambda: base, lambda: -base)])[1]

    assert float(f(gc.constant(3))) == 16.0
    step.assign(5.0)
    assert float(f(gc.constant(3))) == 25.0
    assert f.tracing_count == 1
    graph = f.get_concrete_function(gc.constant(3)).graph
    assert {id(src) for _, src in graph.captures} == {id(step), id(base)}
    consts = [op.attrs["value"] for op in walk(graph) if op.type == "constant"]
    assert not any(np.asarray(c).dtype == np.float32 for c in consts)


def test_graph_text_of_nested_cond_in_while():
    @function
    def f(x):
        def body(i, s):
            return i + 1, gc.cond(s > 10.0, lambda: s - x, lambda: s * 2.0)
        return gc.while_loop(lambda i, s: i < 3, body, [0, x], _names=["i", "s"])[1]

    text = str(f.get_concrete_function(gc.constant(1.0)).graph)
    assert text == GOLDEN


GOLDEN = """\
graph f(%x: float32[]) {
  %constant_0: int32[] = constant() {value=0}
  %while_0.0: int32[], %while_0.1: float32[] = while(%constant_0, %x, %x) {n_vars=2} {
    body:(%i: int32[], %s: float32[], captured %x_0: float32[]) {
      %constant_0: int32[] = constant() {value=1}
      %add_0: int32[] = add(%i, %constant_0)
      %constant_1: float32[] = constant() {value=10.}
      %greater_0: bool[] = greater(%s, %constant_1)
      %cond_0: float32[] = cond(%greater_0, %s, %x_0) {
        false_branch:(captured %s_0: float32[], captured %unused_0: float32[]) {
          %constant_0: float32[] = constant() {value=2.}
          %multiply_0: float32[] = multiply(%s_0, %constant_0)
          return %multiply_0
        }
        true_branch:(captured %s_0: float32[], captured %x_0_0: float32[]) {
          %subtract_0: float32[] = subtract(%s_0, %x_0_0)
          return %subtract_0
        }
      }
      return %add_0, %cond_0
    }
    cond:(%i: int32[], %s: float32[], captured %unused_0: float32[]) {
      %constant_0: int32[] = constant() {value=3}
      %less_0: bool[] = less(%i, %constant_0)
      return %less_0
    }
  }
  return %while_0.1
}"""


def test_cond_in_cond_captures_from_the_outermost_graph():
    def run(x, p, q):
        return gc.cond(p, lambda: gc.cond(q, lambda: x * 2.0, lambda: x + 1.0), lambda: -x)

    for p in (True, False):
        for q in (True, False):
            want = (6.0 if q else 4.0) if p else -3.0
            for r in both(run, np.float32(3.0), p, q):
                assert float(r) == want


def test_errors_point_at_the_users_line_and_reject_empty_or_mixed_values():
    with pytest.raises(ValueError, match=r"enters the loop as int32.*\(at .*test_control_flow"
                                         r"\.py:\d+\)"):
        function(lambda n: gc.while_loop(lambda i: i < n, lambda i: gc.cast(i, gc.float32),
                                         [0]))(gc.constant(1))
    with pytest.raises(ValueError, match="loop_vars is empty"):
        gc.while_loop(lambda: False, lambda: (), [])

    @function
    def mixed(p):
        ta = gc.TensorArray(gc.float32, size=1, element_shape=[])
        return gc.cond(p, lambda: ta.write(0, 1.0), lambda: gc.constant(1.0))

    with pytest.raises(TypeError, match=r"'output' is a TensorArray \(list<float32\[\]>\) in "
                                        r"the true branch but float32\[\] in the false"):
        mixed(gc.constant(True))


def _nests():
    leaf = st.tuples(st.lists(st.integers(1, 3), max_size=2), st.integers(-5, 5)).map(
        lambda sv: np.full(sv[0], sv[1], np.float32))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3), st.tuples(inner, inner),
        st.dictionaries(st.sampled_from("xyz"), inner, min_size=1, max_size=3),
        st.builds(Pair, inner, inner)), max_leaves=6)


def _map(fn, x):
    return nest.pack_as(x, [fn(v) for v in nest.flatten(x)])


@settings(max_examples=25, deadline=None)
@given(_nests(), st.integers(0, 4), st.booleans())
def test_random_nests_through_while_and_cond(state, n, flag):
    def run(state, n, flag):
        def body(i, s):
            return i + 1, _map(lambda v: v * 2.0 + 1.0, s)
        _, out = gc.while_loop(lambda i, s: i < n, body, [0, state])
        return gc.cond(flag, lambda: out, lambda: _map(lambda v: -v, out))

    want = state
    for _ in range(n):
        want = _map(lambda v: v * np.float32(2) + np.float32(1), want)
    if not flag:
        want = _map(lambda v: -v, want)
    tensors = _map(gc.constant, state)
    for got in (run(tensors, gc.constant(n), gc.constant(flag)),
                function(run)(tensors, gc.constant(n), gc.constant(flag))):
        assert nest.same_structure(got, want)
        assert [type(x) for x in _containers(got)] == [type(x) for x in _containers(want)]
        for g, w in zip(nest.flatten(got), nest.flatten(want)):
            np.testing.assert_array_equal(g.numpy(), w)


def _containers(x):
    """Every container in a nest, depth first (to compare list/tuple/dict/namedtuple types)."""
    if isinstance(x, dict):
        return [x] + [c for k in sorted(x) for c in _containers(x[k])]
    if isinstance(x, (list, tuple)):
        return [x] + [c for v in x for c in _containers(v)]
    return []


def test_values_unchanged_in_both_branches_bypass_the_cond_node():
    seen = {}

    @function
    def f(x, y, p):
        a, b, c = gc.cond(p, lambda: (x, y * 2.0, x), lambda: (x, y * 3.0, x))
        seen["same"] = a is x and c is x
        return a, b, c

    for p, k in ((True, 2.0), (False, 3.0)):
        a, b, c = f(np.float32(1.0), np.float32(5.0), gc.constant(p))
        assert (float(a), float(b), float(c)) == (1.0, 5.0 * k, 1.0)
    assert seen["same"]
    cond_op = [op for op in f.get_concrete_function(
        np.float32(1.0), np.float32(5.0), gc.constant(True)).graph.operations if op.type == "cond"]
    assert len(cond_op) == 1 and len(cond_op[0].outputs) == 1
