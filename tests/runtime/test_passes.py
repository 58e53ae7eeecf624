"""Graph passes, each alone: golden text of the rewritten graph, verify(), purity, and the
numpy interpreter giving the same outputs before and after (hypothesis inputs).

Constant folding, CSE and DCE here; algebraic simplification and shape specialization in
test_passes_simplify.py; the whole pipeline in test_passes_pipeline.py."""
import numpy as np
import pytest
from hypothesis import given, settings

import graphc as gc
from graphc.runtime.executor import run_graph
from graphc.runtime.graph import Graph
from graphc.runtime.passes import constant_folding, cse, dce, shape_specialization
from graphc.runtime.types import TensorType
from graphc.runtime.verify import verify
from pass_helpers import F32, apply, const, floats, graph_of, node, same_outputs, spec


# -- constant folding --------------------------------------------------------------------

def test_folding_golden_and_chains():
    g = Graph("t")
    x = g.add_input(TensorType(F32, (3,)), "x")
    a = node(g, "multiply", const(g, 2.0), const(g, 3.0))
    b = node(g, "exp", node(g, "negative", a))
    g.outputs = [node(g, "add", x, b)]
    out = apply(constant_folding, g)
    assert str(out) == """\
graph t(%x: float32[3]) {
  %constant_0: float32[] = constant() {value=2.}
  %constant_1: float32[] = constant() {value=3.}
  %multiply_0: float32[] = constant() {value=6.}
  %negative_0: float32[] = constant() {value=-6.}
  %exp_0: float32[] = constant() {value=0.00247875}
  %add_0: float32[3] = add(%x, %exp_0)
  return %add_0
}"""
    assert out.operations[4].attrs["value"] == np.exp(np.float32(-6.0))
    x_val = np.array([1, 2, 3], np.float32)
    same_outputs(g, out, [x_val])


def test_folding_respects_the_size_cap():
    g = Graph("t")
    small = node(g, "fill", const(g, 1.5), shape=(4,))
    big = node(g, "fill", const(g, 1.5), shape=(40, 40))
    g.outputs = [small, big]
    text = str(apply(constant_folding, g))
    assert "%fill_0: float32[4] = constant() {value=[1.5, 1.5, 1.5, 1.5]}" in text
    assert "%fill_1: float32[40,40] = fill(%constant_1) {shape=(40, 40)}" in text
    assert constant_folding.SIZE_LIMIT < 1600


def test_folding_never_touches_effects_and_inlines_a_constant_cond_in_place(capsys):
    def f():
        gc.print("n =", gc.constant(1) + 1)
        r = gc.random.normal([2], mean=gc.constant(0.0) * 2.0)
        c = gc.cond(gc.constant(True), lambda: _printing_one(), lambda: gc.constant(2.0))
        gc.print("after")
        return r, c
    g = graph_of(f)
    out = apply(constant_folding, g)
    assert str(out) == """\
graph f() {
  %constant_0: int32[] = constant() {value=1}
  %constant_1: int32[] = constant() {value=1}
  %add_0: int32[] = constant() {value=2}
  print(%add_0) {end='\\n', output_stream=None, sep=' ', template=('n =', None)}
  %constant_2: float32[] = constant() {value=0.}
  %constant_3: float32[] = constant() {value=2.}
  %multiply_0: float32[] = constant() {value=0.}
  %constant_4: float32[] = constant() {value=0.}
  %constant_5: float32[] = constant() {value=1.}
  %random_normal_0: float32[2] = random_normal(%constant_4, %constant_5) {dtype=float32, seed=None, shape=(2,)}
  %add_1: float32[2] = add(%random_normal_0, %multiply_0)
  %constant_6: bool[] = constant() {value=True}
  print() {end='\\n', output_stream=None, sep=' ', template=('branch',)}
  %constant_7: float32[] = constant() {value=1.}
  print() {end='\\n', output_stream=None, sep=' ', template=('after',)}
  return %add_1, %constant_7
}"""
    assert len({op.name for op in out.operations}) == len(out.operations)
    run_graph(g, [])
    expected = capsys.readouterr().out
    run_graph(out, [])
    assert capsys.readouterr().out == expected == "n = 2\nbranch\nafter\n"


def _printing_one():
    gc.print("branch")
    return gc.constant(1.0)


def test_constant_cond_becomes_its_branch_but_while_stays():
    def f():
        c = gc.cond(gc.constant(3) > 2, lambda: gc.constant(10.0), lambda: gc.constant(20.0))
        w = gc.while_loop(lambda i: i < 5, lambda i: i + 1, [gc.constant(0)])[0]
        return c, w
    g = graph_of(f)
    out = apply(constant_folding, g)
    assert "%constant_3: float32[] = constant() {value=10.}" in str(out)
    assert [v.name for v in out.outputs] == ["constant_3", "while_0"]
    assert [op.type for op in out.operations].count("while") == 1
    same_outputs(g, out, [])


