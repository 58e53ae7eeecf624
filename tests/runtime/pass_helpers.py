"""Helpers shared by the graph-pass tests."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from graphc.runtime.executor import run_graph
from graphc.runtime.registry import REGISTRY
from graphc.runtime.verify import verify

F32 = gc.float32


def apply(pass_module, graph):
    """Run one pass; check it verified, left its input untouched and kept the signature."""
    before, ops_before = str(graph), list(graph.operations)
    out = pass_module.run(graph)
    verify(out)
    assert str(graph) == before and graph.operations == ops_before, "pass mutated its input"
    assert out.inputs == graph.inputs
    assert [v.name for v, _ in out.captures] == [v.name for v, _ in graph.captures]
    assert len(out.outputs) == len(graph.outputs)
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
