"""Errors raised while a compiled function runs name the user's file, line and function.

Every error is checked against the line marked `# <marker>` in this file: the message ends
with `at <this file>:<line> in <function>`, says it once, names the op, and chains the
original exception. On numba, kernels and compiled loops are forced (tiny shapes), and the
tests assert that compiled code ran where the failing op sits in a kernel or a loop.
"""
import contextlib

import numpy as np
import pytest

import graphc as gc
import loc_helpers
from graphc.errors import InvalidArgumentError

HERE = __file__


class Backend:
    def __init__(self, name, forced=None):
        self.name, self.forced = name, forced

    def function(self, fn, **kw):
        return gc.function(fn, backend=self.name, **kw)

    def expect(self, **kw):
        """On numba: assert the block ran compiled code (see conftest's numba_forced)."""
        return self.forced.expect(**kw) if self.forced else contextlib.nullcontext()


@pytest.fixture(params=["numpy", "numba"])
def backend(request):
    if request.param == "numpy":
        return Backend("numpy")
    return Backend("numba", request.getfixturevalue("numba_forced"))


def check_located(err, marker, function, op=None):
    return loc_helpers.check_located(err, HERE, marker, function, op)


def marker_line(marker):
    return loc_helpers.marker_line(HERE, marker)


# -- gather out of range ------------------------------------------------------------------

def gather_step(x, i):
    y = x * 2.0 + 1.0
    return gc.gather(y, i)  # gather-line


def test_gather_out_of_range(backend):
    f = backend.function(gather_step)
    with backend.expect(kernels=True):      # `x * 2.0 + 1.0` is a fused kernel
        np.testing.assert_array_equal(f(gc.constant([1.0, 2.0]), gc.constant([1])).numpy(), [5])
        with pytest.raises(InvalidArgumentError) as e:
            f(gc.constant([1.0, 2.0]), gc.constant([0, 5]))
    msg = check_located(e, "gather-line", "gather_step", op="gather")
    assert "index 5" in msg and "float32[2], int32[2]" in msg and "Fix:" in msg


# -- reshape whose shape is known only at run time ----------------------------------------

def reshape_step(x):
    y = x * 2.0 + 1.0
    return gc.reshape(y, [3, -1])  # reshape-line


def test_bad_reshape_at_run_time(backend):
    f = backend.function(reshape_step, input_signature=[gc.TensorSpec([None], gc.float32)])
    with backend.expect(kernels=True):
        assert f(gc.constant(np.zeros(6, np.float32))).shape == (3, 2)
        with pytest.raises(InvalidArgumentError) as e:
            f(gc.constant([1.0, 2.0]))
    msg = check_located(e, "reshape-line", "reshape_step", op="reshape")
    assert "float32[2]" in msg and "(2 elements) into shape [3,-1]" in msg


# -- broadcasting that fails inside a fused group -----------------------------------------

def add_step(x, y):
    z = x + y  # add-line
    return z * 2.0 + 1.0


def test_error_inside_a_fused_group_names_the_failing_op(numba_forced):
    spec = gc.TensorSpec([None], gc.float32)
    f = gc.function(add_step, backend="numba", input_signature=[spec, spec])
    ok = np.ones(3, np.float32)
    with numba_forced.expect(kernels=True):
        np.testing.assert_array_equal(f(ok, ok).numpy(), [5, 5, 5])
    with pytest.raises(InvalidArgumentError) as e:
        f(ok, np.ones(2, np.float32))
    msg = check_located(e, "add-line", "add_step", op="add")
    assert "float32[3], float32[2]" in msg


# -- an op inside a loop body / a branch: the body's line, not the loop's -----------------

def index_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i + 5]  # loop-index-line
    return s


def test_error_in_loop_body_names_the_body_line(backend):
    f = backend.function(index_in_loop)
    x = gc.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    with backend.expect(loops=True):
        assert float(f(x, gc.constant(2))) == 13.0
        with pytest.raises(InvalidArgumentError) as e:
            f(x, gc.constant(3))
    check_located(e, "loop-index-line", "index_in_loop", op="getitem")


def gather_in_branch_in_loop(x, n):
    s = 0.0
    for i in range(n):
        if x[i] > 0:
            s = s + gc.gather(x, i + 3)  # branch-gather-line
    return s


