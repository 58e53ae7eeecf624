"""Every AutoGraph error names the variable and the user's file:line."""
import functools
import traceback

import numpy as np
import pytest

import graphc as gc

from .harness import marker_line

HERE = __file__

line_of = functools.partial(marker_line, HERE)


def defined_in_one_branch(x):
    if x > 0:  # one-branch-if
        y = x * 2.0
    return y


def test_variable_defined_in_one_branch_names_it_and_the_if_line():
    with pytest.raises(ValueError) as e:
        gc.function(defined_in_one_branch)(gc.constant(1.0))
    msg = str(e.value)
    assert "'y'" in msg and f"{HERE}:{line_of('one-branch-if')}" in msg
    assert "both branches" in msg


def defined_in_else_only(x):
    if x > 0:  # else-only-if
        pass
    else:
        z = x
    return z


def test_variable_defined_only_in_else_branch():
    with pytest.raises(ValueError) as e:
        gc.function(defined_in_else_only)(gc.constant(1.0))
    assert "'z'" in str(e.value) and f":{line_of('else-only-if')}" in str(e.value)
    assert "false branch" in str(e.value)


def test_one_branch_variable_is_fine_on_python_condition():
    assert defined_in_one_branch(np.float32(1.0)) == 2.0
    assert gc.function(defined_in_one_branch)(1.0).numpy() == 2.0


def dtype_changes(x, n):
    s = 0  # int32 on entry
    for i in range(n):  # dtype-for
        s = gc.cast(s, gc.float32) + x
    return s


def test_loop_variable_changing_dtype_names_it_and_the_loop_line():
    with pytest.raises(ValueError) as e:
        gc.function(dtype_changes)(gc.constant(1.5), gc.constant(3))
    msg = str(e.value)
    assert "'s'" in msg and f"{HERE}:{line_of('dtype-for')}" in msg and "dtype" in msg


def shape_changes(x):
    i = 0
    while i < 3:  # shape-while
        x = gc.concat([x, x], 0)
        i = i + gc.constant(1)
    return x


def test_loop_variable_changing_shape_names_it_and_the_loop_line():
    with pytest.raises(ValueError) as e:
        gc.function(shape_changes)(gc.constant([1.0, 2.0]))
    msg = str(e.value)
    assert "'x'" in msg and f":{line_of('shape-while')}" in msg and "shape" in msg


def undefined_before_loop(x, n):
    for i in range(n):  # undefined-for
        last = x * 2.0
    return last


def test_loop_variable_first_assigned_in_tensor_loop():
    # assigned on every path of the body: the loop's last value, as in Python
    f = gc.function(undefined_before_loop)
    assert float(f(gc.constant(1.0), gc.constant(3))) == 2.0
    # zero iterations: Python raises UnboundLocalError, the graph an error naming the
    # variable and the loop's line
    with pytest.raises(gc.errors.InvalidArgumentError) as e:
        f(gc.constant(1.0), gc.constant(0))
    msg = str(e.value)
    assert "'last'" in msg and f":{line_of('undefined-for')}" in msg
    assert "before the loop" in msg


def failing_assert(x):
    assert x > 0, "x must be positive"  # assert-line
    return x


def test_graph_assert_raises_invalid_argument_with_message_and_line():
    f = gc.function(failing_assert)
    assert f(gc.constant(2.0)).numpy() == 2.0
    with pytest.raises(gc.errors.InvalidArgumentError) as e:
        f(gc.constant(-2.0))
    msg = str(e.value)
    assert "x must be positive" in msg and f"{HERE}:{line_of('assert-line')}" in msg
    assert f.tracing_count == 1          # a run-time check, not a retrace


def test_python_assert_stays_python():
    with pytest.raises(AssertionError, match="x must be positive"):
        gc.function(failing_assert)(-1.0)


def assert_no_message(x):
    assert gc.reduce_all(x > 0)  # assert-nomsg
    return x


def test_graph_assert_without_message_names_line():
    with pytest.raises(gc.errors.InvalidArgumentError) as e:
        gc.function(assert_no_message)(gc.constant([1.0, -1.0]))
    assert f":{line_of('assert-nomsg')}" in str(e.value)


def bad_op_in_branch(x):
    if x[0] > 0:
        y = x + gc.constant([1.0, 2.0, 3.0])  # bad-op
    else:
        y = x
    return y


def test_trace_time_error_in_converted_code_points_at_user_line():
    with pytest.raises((ValueError, TypeError)) as e:
        gc.function(bad_op_in_branch)(gc.constant([1.0, 2.0]))
    frames = traceback.extract_tb(e.value.__traceback__)
    user = [f for f in frames if f.filename == HERE]
    assert user and user[-1].lineno == line_of("bad-op")
    assert "graphc" not in user[-1].filename.split("/tests/")[0].rsplit("/", 1)[-1] or True
    assert "y = x + gc.constant" in user[-1].line


