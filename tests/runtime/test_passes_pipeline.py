"""The whole pipeline: optimize(), effect ordering across every pass, GRAPHC_DUMP."""
import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from graphc.runtime.executor import run_graph
from graphc.runtime.graph import walk
from graphc.runtime.passes import PASS_NAMES, PIPELINE, has_effects, optimize
from graphc.runtime.registry import REGISTRY
from graphc.runtime.verify import verify

F32 = gc.float32


def effects(graph):
    """The effectful ops of a graph and its subgraphs, in program order."""
    return [(op.type, op.name) for op in walk(graph) if REGISTRY[op.type].effectful]


def test_pipeline_order_and_names():
    assert PASS_NAMES == ["shape_specialization", "constant_folding",
                          "algebraic_simplification", "cse", "dce"]
    assert all(callable(run) for _, run in PIPELINE)


def test_has_effects_sees_into_subgraphs():
    @gc.function
    def f(x):
        quiet = gc.cond(x > 0.0, lambda: x * 2.0, lambda: x)
        loud = gc.cond(x > 0.0, lambda: _print_then(x), lambda: x)
        return quiet + loud
    g = f.get_concrete_function(gc.TensorSpec([], F32)).graph
    conds = [op for op in g.operations if op.type == "cond"]
    assert [has_effects(op) for op in conds] == [False, True]
    assert not has_effects(next(op for op in g.operations if op.type == "greater"))


def _print_then(x):
    gc.print("x is", x)
    return x + 1.0


def _traced_with_effects(v):
    def f(x):
        a = x * 1.0 + gc.constant(2.0) * 3.0
        gc.print("first", a)
        r1 = gc.random.uniform([3])
        r2 = gc.random.uniform([3])                   # identical op: must not merge
        before = v.read_value()
        v.assign_add(gc.reduce_sum(x) * 0.0 + 1.0)
        after = v.read_value()                        # differs from `before`
        unused_read = v.read_value()                  # effectful: stays
        gc.random.normal([2])                         # result unused: stays
        gc.cond(x[0] > 0.0, lambda: _print_then(x), lambda: x + 0.0)
        dead = gc.exp(a) + gc.exp(a)                  # noqa: F841 - dead pure code goes
        gc.print("last", before, after)
        return a + r1 - r2, before, after, unused_read * 0.0
    return gc.function(f).get_concrete_function(gc.TensorSpec([3], F32)).graph


def _run_capturing(graph, x, v, capsys):
    v.assign(5.0)
    gc.random.set_seed(7)
    outs = run_graph(graph, [x, v])
    return outs, capsys.readouterr().out, v.numpy()


def test_effects_are_never_removed_merged_or_reordered(capsys):
    v = gc.Variable(5.0)
    g = _traced_with_effects(v)
    opt = optimize(g, dump="")
    verify(opt)
    assert effects(opt) == effects(g)
    assert [t for t, _ in effects(g)] == [
        "print", "random_uniform", "random_uniform", "read_variable", "assign_add_variable",
        "read_variable", "read_variable", "random_normal", "print", "print"]
    assert "exp" not in str(opt) and len(opt.operations) < len(g.operations)
    for xv in ([1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]):
        x = np.array(xv, np.float32)
        ref_out, ref_text, ref_v = _run_capturing(g, x, v, capsys)
        out, text, after_v = _run_capturing(opt, x, v, capsys)
        assert text == ref_text and ("x is" in text) == (xv[0] > 0)
        assert after_v == ref_v == 6.0
        for a, b in zip(ref_out, out):
            np.testing.assert_array_equal(a, b)
        assert out[1] == 5.0 and out[2] == 6.0


