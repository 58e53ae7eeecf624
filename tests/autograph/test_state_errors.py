"""Issue 11: a converted function computes what its Python computes, or raises an error at
the user's file:line that says what to change. Never a third outcome.

Constructs that cannot be graph state must raise, naming the line of the offending
statement: a list appended to (or extended) inside a tensor loop when the list comes from
outside the loop, a dict key or list index that is a tensor, a name defined in one branch
only and used after the `if`, a loop-defined name used after a loop that ran zero times
(a run-time InvalidArgumentError), `+`/`-` on bool tensors (a TypeError naming the
operator). The same programs on Python values run as Python.
"""
import functools

import numpy as np
import pytest

import graphc as gc
from .harness import as_expected, assert_same, bounded, marker_line

HERE = __file__
line_of = functools.partial(marker_line, HERE)
at = lambda marker: f"{HERE}:{line_of(marker)}"  # noqa: E731

X5 = np.array([0.5, 2.0, -1.0, 4.0, -3.0], np.float32)

pytestmark = pytest.mark.filterwarnings(
    "error::graphc.autograph.operators.lint.TraceTimeSideEffectWarning")


def _raises(fn, *args, error=(ValueError, TypeError)):
    with bounded(fn.__name__):
        with pytest.raises(error) as e:
            gc.function(fn)(*args)
    return str(e.value)


# -- lists mutated in ways that cannot be loop state ------------------------------------
def append_in_tensor_loop(x, n):
    out = []
    for i in range(n):
        out.append(x[i] * 2.0)  # append-loop
    return out


def test_append_in_tensor_loop_to_outside_list_names_the_line():
    msg = _raises(append_in_tensor_loop, gc.constant(X5), gc.constant(3))
    assert at("append-loop") in msg
    assert "TensorArray" in msg          # the fix: collect into a gc.TensorArray


def test_append_in_python_loop_is_python():
    got = gc.function(append_in_tensor_loop)(gc.constant(X5), 3)
    assert_same(got, as_expected(append_in_tensor_loop(X5, 3)))


def append_in_while(x):
    seen = [x]
    while x < 100.0:
        x = x * 2.0
        seen.append(x)  # append-while
    return x, len(seen)


def test_append_in_tensor_while_names_the_line():
    msg = _raises(append_in_while, gc.constant(1.0))
    assert at("append-while") in msg and "TensorArray" in msg


def extend_in_tensor_loop(x):
    acc = [x[0]]
    for v in x:
        acc.extend([v, v])  # extend-loop
    return acc[-1]


def test_extend_in_tensor_loop_names_the_line():
    msg = _raises(extend_in_tensor_loop, gc.constant(X5))
    assert at("extend-loop") in msg and "TensorArray" in msg


def append_in_nested_if_in_loop(x):
    picked = []
    for v in x:
        if v > 0:
            picked.append(v)  # append-nested
    return picked


def test_append_in_branch_inside_tensor_loop_names_the_line():
    msg = _raises(append_in_nested_if_in_loop, gc.constant(X5))
    assert at("append-nested") in msg and "TensorArray" in msg


# -- keys and indices that are tensors ----------------------------------------------------
def tensor_dict_key(x, n):
    d = {}
    for i in range(n):
        d[i] = x[i]  # tensor-key
    return d


def test_dict_key_that_is_a_tensor_names_the_line():
    msg = _raises(tensor_dict_key, gc.constant(X5), gc.constant(3))
    assert at("tensor-key") in msg


def test_dict_key_from_python_loop_is_python():
    got = gc.function(tensor_dict_key)(gc.constant(X5), 3)
    assert_same(got, as_expected(tensor_dict_key(X5, 3)))


def dict_key_modified_in_loop(x, n):
    d = {0: 0.0, 1: 0.0}
    k = 0
    for i in range(n):
        d[k] += x[i]  # moving-key
        k = 1 - k
    return d[0], d[1]


def test_dict_key_that_the_loop_changes_names_the_line():
    msg = _raises(dict_key_modified_in_loop, gc.constant(X5), gc.constant(4))
    assert at("moving-key") in msg


def tensor_list_index(x, n):
    acc = [0.0, 0.0, 0.0]
    for i in range(n):
        acc[i] = x[i]  # tensor-index
    return acc


def test_list_index_that_is_a_tensor_names_the_line():
    msg = _raises(tensor_list_index, gc.constant(X5), gc.constant(3))
    assert at("tensor-index") in msg


# -- names defined on some paths only ----------------------------------------------------
def one_branch_in_loop(x, n):
    for i in range(n):  # one-branch-loop
        if x[i] > 0:  # one-branch-in-loop
            t = x[i]
    return t


