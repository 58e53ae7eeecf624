"""Issue 11's rule on constructs where either answer is acceptable: the converted function
computes what its Python computes, or raises a ValueError/TypeError naming the user's
file:line (one of the lines marked for that program). A wrong value, a warning, a hang or
an error pointing elsewhere is the third outcome and fails.
"""
import functools

import numpy as np
import pytest

import graphc as gc
from .harness import as_expected, assert_same, bounded, marker_line, to_graph_args

HERE = __file__
line_of = functools.partial(marker_line, HERE)

X5 = np.array([0.5, 2.0, -1.0, 4.0, -3.0], np.float32)

pytestmark = pytest.mark.filterwarnings(
    "error::graphc.autograph.operators.lint.TraceTimeSideEffectWarning")


def computes_or_names_line(fn, args, *markers):
    expected = as_expected(fn(*args))
    try:
        with bounded(fn.__name__):
            got = gc.function(fn)(*to_graph_args(args))
    except (ValueError, TypeError) as e:
        lines = [f"{HERE}:{line_of(m)}" for m in markers]
        assert any(ln in str(e) for ln in lines), \
            f"{fn.__name__}: error without the user's line ({', '.join(lines)}): {e}"
        return
    assert_same(got, expected, fn.__name__)


class Counter:
    def __init__(self, start):
        self.value = start
        self.ups = 0

    def step(self, x):
        if x > self.value:  # counter-if
            self.value += 1.0  # counter-up
            self.ups += 1
        else:
            self.value -= 1.0  # counter-down

    def run(self, xs):
        for v in xs:  # counter-loop
            self.step(v)  # counter-call
        return self.value, self.ups


def state_changed_by_a_method_called_in_a_loop(x):
    return Counter(0.0).run(x)


def test_attribute_state_changed_through_a_call_inside_a_tensor_loop():
    computes_or_names_line(state_changed_by_a_method_called_in_a_loop, (X5,),
                           "counter-up", "counter-down", "counter-loop", "counter-call", "counter-if")


def nonlocal_in_helper_called_in_loop(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v  # nonlocal-assign
    for v in x:  # nonlocal-loop
        add(v)  # nonlocal-call
    return total


def test_nonlocal_state_changed_through_a_call_inside_a_tensor_loop():
    computes_or_names_line(nonlocal_in_helper_called_in_loop, (X5,),
                           "nonlocal-assign", "nonlocal-loop", "nonlocal-call")


def append_in_tensor_if(x):
    out = [x]
    if x > 0:  # append-if
        out.append(x * 2.0)  # append-in-if
    return out[-1]


def test_append_in_a_tensor_branch():
    computes_or_names_line(append_in_tensor_if, (np.float32(1.0),), "append-if",
                           "append-in-if")
    computes_or_names_line(append_in_tensor_if, (np.float32(-1.0),), "append-if",
                           "append-in-if")


def late_binding_closures(x, n):
    fs = []
    for i in range(n):  # late-loop
        fs.append(lambda: x[i])  # late-append
    return fs[0]()


def test_closures_made_in_a_tensor_loop_and_called_after_it():
    computes_or_names_line(late_binding_closures, (X5, np.int32(3)), "late-loop",
                           "late-append")


def setdefault_in_loop(x):
    d = {"s": 0.0}
    for v in x:  # setdefault-loop
        d["s"] = d.setdefault("s", 0.0) + v  # setdefault-line
    return d["s"]


def test_dict_method_reading_state_inside_a_tensor_loop():
    computes_or_names_line(setdefault_in_loop, (X5,), "setdefault-loop", "setdefault-line")


def pop_in_loop(x):
    d = {"a": 1.0, "b": 2.0}
    s = 0.0
    for v in x:  # pop-loop
        s = s + v + d.pop("a", 0.0)  # pop-line
    return s, len(d)


def test_dict_pop_inside_a_tensor_loop():
    computes_or_names_line(pop_in_loop, (X5,), "pop-loop", "pop-line")


def del_item_in_branch(x):
    d = {"a": x, "b": x * 2.0}
    if x > 0:  # del-if
        del d["a"]  # del-line
    return len(d)


def test_del_item_in_a_tensor_branch():
    for x in (np.float32(1.0), np.float32(-1.0)):
        computes_or_names_line(del_item_in_branch, (x,), "del-if", "del-line")


def dict_assigned_new_key_in_loop(x):
    d = {}
    d["s"] = 0.0
    for v in x:  # new-key-loop
        d["t"] = v  # new-key-line
        d["s"] += v
    return d["s"], d["t"]


def test_key_first_set_inside_a_tensor_loop():
    computes_or_names_line(dict_assigned_new_key_in_loop, (X5,), "new-key-loop",
                           "new-key-line")