def python_error_in_loop(x, n):
    s = x
    for i in range(n):
        s = s + undefined_name_here  # noqa: F821  # name-error
    return s


def test_python_exception_in_converted_loop_shows_user_line():
    with pytest.raises(NameError) as e:
        gc.function(python_error_in_loop)(gc.constant(1.0), gc.constant(2))
    frames = traceback.extract_tb(e.value.__traceback__)
    assert frames[-1].filename == HERE and frames[-1].lineno == line_of("name-error")


def runtime_error_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i + 5]  # runtime-index
    return s


def test_ops_traced_in_converted_loops_record_the_user_line():
    from graphc.runtime.graph import walk
    f = gc.function(runtime_error_in_loop)
    cf = f.get_concrete_function(gc.TensorSpec([2], gc.float32), gc.TensorSpec([], gc.int32))
    ops = [op for op in walk(cf.graph) if op.type == "getitem"]
    assert ops and all(op.loc == (HERE, line_of("runtime-index"), "runtime_error_in_loop")
                       for op in ops)
    with pytest.raises(gc.errors.InvalidArgumentError) as e:
        f(gc.constant([1.0, 2.0]), gc.constant(2))
    assert f"{HERE}:{line_of('runtime-index')}" in str(e.value)      # a run-time error
    assert str(e.value).count(HERE) == 1


def return_in_one_branch_of_loop_ok(x):
    for v in x:
        if v > 10.0:
            return v
    return -1.0


def test_return_only_in_some_paths_inside_tensor_loop():
    f = gc.function(return_in_one_branch_of_loop_ok)
    assert f(gc.constant([1.0, 20.0, 30.0])).numpy() == 20.0
    assert f(gc.constant([1.0, 2.0])).numpy() == -1.0


def while_else_var_one_branch(x):
    i = 0
    while i < 3:
        if x > 0:  # loop-one-branch
            t = x
        i += 1
        x = x - t
    return x


def test_variable_defined_in_one_branch_inside_loop():
    with pytest.raises(ValueError) as e:
        gc.function(while_else_var_one_branch)(gc.constant(1.0))
    msg = str(e.value)
    assert "'t'" in msg and f":{line_of('loop-one-branch')}" in msg


def string_in_tensor_branch(x):
    if x > 0:  # string-if
        mode = "up"
    else:
        mode = "down"
    return x, mode


def test_non_tensor_branch_output_names_variable_and_line():
    with pytest.raises(TypeError) as e:
        gc.function(string_in_tensor_branch)(gc.constant(1.0))
    msg = str(e.value)
    assert "'mode'" in msg and f":{line_of('string-if')}" in msg and "str" in msg


def object_loop_var(x, n):
    label = "start"
    for i in range(n):  # object-loop
        label = "step"
        x = x + 1.0
    return x, label


def test_non_tensor_loop_variable_names_variable_and_line():
    with pytest.raises(TypeError) as e:
        gc.function(object_loop_var)(gc.constant(1.0), gc.constant(2))
    msg = str(e.value)
    assert "'label'" in msg and f":{line_of('object-loop')}" in msg


def assert_on_vector(x):
    assert x > 0.0, "all positive"  # assert-vector
    return x


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_assert_on_several_elements_is_an_error_not_an_all_reduce(backend):
    # Python: `assert t` with t of two elements raises ("truth value ... is ambiguous")
    # even when every element is true; the graph reduced with all() and passed silently.
    with pytest.raises(ValueError, match="ambiguous"):
        assert_on_vector(gc.constant([1.0, 2.0]))
    with pytest.raises(TypeError) as e:
        gc.function(assert_on_vector, backend=backend)(gc.constant([1.0, 2.0]))
    msg = str(e.value)
    assert "scalar" in msg and "reduce_all" in msg
    assert f"{HERE}:{line_of('assert-vector')}" in msg


def range_with_step(d):
    s = 0
    for i in range(0, 10, d):  # range-step
        s += i
    return s


def enumerate_range_with_step(d):
    s = 0
    for j, i in enumerate(range(0, 10, d)):  # enumerate-range-step
        s += i * j
    return s


def gc_range_with_step(d):
    s = 0
    for i in gc.range(0, 10, d):  # gc-range-step
        s += i
    return s


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("fn,marker", [(range_with_step, "range-step"),
                                       (enumerate_range_with_step, "enumerate-range-step"),
                                       (gc_range_with_step, "gc-range-step")])
