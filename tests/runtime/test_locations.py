"""Where the user's code is: every op records (file, line, function), and warnings and
leaked-tensor errors name the user's lines, each once."""
import warnings

import numpy as np
import pytest

import graphc as gc
from graphc.runtime.context import enclosing_function, format_location
from graphc.runtime.graph import walk
from loc_helpers import marker_line

HERE = __file__


def line(marker):
    return marker_line(HERE, marker)


def ops_of(f, *args, type_):
    return [op for op in walk(f.get_concrete_function(*args).graph) if op.type == type_]


# -- ops record the user's function -------------------------------------------------------

def outer_step(x):
    def inner(y):
        return gc.sqrt(y)  # inner-line
    return inner(x) + gc.cond(x > 0, lambda: gc.exp(x), lambda: x)  # lambda-line


def test_ops_record_the_innermost_user_function():
    f = gc.function(outer_step)
    x = gc.constant(1.0)
    (sqrt,) = ops_of(f, x, type_="sqrt")
    (exp,) = ops_of(f, x, type_="exp")
    assert sqrt.loc == (HERE, line("inner-line"), "inner")
    assert exp.loc == (HERE, line("lambda-line"), "<lambda>")
    assert format_location(sqrt.loc) == f"{HERE}:{line('inner-line')} in inner"
    assert format_location((HERE, 3)) == f"{HERE}:3"          # a 2-tuple still prints


def loop_step(x, n):
    for i in range(n):
        x = x * 2.0  # loop-body-line
    return x


def test_ops_in_converted_loop_bodies_name_the_users_def():
    # AutoGraph runs the body as a generated function: the name is the user's `def`
    f = gc.function(loop_step)
    (mul,) = ops_of(f, gc.constant(1.0), gc.constant(3), type_="multiply")
    assert mul.loc == (HERE, line("loop-body-line"), "loop_step")


def test_enclosing_function_prefers_the_running_code_name():
    assert enclosing_function(HERE, line("lambda-line")) == "<lambda>"   # innermost
    assert enclosing_function(HERE, line("lambda-line"), "outer_step") == "outer_step"
    assert enclosing_function("<no such file>", 1) is None


# -- leaked tensors -------------------------------------------------------------------------

def test_leaked_tensor_names_where_it_was_made_and_used():
    kept = []

    @gc.function
    def f(x):
        kept.append(x + 1.0)  # leak-made-line
        return x

    @gc.function
    def g(y):
        return y * kept[0]  # leak-used-line
    f(gc.constant(1.0))
    made = f"created at {HERE}:{line('leak-made-line')} in f"
    with pytest.raises(ValueError) as e:
        g(gc.constant(2.0))
    assert made in str(e.value) and "Fix:" in str(e.value)
    assert f"used at {HERE}:{line('leak-used-line')} in g" in str(e.value)
    with pytest.raises(ValueError) as e:
        kept[0] + 1.0  # leak-eager-line
    assert made in str(e.value)
    assert f"used at {HERE}:{line('leak-eager-line')} in test_leaked" in str(e.value)


# -- warnings say their location once -------------------------------------------------------

def retrace_warnings(call, times=1):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for n in range(1, 8):
            for _ in range(times):
                call(np.zeros(n, np.float32))
    return [w for w in rec if issubclass(w.category, gc.RetracingWarning)]


@pytest.mark.parametrize("how", ["call", "hot call", "get_concrete_function"])
def test_retracing_warning_points_at_the_calling_line_once(how):
    """'hot call': each shape three times, so the retrace comes from a call that went
    through the previous shape's generated entry first."""
    f = gc.function(lambda x: x)

    def call(x):
        if how != "get_concrete_function":
            return f(x)  # retrace-call-line
        return f.get_concrete_function(x)  # retrace-concrete-line
    ws = retrace_warnings(call, 3 if how == "hot call" else 1)
    assert how != "hot call" or f._entry is not None
    marker = "retrace-concrete-line" if how == "get_concrete_function" else "retrace-call-line"
    assert len(ws) == 1
    assert (ws[0].filename, ws[0].lineno) == (HERE, line(marker))
    assert HERE not in str(ws[0].message)
