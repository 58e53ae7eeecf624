"""The reference interpreter's two runners: generated straight-line code (graphs up to
STRAIGHT_MAX_OPS ops) and the loop over steps (bigger graphs) compute the same values and
raise the same located errors; edge cases of the generated code are checked directly."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.runtime import executor
from graphc.runtime.graph import Operation, Value


def _both_runners(fn, monkeypatch, *args):
    """fn traced on the numpy backend, called once with straight code and once with the loop
    runner (a fresh trace each, so each compiles its own plan)."""
    results = []
    for cap in (executor.STRAIGHT_MAX_OPS, 0):
        monkeypatch.setattr(executor, "STRAIGHT_MAX_OPS", cap)
        f = gc.function(fn, backend="numpy", autograph=False)
        try:
            results.append(("ok", f(*args)))
        except InvalidArgumentError as e:
            results.append(("error", e))
        code = f.concrete_functions()[0].graph._plan.__code__
        assert code.co_filename.startswith("<graphc plan") == (cap > 0)
    return results


def _chain(a, b):
    c = a * b + a
    d = gc.exp(c) - b / a            # a == 0: inf/nan follow numpy
    parts = gc.unstack(gc.stack([c, d]))
    return {"sum": parts[0] + parts[1], "c": c, "a": a}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(allow_nan=True, width=32), min_size=3, max_size=3),
       st.lists(st.floats(allow_nan=True, width=32), min_size=3, max_size=3))
def test_straight_code_matches_the_loop_runner(xs, ys):
    a, b = gc.constant(np.float32(xs)), gc.constant(np.float32(ys))
    with pytest.MonkeyPatch.context() as mp:
        (k1, straight), (k2, loop) = _both_runners(_chain, mp, a, b)
    assert k1 == k2 == "ok"
    with np.errstate(all="ignore"):
        c = a.numpy() * b.numpy() + a.numpy()
        want = c + (np.exp(c) - b.numpy() / a.numpy())
    for got in (straight, loop):
        np.testing.assert_array_equal(got["sum"].numpy(), want)
        np.testing.assert_array_equal(got["c"].numpy(), c)
        np.testing.assert_array_equal(got["a"].numpy(), a.numpy())


def _gather_late(x, i):
    y = x + 1.0
    z = y * 2.0
    return gc.gather(z, i) + y[0]  # late-gather


def test_a_failing_step_is_named_the_same_by_both_runners(monkeypatch):
    x, i = gc.constant([1.0, 2.0]), gc.constant([0, 7])
    (k1, e1), (k2, e2) = _both_runners(_gather_late, monkeypatch, x, i)
    assert k1 == k2 == "error"
    assert str(e1) == str(e2)
    assert "gather" in str(e1) and "float32[2], int32[2]" in str(e1)
    assert f"{__file__}" in str(e1) or "test_executor.py" in str(e1)
    assert e1.op.type == "gather" and e1.__cause__ is not None


class _Op:
    """The parts of an Operation that located() reads."""
    def __init__(self, type_):
        self.type, self.name, self.loc = type_, type_ + "_0", None
        self.outputs = []


def test_generated_code_edge_cases():
    """Multi-output steps ignore extra results (as zip does), steps with no outputs run
    for their effect, an input returned as is and twice, and freed slots."""
    seen = []
    steps = [
        (lambda a, b: (a + b, a - b, "extra"), (0, 1), (2, 3), _Op("split"), ()),
        (lambda x: seen.append(x), (2,), (), _Op("effect"), ()),
        (lambda x, y: x * y, (2, 3), (4,), _Op("mul"), (2, 3)),
    ]
    run = executor.straight_runner(steps, 2, (4, 0, 0))
    assert run([5, 3]) == [16, 5, 5]
    assert seen == [8]
    assert executor.straight_runner([], 1, (0,))([7]) == [7]


def test_generated_code_locates_the_step_that_failed():
    def boom(x):
        raise ValueError("bad value")
    steps = [(lambda a: a + 1, (0,), (1,), _Op("add"), ()),
             (boom, (1,), (2,), _Op("sqrt"), ()),
             (lambda a: a, (2,), (3,), _Op("identity"), (2,))]
    with pytest.raises(InvalidArgumentError, match=r"sqrt failed at run time: ValueError: "
                       r"bad value.*op sqrt 'sqrt_0' on int\)") as e:
        executor.straight_runner(steps, 1, (3,))([1])
    assert isinstance(e.value.__cause__, ValueError)


def test_big_graphs_take_the_loop_runner(monkeypatch):
    monkeypatch.setattr(executor, "STRAIGHT_MAX_OPS", 2)
    g = gc.function(lambda a: a + 1.0 + 2.0 + 3.0, backend="numpy", autograph=False)
    assert float(g(gc.constant(1.0))) == 7.0
    run = g.concrete_functions()[0].graph._plan
    assert run.__code__.co_filename != "<graphc plan <lambda>>"
    f = gc.function(lambda a: a + 1.0, backend="numpy", autograph=False)
    assert float(f(gc.constant(1.0))) == 2.0
    assert f.concrete_functions()[0].graph._plan.__code__.co_filename.startswith("<graphc plan")
