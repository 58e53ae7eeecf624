"""The graph IR: golden text form, verify(), captures, and program order of effects."""
import numpy as np
import pytest

import graphc as gc
from graphc.runtime.graph import Graph, walk
from graphc.runtime.types import TensorType
from graphc.runtime.verify import verify, GraphVerificationError


def test_golden_text_of_a_small_function():
    v = gc.Variable(0.0, name="counter")

    @gc.function
    def f(x, y):
        v.assign_add(1.0)
        z = x * 2.0 + y
        return gc.exp(z), gc.cast(x, gc.int32)
    cf = f.get_concrete_function(gc.TensorSpec([None, 3]), gc.TensorSpec([3]))
    assert str(cf.graph) == """\
graph f(%x: float32[?,3], %y: float32[3], captured %var_0: resource<float32[]>) {
  %constant_0: float32[] = constant() {value=1.}
  assign_add_variable(%var_0, %constant_0)
  %constant_1: float32[] = constant() {value=2.}
  %multiply_0: float32[?,3] = multiply(%x, %constant_1)
  %add_0: float32[?,3] = add(%multiply_0, %y)
  %exp_0: float32[?,3] = exp(%add_0)
  %cast_0: int32[?,3] = cast(%x) {dtype=int32}
  return %exp_0, %cast_0
}"""


def test_golden_text_with_subgraphs():
    @gc.function
    def f(x):
        return gc.cond(x > 0.0, lambda: x * 2.0, lambda: -x)
    text = str(f.get_concrete_function(gc.TensorSpec([], gc.float32)).graph)
    assert text == """\
graph f(%x: float32[]) {
  %constant_0: float32[] = constant() {value=0.}
  %greater_0: bool[] = greater(%x, %constant_0)
  %cond_0: float32[] = cond(%greater_0, %x) {
    false_branch:(captured %x_0: float32[]) {
      %negative_0: float32[] = negative(%x_0)
      return %negative_0
    }
    true_branch:(captured %x_0: float32[]) {
      %constant_0: float32[] = constant() {value=2.}
      %multiply_0: float32[] = multiply(%x_0, %constant_0)
      return %multiply_0
    }
  }
  return %cond_0
}"""


def test_operations_have_type_and_name_and_location():
    @gc.function
    def f(x):
        return gc.sqrt(x)  # location line
    g = f.get_concrete_function(gc.TensorSpec([2])).graph
    (op,) = g.operations
    assert op.type == "sqrt" and op.name == "sqrt_0"
    line = next(i for i, l in enumerate(open(__file__), 1) if "# location line" in l)
    assert op.loc == (__file__, line, "f")


def test_verify_catches_broken_graphs():
    g = Graph("g")
    x = g.add_input(TensorType(gc.float32, (3,)), "x")
    op = g.add_op("exp", [x], {}, [TensorType(gc.float32, (3,))])
    g.outputs = op.outputs
    verify(g)
    op.outputs[0].type = TensorType(gc.float64, (3,))
    with pytest.raises(GraphVerificationError, match="type rule gives"):
        verify(g)
    op.outputs[0].type = TensorType(gc.float32, (3,))
    g.operations.insert(0, g.operations[0])              # same value assigned twice
    with pytest.raises(GraphVerificationError, match="assigned twice"):
        verify(g)
    g.operations.pop(0)
    g2 = Graph("g2")
    g2.add_op("exp", [x], {}, [TensorType(gc.float32, (3,))])   # uses a foreign value
    with pytest.raises(GraphVerificationError, match="before it is defined"):
        verify(g2)
    g3 = Graph("g3")
    g3.add_op("no_such_op", [], {}, [])
    with pytest.raises(GraphVerificationError, match="unknown type"):
        verify(g3)


def test_captures_are_fed_by_reference_not_baked():
    v = gc.Variable(1.0)
    c = gc.constant(5.0)

    @gc.function
    def f(x):
        return x * v + c
    assert float(f(gc.constant(2.0))) == 7.0
    v.assign(3.0)
    assert float(f(gc.constant(2.0))) == 11.0
    g = f.concrete_functions()[0].graph
    assert [src for _, src in g.captures] == [v, c]
    assert not [op for op in walk(g) if op.type == "constant"]


def test_graph_print_is_readable_for_large_constants():
    @gc.function
    def f(x):
        return x + np.arange(100, dtype=np.float32)
    text = str(f.get_concrete_function(gc.TensorSpec([100])).graph)
    assert "value=<float32[100]>" in text