@settings(max_examples=20, deadline=None)
@given(floats((3,)))
def test_shape_dependent_ifs_specialize_away(x):
    def f(x):
        if gc.shape(x)[0] > 2:           # AutoGraph: a cond on a shape known when traced
            gc.print("big")
            y = x * 2.0
            y = gc.cond(y[0] > 0.0, lambda: y + 1.0, lambda: y)
        else:
            y = x - 1.0
        return y
    g = graph_of(f, spec(3))
    out = constant_folding.run(shape_specialization.run(g))
    verify(out)
    top = [op.type for op in out.operations]
    assert "print" in top and top.count("cond") == 1 and "subtract" not in str(out)
    same_outputs(g, out, [x])


def test_a_failing_fold_is_left_for_run_time():
    g = Graph("t")
    r = node(g, "range", const(g, 0, np.int32), const(g, 5, np.int32), const(g, 0, np.int32))
    g.outputs = [r]
    out = apply(constant_folding, g)
    assert out.operations[-1].type == "range"
    with pytest.raises(gc.errors.InvalidArgumentError, match="delta must not be zero"):
        run_graph(out, [])


def test_folding_sharpens_unknown_dims_downstream():
    g = Graph("t")
    r = node(g, "range", const(g, 0, np.int32), const(g, 4, np.int32), const(g, 1, np.int32))
    x = g.add_input(TensorType(gc.int32, (1,)), "x")
    s = node(g, "add", r, x)
    assert s.type.shape == (None,)
    g.outputs = [s]
    out = apply(constant_folding, g)
    assert "%range_0: int32[4] = constant() {value=[0, 1, 2, 3]}" in str(out)
    assert "%add_0: int32[4] = add(%range_0, %x)" in str(out)
    same_outputs(g, out, [np.array([7], np.int32)])


@settings(max_examples=25, deadline=None)
@given(floats((2, 3)))
def test_folding_on_a_traced_function_keeps_results(x):
    def f(x):
        k = gc.exp(gc.constant(0.5)) * gc.constant([1.0, 2.0, 3.0]) - 1.0
        return x * k + gc.reduce_sum(gc.constant([[1.0, 2.0], [3.0, 4.0]]), axis=0)[1]
    g = graph_of(f, spec(2, 3))
    out = apply(constant_folding, g)
    assert [op.type for op in out.operations].count("constant") >= 3
    assert {op.type for op in out.operations} >= {"multiply", "add"}
    same_outputs(g, out, [x])
    np.testing.assert_array_equal(run_graph(out, [x])[0], f(gc.constant(x)).numpy())


# -- common-subexpression elimination ----------------------------------------------------

def test_cse_golden():
    g = Graph("t")
    x = g.add_input(TensorType(F32, (3,)), "x")
    a, b = node(g, "exp", x), node(g, "exp", x)
    c1, c2, c3 = const(g, 2.0), const(g, 2.0), const(g, -0.0)
    s = node(g, "add", node(g, "multiply", a, c1), node(g, "multiply", b, c2))
    g.outputs = [node(g, "add", s, node(g, "add", const(g, 0.0), c3))]
    out = apply(cse, g)
    assert str(out) == """\
graph t(%x: float32[3]) {
  %exp_0: float32[3] = exp(%x)
  %constant_0: float32[] = constant() {value=2.}
  %constant_2: float32[] = constant() {value=-0.}
  %multiply_0: float32[3] = multiply(%exp_0, %constant_0)
  %add_0: float32[3] = add(%multiply_0, %multiply_0)
  %constant_3: float32[] = constant() {value=0.}
  %add_1: float32[] = add(%constant_3, %constant_2)
  %add_2: float32[3] = add(%add_0, %add_1)
  return %add_2
}"""
    same_outputs(g, out, [np.array([0.5, -1, 2], np.float32)])


def test_cse_keeps_ops_with_different_attrs_and_merges_inside_branches():
    def f(x):
        a = gc.reduce_sum(x, axis=0) + gc.reduce_sum(x, axis=0)
        b = gc.reduce_sum(x, axis=1)
        c = gc.cond(a[0] > 0.0, lambda: gc.exp(b) + gc.exp(b), lambda: b)
        return a, c
    g = graph_of(f, spec(3, 3))
    out = apply(cse, g)
    assert [op.type for op in out.operations].count("reduce_sum") == 2
    true_branch = next(op for op in out.operations if op.type == "cond").attrs["true_branch"]
    assert [op.type for op in true_branch.operations] == ["exp", "add"]
    x = np.arange(9, dtype=np.float32).reshape(3, 3) - 2
    same_outputs(g, out, [x])


