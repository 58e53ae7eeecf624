"""Recursive conversion, caching, do_not_convert, source-less functions, loops over ranges,
tensors and TensorArrays, and the runtime operators' Python fallbacks."""
import numpy as np
import pytest

import graphc as gc
from graphc.autograph import conversion, operators as ag
from graphc.runtime.graph import walk


def ops_of(f, *specs):
    return [op.type for op in walk(f.get_concrete_function(*specs).graph)]


def helper(x):
    if x > 0:
        return x
    return -x


def test_user_functions_are_converted_once_and_cached():
    a = gc.autograph.to_graph(helper)
    assert a is not helper and gc.autograph.to_graph(helper) is a
    assert gc.autograph.to_graph(a) is a        # converted code is not converted again


def test_graphc_numpy_and_stdlib_functions_are_not_converted():
    import json
    for f in (gc.reduce_sum, np.sum, json.dumps, print, len):
        assert conversion.converted_callable(f) is f


def test_do_not_convert_is_called_as_is():
    @gc.autograph.do_not_convert
    def plain(x):
        if x > 0:                 # would fail on a symbolic tensor
            return x
        return -x

    assert conversion.converted_callable(plain) is plain

    @gc.function
    def f(x):
        return plain(x)
    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError):
        f(gc.constant(1.0))


def test_do_not_convert_under_tfs_experimental_name():
    # TF 2 code spells it tf.autograph.experimental.do_not_convert
    assert gc.autograph.experimental.do_not_convert is gc.autograph.do_not_convert


def test_source_less_function_runs_unconverted_with_one_warning():
    ns = {}
    exec("def made(x):\n    return x * 2.0\n", ns)
    made = ns["made"]

    @gc.function
    def f(x):
        return made(x) + made(x)
    with pytest.warns(gc.autograph.AutoGraphWarning, match="made.*no source") as rec:
        assert f(gc.constant(1.0)).numpy() == 4.0
    assert len([w for w in rec if issubclass(w.category, gc.autograph.AutoGraphWarning)]) == 1


def test_methods_lambdas_and_closures_are_converted():
    class Model:
        def __init__(self):
            self.k = 2.0

        def step(self, x):
            if x > 0:
                return x * self.k
            return x

        @gc.function
        def run(self, x):
            y = self.step(x)
            g = lambda v: v + 1.0 if v > 0 else v - 1.0  # noqa: E731
            return g(y)

    m = Model()
    assert m.run(gc.constant(3.0)).numpy() == 7.0
    assert m.run(gc.constant(-3.0)).numpy() == -4.0


def test_recursion_of_converted_functions():
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @gc.function
    def f(x):
        return x * fact(5)
    assert f(gc.constant(2)).numpy() == 240


def loop_gc_range(n):
    s = 0
    for i in gc.range(n):
        s += i
    return s


def loop_builtin_range(n):
    s = 0
    for i in range(2, n, 2):
        s += i
    return s


@pytest.mark.parametrize("fn,expected", [(loop_gc_range, 45), (loop_builtin_range, 20)])
def test_range_loops_count_instead_of_materializing(fn, expected):
    f = gc.function(fn)
    assert f(gc.constant(10)).numpy() == expected
    types = ops_of(f, gc.TensorSpec([], gc.int32))
    assert "while" in types and "range" not in types


def test_gc_range_as_a_value_is_still_a_tensor():
    @gc.function
    def f(n):
        r = gc.range(n)
        return gc.reduce_sum(r * 2)
    assert f(gc.constant(4)).numpy() == 12


def sum_tensor_array(x):
    ta = gc.TensorArray(gc.float32, size=3)
    for i in range(3):
        ta = ta.write(i, x * float(i))
    s = 0.0
    for v in ta:
        s = s + v
    return s


def test_for_over_tensor_array_eager_and_traced():
    assert gc.autograph.to_graph(sum_tensor_array)(gc.constant(2.0)).numpy() == 6.0
    assert gc.function(sum_tensor_array)(gc.constant(2.0)).numpy() == 6.0


def test_for_over_tensor_array_in_graph_loop():
    @gc.function
    def f(x, n):
        ta = gc.TensorArray(gc.float32, size=n)
        for i in range(n):
            ta = ta.write(i, x[i] * 2.0)
        total = 0.0
        for v in ta:
            total += v
        return total
    assert f(gc.constant([1.0, 2.0, 3.0]), gc.constant(3)).numpy() == 12.0
    assert "tensor_list_read" in ops_of(f, gc.TensorSpec([3], gc.float32),
                                        gc.TensorSpec([], gc.int32))


def test_for_over_unknown_length_tensor():
    @gc.function(input_signature=[gc.TensorSpec([None], gc.float32)])
    def f(x):
        s = 0.0
        n = 0
        for v in x:
            s += v
            n += 1
        return s, n
    s, n = f(gc.constant([1.0, 2.0, 4.0]))
    assert s.numpy() == 7.0 and n.numpy() == 3