def test_name_defined_in_one_branch_inside_loop_is_a_trace_time_error():
    # not defined on every path of the loop body: not a loop-defined name (item 3)
    msg = _raises(one_branch_in_loop, gc.constant(X5), gc.constant(3), error=ValueError)
    # the `if` that leaves it undefined, or the loop whose body does not always define it
    assert "'t'" in msg and (at("one-branch-in-loop") in msg or at("one-branch-loop") in msg)


def one_branch_then_loop_state(x, n):
    s = 0.0
    if x[0] > 0:  # one-branch-if
        bonus = x[0]
    for i in range(n):
        s = s + x[i]
    return s + bonus


def test_name_defined_in_one_branch_used_after_a_later_loop():
    msg = _raises(one_branch_then_loop_state, gc.constant(X5), gc.constant(3),
                  error=ValueError)
    assert "'bonus'" in msg and at("one-branch-if") in msg


# -- loop-defined names after a zero-trip loop: a run-time error ------------------------
def last_after_loop(x, n):
    for i in range(n):  # zero-trip-for
        last = x[i] * 2.0
    return last  # zero-trip-use


def test_loop_defined_name_after_zero_trip_loop_is_a_runtime_error():
    f = gc.function(last_after_loop)
    assert_same(f(gc.constant(X5), gc.constant(2)), np.float32(4.0))
    with bounded("last_after_loop"):
        with pytest.raises(gc.errors.InvalidArgumentError) as e:
            f(gc.constant(X5), gc.constant(0))
    msg = str(e.value)
    assert "'last'" in msg and at("zero-trip-for") in msg
    assert msg.endswith(f"at {at('zero-trip-use')} in last_after_loop")
    assert msg.count(at("zero-trip-use")) == 1
    assert f.tracing_count == 1          # the same trace: a check when the graph runs


def while_defined_after_zero_trips(x):
    while x < 10.0:  # zero-trip-while
        y = x * 3.0
        x = y
    return y


def test_while_defined_name_after_zero_trip_loop_is_a_runtime_error():
    f = gc.function(while_defined_after_zero_trips)
    assert_same(f(gc.constant(2.0)), np.float32(18.0))
    with bounded("while_defined_after_zero_trips"):
        with pytest.raises(gc.errors.InvalidArgumentError) as e:
            f(gc.constant(50.0))
    assert "'y'" in str(e.value) and HERE in str(e.value)


def inner_then_outer(m):
    for row in m:  # nested-outer
        for v in row:  # nested-inner
            inner = v
        outer = inner * 10.0  # nested-use
    return inner, outer


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_name_first_defined_in_an_inner_loop_is_checked_in_the_outer_body(backend):
    # the inner loop running zero times must not leave a zero behind: Python raises
    # UnboundLocalError at the use in the outer body, the graph InvalidArgumentError there
    f = gc.function(inner_then_outer, backend=backend)
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same(f(gc.constant(m)), inner_then_outer(m))
    with bounded("inner_then_outer"):
        with pytest.raises(gc.errors.InvalidArgumentError) as e:
            f(gc.constant(np.ones((2, 0), np.float32)))
    msg = str(e.value)
    assert "'inner'" in msg and f"{HERE}:{line_of('nested-use')}" in msg
    with pytest.raises(UnboundLocalError):
        inner_then_outer(np.ones((2, 0), np.float32))
    with pytest.raises(gc.errors.InvalidArgumentError) as e:     # no outer iteration at all
        f(gc.constant(np.ones((0, 3), np.float32)))
    assert "'inner'" in str(e.value) or "'outer'" in str(e.value)


# -- + and - on bool tensors -----------------------------------------------------------------
def bool_plus(x, y):
    return (x > 0) + (y > 0)  # bool-plus


def bool_minus(x, y):
    return (x > 0) - (y > 0)  # bool-minus


@pytest.mark.parametrize("fn,op,marker", [(bool_plus, "+", "bool-plus"),
                                          (bool_minus, "-", "bool-minus")])
def test_plus_and_minus_on_bool_tensors_are_type_errors(fn, op, marker):
    with pytest.raises(TypeError) as e:
        gc.function(fn)(gc.constant(1.0), gc.constant(-1.0))
    msg = str(e.value)
    assert "bool" in msg and at(marker) in msg
    assert any(q.format(op) in msg for q in ("'{}'", "`{}`", '"{}"', " {} ")), msg
    with pytest.raises(TypeError):       # eagerly too, as in TF
        fn(gc.constant(1.0), gc.constant(-1.0))
