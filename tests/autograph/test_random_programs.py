"""Hypothesis-generated small programs (nested if/while/for, break, continue, return, and/or/not)
run in plain Python on numpy values and through @gc.function on tensors: results must match."""
import itertools
import linecache

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.autograph import operators
from .harness import as_expected, assert_same, to_graph_args

_counter = itertools.count()

ASSIGNS = ["a = a + y * 0.5", "b = b - a * 0.25", "a = a * 0.75", "k = k + 1", "b = b + 1.0",
           "a = -a if a > b else a + 0.5"]
CONDS = ["a > b", "a < 0.5", "x > 0 and b < 2.0", "not a > y", "k > 1 or a > 1.0", "b > x"]


@st.composite
def block(draw, depth, in_loop, loop_ids):
    n = draw(st.integers(1, 3))
    lines = []
    for _ in range(n):
        kinds = ["assign"] * 3
        if depth < 3:
            kinds += ["if", "for", "while"]
        if in_loop:
            kinds += ["break", "continue"]
        kinds.append("return")
        kind = draw(st.sampled_from(kinds))
        if kind == "assign":
            lines.append(draw(st.sampled_from(ASSIGNS)))
        elif kind in ("break", "continue", "return"):
            stmt = {"break": "break", "continue": "continue", "return": "return a, b, k"}[kind]
            lines += [f"if {draw(st.sampled_from(CONDS))}:", f"    {stmt}"]
        elif kind == "if":
            lines.append(f"if {draw(st.sampled_from(CONDS))}:")
            lines += ["    " + ln for ln in draw(block(depth + 1, in_loop, loop_ids))]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + ln for ln in draw(block(depth + 1, in_loop, loop_ids))]
        elif kind == "for":
            i = next(loop_ids)
            bound = draw(st.sampled_from(["n", "3", "gc.range(n)"]))
            it = bound if bound.startswith("gc.") else f"range({bound})"
            lines.append(f"for i{i} in {it}:")
            lines.append(f"    k = k + i{i}")
            lines += ["    " + ln for ln in draw(block(depth + 1, True, loop_ids))]
        else:
            j = next(loop_ids)
            lines += [f"j{j} = 0", f"while j{j} < 3 and a < 100.0:", f"    j{j} = j{j} + 1"]
            lines += ["    " + ln for ln in draw(block(depth + 1, True, loop_ids))]
    return lines


@st.composite
def program(draw):
    body = draw(block(0, False, itertools.count()))
    lines = ["def generated(x, y, n):", "    a = x", "    b = y", "    k = 0"]
    lines += ["    " + ln for ln in body] + ["    return a, b, k"]
    return "\n".join(lines) + "\n"


def materialize(src, **names):
    """Define `generated` from `src` with a source linecache can find (as a file would)."""
    name = f"<autograph-random-{next(_counter)}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {"gc": gc, **names}
    exec(compile(src, name, "exec"), ns)
    return ns["generated"]


def python_reference(fn, args):
    """The program in plain Python, with gc.range(n) meaning range(n)."""
    g = fn.__globals__
    saved = g["gc"]
    g["gc"] = type("gc_shim", (), {"range": staticmethod(range)})
    try:
        return fn(*args)
    finally:
        g["gc"] = saved


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program(), st.sampled_from([-1.5, 0.25, 2.0]), st.sampled_from([-0.5, 1.0, 3.0]),
       st.integers(0, 3))
def test_random_programs_agree(src, x, y, n):
    fn = materialize(src)
    args = (np.float32(x), np.float32(y), np.int32(n))
    expected = as_expected(python_reference(fn, args))
    got = gc.function(fn)(*to_graph_args(args))
    assert_same(got, expected, src)
    rebuilt = materialize(gc.autograph.to_code(fn), ag__=operators)
    assert_same(gc.function(rebuilt, autograph=False)(*to_graph_args(args)), expected, src)