def test_len_of_unknown_dimension_is_a_tensor():
    @gc.function(input_signature=[gc.TensorSpec([None], gc.float32)])
    def f(x):
        return len(x) * 2
    assert f(gc.constant([1.0, 2.0])).numpy() == 4


def test_python_loop_with_tensor_break_guards_later_iterations():
    @gc.function
    def f(x):
        s = 0.0
        for k in [1.0, 2.0, 3.0, 4.0]:
            if s > x:
                break
            s = s + k
        return s
    for x in (0.5, 2.5, 100.0):
        ref = 0.0
        for k in [1.0, 2.0, 3.0, 4.0]:
            if ref > x:
                break
            ref += k
        assert f(gc.constant(x)).numpy() == ref


def test_while_switches_to_graph_when_condition_becomes_a_tensor():
    @gc.function
    def f(x):
        i = 0
        while i < 3 or i < x:
            i = i + gc.constant(1) if i >= 2 else i + 1
        return i
    assert f(gc.constant(5)).numpy() == 5
    assert f(gc.constant(1)).numpy() == 3


# -- operators on Python values (fallbacks) ---------------------------------------------
def test_operators_keep_python_semantics():
    assert ag.and_(0, lambda: 1 / 0) == 0
    assert ag.or_("a", lambda: 1 / 0) == "a"
    assert ag.and_(1, lambda: 2, lambda: 3) == 3
    assert ag.compare(1, "lt", 0, ("lt", lambda: 1 / 0)) is False
    assert ag.compare(1, "lt", 2, ("le", lambda: 2), ("in_", lambda: [3])) is False
    assert ag.compare(1, "lt", 2, ("le", lambda: 2), ("not_in", lambda: [3])) is True
    assert ag.not_([]) is True
    assert ag.if_exp(True, lambda: 1, lambda: 1 / 0) == 1
    box = {"y": 0, "i": 0, "s": 0}

    def get():
        return (box["y"],)

    def put(v):
        box["y"], = v
    ag.if_stmt(False, lambda: put((1,)), lambda: put((2,)), get, put, ("y",), 1)
    assert box["y"] == 2

    def step():
        box["i"] += 1
    ag.while_stmt(lambda: box["i"] < 3, step)
    assert box["i"] == 3

    def add(v):
        box["s"] += v
    ag.for_stmt([1, 2, 3], None, add)
    assert box["s"] == 6
    box["s"] = 0
    ag.for_stmt(range(10), lambda: box["s"] < 6, add)
    assert box["s"] == 6
    with pytest.raises(AssertionError, match="boom"):
        ag.assert_(False, lambda: "boom")
    with pytest.raises(UnboundLocalError, match="'q'"):
        ag.Undefined("q") + 1


def test_eager_tensors_take_python_paths():
    conv = gc.autograph.to_graph(helper)
    assert conv(gc.constant(-2.0)).numpy() == 2.0
    assert ag.not_(gc.constant(True)).numpy() == False  # noqa: E712
    with pytest.raises(gc.errors.InvalidArgumentError, match="bad"):
        ag.assert_(gc.constant([True, False]), lambda: "bad")


def test_nonlocal_and_global_assignments_in_converted_blocks():
    counter = {"n": 0}

    def outer(x):
        hits = 0

        def bump():
            nonlocal hits
            for _ in range(2):
                hits += 1
        bump()
        global _GLOBAL_SEEN
        if x > 0:
            _GLOBAL_SEEN = 1
        counter["n"] += 1
        return x + hits
    conv = gc.autograph.to_graph(outer)
    assert conv(3.0) == 5.0 and _GLOBAL_SEEN == 1


_GLOBAL_SEEN = 0


def test_future_annotations_of_the_module_apply_to_converted_code(tmp_path, monkeypatch):
    (tmp_path / "future_mod.py").write_text(
        "from __future__ import annotations\n"
        "def f(x):\n"
        "    def inner(v: NotDefinedAnywhere) -> Nope:\n"
        "        return v * 2.0 if v > 0 else v\n"
        "    return inner(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import future_mod
    assert float(gc.function(future_mod.f)(gc.constant(3.0))) == 6.0
    assert float(gc.function(future_mod.f)(gc.constant(-3.0))) == -3.0


def returns_in_loop_or_falls_off(xs):
    for v in xs:
        if v > 0:
            return v


def test_falling_off_the_end_after_lowered_returns_gives_none():
    conv = gc.autograph.to_graph(returns_in_loop_or_falls_off)
    assert conv([-1.0, 2.0]) == 2.0 and conv([-1.0]) is None

    @gc.function
    def f(x):
        return returns_in_loop_or_falls_off(x)
    with pytest.raises(ValueError, match="returns None on one path"):
        f(gc.constant([1.0, 2.0]))     # a tensor path returns a value, another returns None


def last_item(xs):
    for v in xs:
        last = v
    return last


def test_returning_a_never_assigned_variable_raises_like_python():
    conv = gc.autograph.to_graph(last_item)
    assert conv([1, 2]) == 2
    with pytest.raises(UnboundLocalError, match="'last'"):
        conv([])
    assert "return ag__.ld(last)" in gc.autograph.to_code(last_item)