@pytest.mark.parametrize("name", PASS_NAMES)
def test_each_pass_alone_preserves_effects(name, capsys):
    v = gc.Variable(5.0)
    g = _traced_with_effects(v)
    out = dict(PIPELINE)[name](g)
    verify(out)
    assert effects(out) == effects(g)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert _run_capturing(out, x, v, capsys)[1] == _run_capturing(g, x, v, capsys)[1]


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.float32, (2, 3), elements=st.floats(-4, 4, width=32)))
def test_optimize_agrees_with_eager_and_with_the_unoptimized_graph(x):
    def f(x):
        n = gc.shape(x)
        y = gc.reshape(x * 1.0, [n[0], -1])
        s = gc.nn.softmax(y) if hasattr(gc, "nn") else gc.exp(y)
        t = gc.transpose(gc.transpose(s)) + gc.exp(x) + gc.exp(x)
        return gc.cond(gc.reduce_sum(t) > 0.0, lambda: t * 2.0, lambda: -(-t))
    g = gc.function(f).get_concrete_function(gc.TensorSpec([2, 3], F32)).graph
    opt = optimize(g, dump="")
    verify(opt)
    assert len(opt.operations) < len(g.operations)
    ref = run_graph(g, [x])[0]
    np.testing.assert_array_equal(run_graph(opt, [x])[0], ref)
    np.testing.assert_allclose(f(gc.constant(x)).numpy(), ref, rtol=1e-6)


def test_optimize_is_pure():
    v = gc.Variable(1.0)
    g = _traced_with_effects(v)
    text, ops = str(g), list(g.operations)
    optimize(g, dump="")
    assert str(g) == text and g.operations == ops


def _small_graph():
    @gc.function
    def f(x):
        return x * 1.0 + gc.exp(x) + gc.exp(x)
    return f.get_concrete_function(gc.TensorSpec([2], F32)).graph


def test_graphc_dump_one_pass(monkeypatch, capsys):
    monkeypatch.setenv("GRAPHC_DUMP", "cse")
    opt = optimize(_small_graph())
    err = capsys.readouterr().err
    assert err.count("// graphc: graph f after pass") == 1
    assert "after pass cse\n" in err
    # after CSE the duplicate exp is gone but the dead multiply-by-one constant is still there
    assert err.count("= exp(%x)") == 1 and "constant_0" in err
    assert "constant_0" not in str(opt)


def test_graphc_dump_all(monkeypatch, capsys):
    monkeypatch.setenv("GRAPHC_DUMP", "all")
    opt = optimize(_small_graph())
    err = capsys.readouterr().err
    assert [line.split()[-1] for line in err.splitlines() if line.startswith("// graphc")] \
        == PASS_NAMES
    assert err.rstrip().endswith(str(opt))


def test_graphc_dump_unset_prints_nothing(monkeypatch, capsys):
    monkeypatch.delenv("GRAPHC_DUMP", raising=False)
    optimize(_small_graph())
    assert capsys.readouterr().err == ""


def test_graphc_dump_unknown_pass_warns_with_the_valid_names(monkeypatch, capsys):
    monkeypatch.setenv("GRAPHC_DUMP", "constant_fold")
    with pytest.warns(UserWarning, match="constant_fold.*constant_folding"):
        optimize(_small_graph())
    assert capsys.readouterr().err == ""


def test_dump_argument_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("GRAPHC_DUMP", "all")
    buf = io.StringIO()
    monkeypatch.setattr("sys.stderr", buf)
    optimize(_small_graph(), dump="dce")
    assert buf.getvalue().count("// graphc") == 1 and "after pass dce" in buf.getvalue()


_OPS = {"add": 2, "subtract": 2, "multiply": 2, "divide": 2, "maximum": 2, "negative": 1,
        "exp": 1, "square": 1}
_SHAPES = [(2, 3), (3,), (), (1, 3)]