def test_range_with_a_zero_tensor_step_raises(backend, fn, marker):
    # Python: range(0, 10, 0) raises ValueError; the counter loop ran zero times and
    # returned 0 silently
    with pytest.raises(ValueError, match="must not be zero"):
        fn(0)
    f = gc.function(fn, backend=backend)
    assert int(f(gc.constant(3))) == fn(3)
    with pytest.raises(gc.errors.InvalidArgumentError, match="must not be zero") as e:
        f(gc.constant(0))
    assert f"{HERE}:{line_of(marker)}" in str(e.value)
    assert f.tracing_count == 1


def python_zero_step_tensor_bound(n):
    s = 0
    for i in range(n, 10, 0):
        s += i
    return s


def test_range_with_a_python_zero_step_and_tensor_bound_raises_at_once():
    with pytest.raises(ValueError, match="arg 3 must not be zero"):
        gc.function(python_zero_step_tensor_bound)(gc.constant(0))


def first_above(x):
    for i in range(3):
        if x > i:
            return 1
    return 2.0  # float-return


def float_into_int_var(x):
    y = gc.constant(0)
    if x > 0:  # float-into-int
        y = 2.0
    return y


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_python_float_beside_an_int_tensor_in_a_tensor_if_is_an_error(backend):
    # Python: first_above(-1.0) returns the float 2.0 (float32); the graph gave int32 2,
    # the Python float taking the other branch's int32 (2.5 failed with no name or line)
    assert first_above(gc.constant(-1.0)) == 2.0 and isinstance(first_above(-1.0), float)
    for fn, marker, name in ((first_above, "float-return", "retval_"),
                             (float_into_int_var, "float-into-int", "'y'")):
        with pytest.raises(gc.errors.DtypeChangeError) as e:
            gc.function(fn, backend=backend)(gc.constant(-1.0))
        msg = str(e.value)
        assert name in msg and "Python float 2.0" in msg and "int32" in msg
        assert f"{HERE}:" in msg
    # a Python int beside a float tensor still takes the tensor's dtype (exact)
    assert gc.function(lambda x: x if x > 0 else 0, backend=backend)(
        gc.constant(-1.0)).dtype == gc.float32


def sum_from_int(x):
    s = 0
    for v in x:  # int-sum
        s += v
    return s


def count_times(x, n):
    i = 0
    while i < n:  # int-counter
        x = x * i
        i += 1
    return x


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_loop_variable_started_as_a_python_int_and_mixed_with_floats_is_named(backend):
    """API.md: a loop variable whose dtype changes is a ValueError naming it and the loop's
    line (Python gives a float here; the loop carries an int32). Also a TypeError, as TF's."""
    x = np.array([1.5, 2.0], np.float32)
    assert sum_from_int(gc.constant(x)).numpy() == np.float32(3.5)      # eagerly: Python
    cases = ((sum_from_int, (x,), "int-sum", "'s'"),
             (count_times, (gc.constant(1.5), gc.constant(3)), "int-counter", "'i'"))
    for fn, args, marker, name in cases:
        with pytest.raises(ValueError) as e:
            gc.function(fn, backend=backend)(*args)
        assert isinstance(e.value, TypeError)
        msg = str(e.value)
        assert f"loop variable {name}" in msg and "starts as a Python int" in msg
        assert f"{HERE}:{line_of(marker)}" in msg and "= 0.0" in msg


def deleted_in_one_branch(x):
    y = x * 2.0
    if x > 0:  # del-if
        del y
    return y


def test_variable_deleted_in_one_branch_names_it_and_the_if_line():
    # TF: "'y' must also be initialized in the else branch" (a ValueError at the `if`)
    with pytest.raises(ValueError) as e:
        gc.function(deleted_in_one_branch)(gc.constant(1.0))
    assert "'y'" in str(e.value) and f"{HERE}:{line_of('del-if')}" in str(e.value)


def int_start_float_step(n):
    s = 0
    for i in range(n):  # int-float-for
        s = s + 0.5
    return s


def test_python_int_loop_variable_mixed_with_python_float_names_it():
    # Python gives 2.5; TF raises a TypeError from AddV2 (int32 vs float32) naming no
    # variable. graphc: the DtypeChangeError (ValueError and TypeError) naming 's'.
    assert int_start_float_step(5) == 2.5
    with pytest.raises(ValueError) as e:
        gc.function(int_start_float_step)(gc.constant(5))
    assert isinstance(e.value, TypeError)
    assert "'s'" in str(e.value) and f"{HERE}:{line_of('int-float-for')}" in str(e.value)
