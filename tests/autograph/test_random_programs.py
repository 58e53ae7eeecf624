"""Hypothesis-generated small programs (nested if/while/for, break, continue, return, and/or/not,
chained comparisons; dict and list elements and attributes as loop/branch state; closures
reading loop state; enumerate/zip over tensors) run in plain Python on numpy values and
through @gc.function on tensors: results must match exactly, on the numpy backend and, for
a quarter of the programs, on the numba backend with kernels forced.

GRAPHC_RANDOM_EXAMPLES=N runs N examples instead of the default 40 (a longer hunt).
"""
import itertools
import linecache
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.autograph import operators
from .harness import as_expected, assert_same, bounded, live_ops, to_graph_args

_counter = itertools.count()
EXAMPLES = int(os.environ.get("GRAPHC_RANDOM_EXAMPLES", "40"))

# Multipliers are powers of two, so that a backend fusing a product into an add (FMA)
# rounds the same way as numpy: results are compared bit for bit.
ASSIGNS = ["a = a + y * 0.5", "b = b - a * 0.25", "a = a * 0.5", "k = k + 1", "b = b + 1.0",
           "a = -a if a > b else a + 0.5",
           # dict / list elements and attributes as state (issue 11 item 1)
           'st["c"] = st["c"] * 0.5 + a', 'st["n"] += 1', "lst[0] += b * 0.25",
           "lst[1] = lst[1] + k", "o.v = o.v - 0.5", "o.inner.w += a * 0.5",
           # closures reading names and items the loops change (item 2)
           "b = b + peek() * 0.25", "a = bump(a) * 0.5"]
CONDS = ["a > b", "a < 0.5", "x > 0 and b < 2.0", "not a > y", "k > 1 or a > 1.0", "b > x",
         # chained comparisons (item 4) and state in conditions
         "-1.0 < a <= b", "0 < k < 3", 'st["c"] > a', "o.v < 1.0 < o.inner.w + 2.0",
         "lst[1] > 2"]
RESULT = 'a, b, k, st["c"], st["n"], lst[0], lst[1], o.v, o.inner.w'
PREAMBLE = ["a = x", "b = y", "k = 0", 'st = {"c": y, "n": 0}', "lst = [0.5, 0]",
            "o = Box(v=y, inner=Box(w=0.0))", 'peek = lambda: a + st["c"]',
            "def bump(t):", "    return t + o.inner.w"]


class Box:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


@st.composite
def block(draw, depth, in_loop, loop_ids):
    n = draw(st.integers(1, 3))
    lines = []
    for _ in range(n):
        kinds = ["assign"] * 3
        if depth < 3:
            kinds += ["if", "for", "while", "iterate"]
        if in_loop:
            kinds += ["break", "continue"]
        kinds.append("return")
        kind = draw(st.sampled_from(kinds))
        if kind == "assign":
            lines.append(draw(st.sampled_from(ASSIGNS)))
        elif kind in ("break", "continue", "return"):
            stmt = {"break": "break", "continue": "continue", "return": f"return {RESULT}"}[kind]
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
        elif kind == "iterate":
            # enumerate / zip over tensors (item 5)
            i = next(loop_ids)
            if draw(st.booleans()):
                lines += [f"for i{i}, e{i} in enumerate(u):", f"    k = k + i{i}",
                          f"    a = a + e{i} * 0.5"]
            else:
                lines += [f"for e{i}, f{i} in zip(u, w):", f"    b = b + e{i} - f{i}"]
            lines += ["    " + ln for ln in draw(block(depth + 1, True, loop_ids))]
        else:
            j = next(loop_ids)
            test = draw(st.sampled_from([f"j{j} < 3", f"0 <= j{j} < 3"]))
            lines += [f"j{j} = 0", f"while {test} and a < 100.0:", f"    j{j} = j{j} + 1"]
            lines += ["    " + ln for ln in draw(block(depth + 1, True, loop_ids))]
    return lines


@st.composite
def program(draw):
    body = draw(block(0, False, itertools.count()))
    lines = ["def generated(x, y, n, u, w):"] + ["    " + ln for ln in PREAMBLE]
    lines += ["    " + ln for ln in body] + [f"    return {RESULT}"]
    return "\n".join(lines) + "\n"


def materialize(src, **names):
    """Define `generated` from `src` with a source linecache can find (as a file would)."""
    name = f"<autograph-random-{next(_counter)}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {"gc": gc, "Box": Box, **names}
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


U = np.array([0.5, -1.0, 1.5], np.float32)
W = np.array([2.0, 0.25, -0.5], np.float32)


def _run_numba(fn, args, expected, src, numba_forced):
    f = gc.function(fn, backend="numba")
    graph_args = to_graph_args(args)
    cf = f.get_concrete_function(*graph_args)
    if any(op.type in ("while", "cond") for op in live_ops(cf.graph)):
        with numba_forced.expect(loops=True):    # generated loops and ifs all lower
            got = f(*graph_args)
    else:
        got = f(*graph_args)     # straight-line code: single ops may stay numpy rules
    assert_same(got, expected, "numba:\n" + src)


@pytest.mark.filterwarnings(
    "error::graphc.autograph.operators.lint.TraceTimeSideEffectWarning")
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(program(), st.sampled_from([-1.5, 0.25, 2.0]), st.sampled_from([-0.5, 1.0, 3.0]),
       st.integers(0, 3), st.sampled_from([False, False, False, True]))
def test_random_programs_agree(numba_forced, src, x, y, n, with_numba):
    fn = materialize(src)
    args = (np.float32(x), np.float32(y), np.int32(n), U, W)
    expected = as_expected(python_reference(fn, args))
    with bounded("generated program:\n" + src):
        got = gc.function(fn, backend="numpy")(*to_graph_args(args))
    assert_same(got, expected, src)
    rebuilt = materialize(gc.autograph.to_code(fn), ag__=operators)
    with bounded("to_code of generated program:\n" + src):
        got = gc.function(rebuilt, autograph=False, backend="numpy")(*to_graph_args(args))
    assert_same(got, expected, "to_code:\n" + src)
    if with_numba:
        _run_numba(fn, args, expected, src, numba_forced)