def test_error_in_branch_inside_loop_names_the_branch_line(backend):
    f = backend.function(gather_in_branch_in_loop)
    x = gc.constant([1.0, 2.0, 3.0, 4.0])
    with backend.expect(loops=True):
        assert float(f(x, gc.constant(1))) == 4.0
        with pytest.raises(InvalidArgumentError) as e:
            f(x, gc.constant(2))
    check_located(e, "branch-gather-line", "gather_in_branch_in_loop", op="gather")


def test_error_in_gc_cond_branch_names_the_lambda(backend):
    def f(x, p):
        return gc.cond(p, lambda: gc.gather(x, 9), lambda: x[0])  # cond-lambda-line
    g = backend.function(f)
    with backend.expect(loops=True):       # a top-level cond compiles like a loop
        assert float(g(gc.constant([1.0]), gc.constant(False))) == 1.0
        with pytest.raises(InvalidArgumentError) as e:
            g(gc.constant([1.0]), gc.constant(True))
    check_located(e, "cond-lambda-line", "<lambda>", op="gather")


# -- TensorArray element never written, its shape unknown (else it reads as zeros, as TF) --

def read_unwritten(n):
    ta = gc.TensorArray(gc.float32, size=n, element_shape=[None])
    return ta.read(1)  # ta-read-line


def test_reading_an_unwritten_tensor_array_element(backend):
    with pytest.raises(InvalidArgumentError) as e:
        backend.function(read_unwritten)(gc.constant(3))
    msg = check_located(e, "ta-read-line", "read_unwritten", op="tensor_list_read")
    assert "element 1" in msg and "not been written" in msg and "TensorArray(size=3)" in msg
    assert "not fully known" in msg


# -- failed assert: located once ----------------------------------------------------------

def asserts_positive(x):
    y = x * 2.0 + 1.0
    assert gc.reduce_all(y > 0), "y must be positive"  # assert-line
    return y


def test_failed_assert_is_located_once(backend):
    f = backend.function(asserts_positive)
    with backend.expect(kernels=True):
        np.testing.assert_array_equal(f(gc.constant([1.0, 2.0])).numpy(), [3, 5])
        with pytest.raises(InvalidArgumentError) as e:
            f(gc.constant([1.0, -3.0]))
    msg = check_located(e, "assert-line", "asserts_positive", op="assert")
    assert msg.startswith("assertion failed: y must be positive")


def test_eager_assert_names_the_line():
    with pytest.raises(InvalidArgumentError) as e:
        gc.autograph.to_graph(asserts_positive)(gc.constant([-3.0]))
    assert str(e.value).endswith(f"at {HERE}:{marker_line('assert-line')} in asserts_positive")


# -- integer ops that raise -----------------------------------------------------------------

def int_power(x, y):
    a = x * 2 + 1
    return a ** y  # int-pow-line


def test_integer_negative_power_raises_located(backend):
    """Integer pow is never fused (a kernel cannot raise; numba would give 0): the group
    stops before it and its numpy rule raises."""
    x = gc.constant([1, 2])
    with pytest.raises(ValueError):
        int_power(x, gc.constant([2, -1]))             # eager raises too
    f = backend.function(int_power)
    with backend.expect(kernels=True):                 # `x * 2 + 1` runs as a kernel
        np.testing.assert_array_equal(f(x, gc.constant([2, 3])).numpy(), [9, 125])
        with pytest.raises(InvalidArgumentError) as e:
            f(x, gc.constant([2, -1]))
    check_located(e, "int-pow-line", "int_power", op="pow")
    assert isinstance(e.value.__cause__, ValueError)


def int_power_loop(x, n):
    s = 0
    for i in range(n):
        s = s + x ** (2 - i)  # int-pow-loop-line
    return s


def test_integer_power_in_a_loop_raises_located(backend):
    """A compiled loop checks the exponent (numba alone would give 0) and reruns
    interpreted, which raises numpy's error at the user's line."""
    f = backend.function(int_power_loop)
    with backend.expect(loops=True):
        assert int(f(gc.constant(2), gc.constant(3))) == 4 + 2 + 1
        with pytest.raises(InvalidArgumentError) as e:
            f(gc.constant(2), gc.constant(4))             # 2 ** -1 in the last iteration
    check_located(e, "int-pow-loop-line", "int_power_loop", op="pow")
    assert isinstance(e.value.__cause__, ValueError)
