"""Algebraic simplification and shape specialization, each alone: golden text, verify(),
purity, and the numpy interpreter agreeing before and after (hypothesis inputs)."""
import numpy as np
import pytest
from hypothesis import given, settings

import graphc as gc
from graphc.runtime.executor import run_graph
from graphc.runtime.graph import Graph
from graphc.runtime.passes import algebraic, dce, shape_specialization
from graphc.runtime.types import TensorType
from pass_helpers import F32, apply, const, floats, graph_of, node, same_outputs, spec


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


def test_stop_gradient_is_an_identity_after_tracing():
    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.stop_gradient(x * 2.0) * x
        return y, tape.gradient(y, x)
    g = graph_of(f, spec(3))
    assert any(op.type == "stop_gradient" for op in g.operations)
    out = apply(algebraic, g)
    assert not any(op.type == "stop_gradient" for op in out.operations)
    xs = np.array([1.0, -2.0, 3.0], np.float32)
    same_outputs(g, out, [xs])
    np.testing.assert_allclose(run_graph(out, [xs])[1], 2.0 * xs)   # d/dx (sg(2x) * x) = 2x


def test_where_of_one_value_is_that_value():
    """sigmoid's where(x < low, stop_gradient(x), x) (it only steers the gradient) leaves the
    optimized forward graph; a where whose result is broadcast bigger than x stays."""
    def f(x, c):
        return gc.sigmoid(x), gc.where(c, x, x)
    g = graph_of(f, spec(3), spec(2, 3, dtype=gc.bool))
    out = apply(algebraic, g)
    wheres = [op for op in out.operations if op.type == "where"]
    assert len(wheres) == 1 and wheres[0].outputs[0].type.shape == (2, 3)
    same_outputs(g, out, [np.array([-100.0, 0.5, 3.0], np.float32),
                          np.array([[True, False, True]] * 2)])


def test_relu_forward_is_one_maximum_once_simplified():
    """relu's maximum(x, -inf) only steers the gradient (none at NaN, as TF's ReluGrad):
    the optimized forward graph keeps maximum(0, x) (and relu6's minimum); so does
    minimum(x, inf), either order, NaN and -0.0 bit for bit."""
    def f(x):
        return (gc.nn.relu(x), gc.nn.relu6(x), gc.minimum(x, np.inf), gc.maximum(-np.inf, x),
                gc.maximum(x, 0.0))
    g = graph_of(f, spec(None))
    out = dce.run(apply(algebraic, g))
    assert sorted(op.type for op in out.operations if op.type != "constant") == \
        ["maximum", "maximum", "maximum", "minimum"]
    xs = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, 7.0], np.float32)
    same_outputs(g, out, [xs])
    np.testing.assert_array_equal(np.signbit(run_graph(out, [xs])[2]), np.signbit(xs))


def test_where_of_one_value_with_unknown_dims_keeps_its_broadcast():
    """c [?] and x [?] have equal static types, but c of 3 and x of 1 give 3 values (eager
    gc.where broadcasts); sigmoid's own where (c = x < low) still folds with unknown dims."""
    def f(x, c):
        return gc.where(c, x, x), gc.sigmoid(x)
    g = graph_of(f, spec(None), spec(None, dtype=gc.bool))
    out = apply(algebraic, g)
    assert [op.inputs[0].name for op in out.operations if op.type == "where"] == ["c"]
    xs, cs = np.array([5.0], np.float32), np.array([True, False, True])
    assert run_graph(out, [xs, cs])[0].tolist() == [5.0, 5.0, 5.0]
    same_outputs(g, out, [xs, cs])


def test_elementwise_ops_read_a_broadcast_to_operand_as_its_source():
    def f(g, e):
        wide = gc.broadcast_to(g, [4, 3])         # g: [4, 1]
        return wide * e, -wide, wide + gc.broadcast_to(g, [4, 3])
    g = graph_of(f, spec(4, 1), spec(4, 3))
    out = apply(algebraic, g)
    text = str(dce.run(out))
    assert "multiply(%g, %e)" in text             # e gives the [4, 3] result by itself
    assert "negative(%broadcast_to_0)" in text    # unary: the broadcast makes the shape
    assert "add(%g, %broadcast_to_1)" in text     # one operand must keep the [4, 3] shape
    x = np.arange(4, dtype=np.float32).reshape(4, 1)
    same_outputs(g, out, [x, np.ones((4, 3), np.float32) * 2])


@settings(max_examples=20, deadline=None)
@given(floats((3, 1)), floats((3, 5)))
def test_absorbed_broadcasts_keep_results(a, b):
    def f(a, b):
        return gc.where(b > 0, gc.broadcast_to(a, [3, 5]), 0.0) + b * gc.broadcast_to(a, [3, 5])
    g = graph_of(f, spec(3, 1), spec(3, 5))
    out = dce.run(apply(algebraic, g))
    assert "broadcast_to" not in str(out)
    same_outputs(g, out, [a, b])