def test_cse_merges_commutative_operands_in_either_order_only_where_exact():
    def f(x, y):
        return (x + y) * (y + x), (x * y) - (y * x), gc.maximum(x, y) - gc.maximum(y, x)
    g = graph_of(f, spec(3), spec(3))
    out = apply(cse, g)
    types = [op.type for op in out.operations]
    assert types.count("add") == 1 and types.count("multiply") == 2
    assert types.count("maximum") == 2
    x = np.array([0.0, -0.0, 1.5], np.float32)
    same_outputs(g, out, [x, -x])


def test_cse_never_merges_stateful_ops():
    v = gc.Variable(1.0)

    def f():
        r1, r2 = gc.random.uniform([2]), gc.random.uniform([2])
        a = v.read_value()
        v.assign_add(1.0)
        b = v.read_value()
        c = v.read_value()
        gc.print("x")
        gc.print("x")
        return r1, r2, a, b, c
    out = apply(cse, graph_of(f))
    types = [op.type for op in out.operations]
    assert types.count("random_uniform") == 2 and types.count("read_variable") == 3
    assert types.count("print") == 2


# -- dead-code elimination ---------------------------------------------------------------

def test_dce_golden_keeps_effects():
    v = gc.Variable(0.0)

    def f(x):
        unused = gc.exp(x) * 2.0
        gc.random.normal([2])
        v.assign_add(1.0)
        v.read_value()
        gc.print("hi")
        gc.cond(x[0] > 0.0, lambda: _print_and(x), lambda: x)
        gc.cond(x[0] > 0.0, lambda: x + 1.0, lambda: x)
        return x + 1.0
    g = graph_of(f, spec(2))
    out = apply(dce, g)
    assert str(out) == """\
graph f(%x: float32[2], captured %var_0: resource<float32[]>) {
  %constant_1: float32[] = constant() {value=0.}
  %constant_2: float32[] = constant() {value=1.}
  %random_normal_0: float32[2] = random_normal(%constant_1, %constant_2) {dtype=float32, seed=None, shape=(2,)}
  %constant_3: float32[] = constant() {value=1.}
  assign_add_variable(%var_0, %constant_3)
  %read_variable_0: float32[] = read_variable(%var_0)
  print() {end='\\n', output_stream=None, sep=' ', template=('hi',)}
  %getitem_0: float32[] = getitem(%x) {index=(('int', 0),)}
  %constant_4: float32[] = constant() {value=0.}
  %greater_0: bool[] = greater(%getitem_0, %constant_4)
  cond(%greater_0) {
    false_branch:() {
      return
    }
    true_branch:() {
      print() {end='\\n', output_stream=None, sep=' ', template=('branch',)}
      return
    }
  }
  %constant_6: float32[] = constant() {value=1.}
  %add_0: float32[2] = add(%x, %constant_6)
  return %add_0
}"""


def _print_and(x):
    gc.print("branch")
    return x


def test_dce_prunes_captures_a_branch_no_longer_reads():
    def f(x, y):
        z = y * 3.0
        def true_fn():
            _ = gc.exp(z)
            return x + 1.0
        return gc.cond(x[0] > 0.0, true_fn, lambda: x)
    g = graph_of(f, spec(2), spec(2))
    out = apply(dce, g)
    assert str(out) == """\
graph f(%x: float32[2], %y: float32[2]) {
  %getitem_0: float32[] = getitem(%x) {index=(('int', 0),)}
  %constant_1: float32[] = constant() {value=0.}
  %greater_0: bool[] = greater(%getitem_0, %constant_1)
  %cond_0: float32[2] = cond(%greater_0, %x) {
    false_branch:(captured %x_0: float32[2]) {
      return %x_0
    }
    true_branch:(captured %x_0: float32[2]) {
      %constant_0: float32[] = constant() {value=1.}
      %add_0: float32[2] = add(%x_0, %constant_0)
      return %add_0
    }
  }
  return %cond_0
}"""
    for xv in ([1, 2], [-1, 2]):
        same_outputs(g, out, [np.array(xv, np.float32), np.array([5, 6], np.float32)])


def test_dce_inside_while_body():
    def f(n):
        def body(i, s):
            _ = gc.exp(gc.cast(i, F32))
            return i + 1, s + i
        return gc.while_loop(lambda i, s: i < n, body, [gc.constant(0), gc.constant(0)])[1]
    g = graph_of(f, spec(dtype=gc.int32))
    out = apply(dce, g)
    body = next(op for op in out.operations if op.type == "while").attrs["body"]
    assert [op.type for op in body.operations] == ["constant", "add", "add"]
    same_outputs(g, out, [np.array(6, np.int32)])