@st.composite
def random_programs(draw):
    """A straight-line program over x: float32[1,3] mixing ops, identity constants (0, -0,
    1) broadcast to several shapes, duplicates and dead values."""
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        op = draw(st.sampled_from(sorted(_OPS)))
        args = []
        for _ in range(_OPS[op]):
            if draw(st.booleans()):
                args.append(("value", draw(st.integers(0, 10))))
            else:
                args.append(("const", draw(st.sampled_from([0.0, -0.0, 1.0, 2.0])),
                             draw(st.sampled_from(_SHAPES))))
        steps.append((op, args))
    outputs = draw(st.lists(st.integers(0, 10), min_size=1, max_size=2))
    return steps, outputs


def _build(program):
    steps, outputs = program

    def f(x):
        values = [x]
        for op, args in steps:
            operands = [values[a[1] % len(values)] if a[0] == "value"
                        else gc.fill(list(a[2]), gc.constant(a[1])) for a in args]
            values.append(getattr(gc, op)(*operands))
        return [values[i % len(values)] for i in outputs]
    return gc.function(f).get_concrete_function(gc.TensorSpec([1, 3], F32)).graph


@pytest.mark.parametrize("passes", [["optimize"]] + [[name] for name in PASS_NAMES])
@settings(max_examples=40, deadline=None)
@given(program=random_programs(),
       x=hnp.arrays(np.float32, (1, 3), elements=st.floats(-3, 3, width=32)))
def test_random_programs_keep_their_results_and_types(passes, program, x):
    g = _build(program)
    runs = dict(PIPELINE, optimize=lambda graph: optimize(graph, dump=""))
    opt = runs[passes[0]](g)
    verify(opt)
    assert [v.type for v in opt.outputs] == [v.type for v in g.outputs]
    with np.errstate(all="ignore"):
        for a, b in zip(run_graph(g, [x]), run_graph(opt, [x])):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)


_STATEMENTS = ["print", "assign", "read", "random", "const_cond", "data_cond", "pure", "dup"]


def _effect_program(statements, v):
    """A traced function running `statements` in order against variable `v`."""
    def f(x):
        acc, outs = x, []
        for i, s in enumerate(statements):
            if s == "print":
                gc.print("p", i, acc)
            elif s == "assign":
                v.assign_add(gc.reduce_sum(acc) * 0.0 + float(i))
            elif s == "read":
                outs.append(v.read_value() * 1.0)
            elif s == "random":
                acc = acc + gc.random.uniform([2]) * 0.0 + gc.random.uniform([2])
            elif s in ("const_cond", "data_cond"):
                pred = gc.constant(i % 2 == 0) if s == "const_cond" else acc[0] > 0.5
                acc = gc.cond(pred, lambda i=i, a=acc: _print_then(a) * float(i),
                              lambda a=acc: a - 0.0)
            elif s == "pure":
                acc = acc * 1.0 + gc.exp(gc.constant(0.0))
            else:
                acc = acc + (gc.exp(acc) - gc.exp(acc))
        return [acc] + outs
    return gc.function(f).get_concrete_function(gc.TensorSpec([2], F32)).graph


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_STATEMENTS), min_size=1, max_size=8),
       st.sampled_from([[0.25, 1.0], [0.75, -1.0]]))
def test_random_effectful_programs_print_assign_and_draw_identically(statements, x):
    import contextlib
    v = gc.Variable(0.0)
    g = _effect_program(statements, v)
    opt = optimize(g, dump="")
    verify(opt)
    results = []
    for graph in (g, opt):
        v.assign(0.0)
        gc.random.set_seed(3)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            outs = run_graph(graph, [np.array(x, np.float32)] + [v] * len(graph.captures))
        results.append((buf.getvalue(), float(v.numpy()), outs))
    (text, var, outs), (text2, var2, outs2) = results
    assert text == text2 and var == var2
    for a, b in zip(outs, outs2):
        np.testing.assert_array_equal(a, b)
    kinds = [op.type for op in walk(opt) if REGISTRY[op.type].effectful]
    assert kinds.count("random_uniform") == 2 * statements.count("random")
