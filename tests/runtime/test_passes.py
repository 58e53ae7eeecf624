"""Graph passes, each alone: golden text of the rewritten graph, verify(), purity, and the
numpy interpreter giving the same outputs before and after (hypothesis inputs)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from graphc.runtime.executor import run_graph
from graphc.runtime.graph import Graph
from graphc.runtime.passes import (algebraic, constant_folding, cse, dce,
                                   shape_specialization)
from graphc.runtime.registry import REGISTRY
from graphc.runtime.types import TensorType
from graphc.runtime.verify import verify

F32 = gc.float32


def apply(pass_module, graph):
    """Run one pass; check it verified, left its input untouched and kept the signature."""
    before, ops_before = str(graph), list(graph.operations)
    out = pass_module.run(graph)
    verify(out)
    assert str(graph) == before and graph.operations == ops_before, "pass mutated its input"
    assert out.inputs == graph.inputs and [v for v, _ in out.captures] is not None
    return out


def same_outputs(g1, g2, args):
    for a, b in zip(run_graph(g1, list(args)), run_graph(g2, list(args))):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def node(g, type_, *inputs, **attrs):
    types = REGISTRY[type_].infer([v.type for v in inputs], **attrs)
    op = g.add_op(type_, list(inputs), attrs, types)
    return op.outputs[0] if len(op.outputs) == 1 else op.outputs


def const(g, value, dtype=np.float32):
    return node(g, "constant", value=np.array(value, dtype))


def graph_of(fn, *specs):
    return gc.function(fn).get_concrete_function(*specs).graph


def floats(shape):
    return hnp.arrays(np.float32, shape, elements=st.floats(-8, 8, width=32))


def spec(*shape, dtype=F32):
    return gc.TensorSpec(list(shape), dtype)


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
  %constant_4: float32[] = constant() {value=1.}
  %random_normal_0: float32[2] = random_normal(%multiply_0, %constant_4) {dtype=float32, seed=None, shape=(2,)}
  %constant_5: bool[] = constant() {value=True}
  print() {end='\\n', output_stream=None, sep=' ', template=('branch',)}
  %constant_6: float32[] = constant() {value=1.}
  print() {end='\\n', output_stream=None, sep=' ', template=('after',)}
  return %random_normal_0, %constant_6
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


# -- algebraic simplification ------------------------------------------------------------

def test_algebraic_golden_identities():
    def f(x, y, m):
        a = x * 1.0 + -0.0           # x*1, x+0
        b = 1.0 * (-0.0 + a) - 0.0   # 1*x, 0+x, x-0
        c = -(-(b / 1.0))            # x/1, double negation
        d = gc.cast(c, F32) * gc.ones([3])
        t = gc.transpose(gc.transpose(m))
        return d + y, gc.reshape(t, [2, 3])
    g = graph_of(f, spec(3), spec(3), spec(2, 3))
    out = apply(algebraic, g)
    assert str(out) == """\
graph f(%x: float32[3], %y: float32[3], %m: float32[2,3]) {
  %constant_0: float32[] = constant() {value=1.}
  %constant_1: float32[] = constant() {value=-0.}
  %constant_2: float32[] = constant() {value=-0.}
  %constant_3: float32[] = constant() {value=1.}
  %constant_4: float32[] = constant() {value=0.}
  %constant_5: float32[] = constant() {value=1.}
  %negative_0: float32[3] = negative(%x)
  %constant_6: float32[] = constant() {value=1.}
  %fill_0: float32[3] = fill(%constant_6) {shape=(3,)}
  %transpose_0: float32[3,2] = transpose(%m) {perm=(1, 0)}
  %add_2: float32[3] = add(%x, %y)
  return %add_2, %m
}"""
    args = [np.array([1, -2, 3], np.float32), np.array([4, 5, 6], np.float32),
            np.arange(6, dtype=np.float32).reshape(2, 3)]
    same_outputs(g, out, args)


def test_algebraic_keeps_what_would_change_dtype_or_shape():
    def f(x, i):
        wider = x + gc.zeros([4, 3])          # broadcasts x up: must stay
        as_float = i / 1                      # int / 1 is float64: must stay
        not_identities = (0.0 - x) + x * 0.0 + 2.0 / x + x * gc.constant([1.0, 2.0, 1.0])
        return wider, as_float, not_identities
    g = graph_of(f, spec(3), spec(3, dtype=gc.int32))
    out = apply(algebraic, g)
    assert str(out) == str(g)


def test_signed_zeros_decide_whether_adding_zero_is_an_identity():
    def f(x, i):
        return x + 0.0, 0.0 + x, x - (-0.0), x + -0.0, x - 0.0, i + 0, 0 - i, i - 0
    g = graph_of(f, spec(2), spec(2, dtype=gc.int32))
    out = apply(algebraic, g)
    assert [v.name for v in out.outputs] == ["add_0", "add_1", "subtract_0", "x", "x", "i",
                                             "subtract_2", "i"]
    x = np.array([-0.0, 0.0], np.float32)
    same_outputs(g, out, [x, np.array([3, -4], np.int32)])
    assert np.signbit(run_graph(out, [x, np.zeros(2, np.int32)])[0]).tolist() == [False, False]


def test_transpose_pairs_merge_into_one():
    def f(x):
        return gc.transpose(gc.transpose(x, [1, 2, 0]), [1, 0, 2])
    g = graph_of(f, spec(2, 3, 4))
    out = apply(algebraic, g)
    assert "transpose(%x) {perm=(2, 1, 0)}" in str(out)
    assert "transpose(%transpose_0)" not in str(out)
    same_outputs(g, out, [np.arange(24, dtype=np.float32).reshape(2, 3, 4)])


@settings(max_examples=25, deadline=None)
@given(floats((2, 3)), floats((3,)))
def test_algebraic_keeps_results(x, y):
    def f(x, y):
        a = (x * 1.0 + -0.0) / 1.0 - 0.0
        return -(-a) + gc.transpose(gc.transpose(gc.reshape(y, [1, 3]))) * gc.ones([2, 3])
    g = graph_of(f, spec(2, 3), spec(3))
    out = apply(algebraic, g)
    assert len(dce.run(out).operations) < len(g.operations)
    same_outputs(g, out, [x, y])
    np.testing.assert_array_equal(run_graph(out, [x, y])[0],
                                  f(gc.constant(x), gc.constant(y)).numpy())


# -- shape specialization ----------------------------------------------------------------

def test_shape_specialization_golden():
    def f(x):
        n = gc.shape(x)
        r = gc.reshape(x, [n[0], -1])
        return r * 2.0, gc.reshape(x, n)
    g = graph_of(f, spec(3, 4))
    assert "float32[?,?]" in str(g)
    out = apply(shape_specialization, g)
    text = str(out)
    assert "%shape_0: int32[2] = constant() {value=[3, 4]}" in text
    assert "%reshape_0: float32[3,4] = reshape(%x) {shape=(3, -1)}" in text
    assert "%multiply_0: float32[3,4] = multiply(%reshape_0, %constant_1)" in text
    assert "%reshape_1: float32[3,4] = reshape(%x) {shape=(3, 4)}" in text
    assert "?" not in text
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    same_outputs(g, out, [x])


def test_shape_specialization_reaches_into_branches_but_not_loop_vars():
    def f(x):
        r = gc.reshape(x, gc.shape(x))                     # float32[?,?] when traced
        c = gc.cond(x[0, 0] > 0.0, lambda: r * 2.0, lambda: r)
        w = gc.while_loop(lambda v: gc.reduce_sum(v) < 100.0, lambda v: v * 2.0 + r, [x],
                          shape_invariants=[[None, 2]])[0]
        return c, w
    g = graph_of(f, spec(2, 2))
    out = apply(shape_specialization, g)
    cond_op = next(op for op in out.operations if op.type == "cond")
    assert str(cond_op.outputs[0].type) == "float32[2,2]"
    assert "captured %reshape_0_0: float32[2,2]" in str(cond_op.attrs["true_branch"])
    while_op = next(op for op in out.operations if op.type == "while")
    body = while_op.attrs["body"]
    assert str(body.inputs[0].type) == "float32[?,2]"
    assert str(body.captures[0][0].type) == "float32[2,2]"
    same_outputs(g, out, [np.array([[1, 2], [3, 4]], np.float32)])


def test_shape_specialization_leaves_unknown_dims_unknown():
    g = graph_of(lambda x: gc.reshape(x, gc.shape(x)) + 1.0, spec(None, 3))
    out = apply(shape_specialization, g)
    assert str(out) == str(g)


def test_shape_specialization_leaves_a_bad_runtime_shape_to_fail_at_run_time():
    g = Graph("t")
    x = g.add_input(TensorType(F32, (2, 3)), "x")
    vec = const(g, [4, 4], np.int32)
    g.outputs = [node(g, "reshape", x, vec, shape=(None, None))]
    out = apply(shape_specialization, g)
    assert out.operations[-1].inputs[1] is vec
    with pytest.raises(gc.errors.InvalidArgumentError, match="reshape"):
        run_graph(out, [np.zeros((2, 3), np.float32)])
