"""Bad inputs raise a graphc error naming the op or the argument, and change no state.

Each case of issue 12's list: trace-time `TypeError`/`ValueError`, run-time
`InvalidArgumentError` (integer division by zero, labels outside the classes, a value of
another shape assigned to a Variable), on the numpy backend and on numba with kernels and
compiled loops forced (asserting compiled code ran where the failing op sits beside it).
"""
import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError, ResourceExhaustedError


class Backend:
    def __init__(self, name, forced=None):
        self.name, self.forced = name, forced

    def function(self, fn, **kw):
        return gc.function(fn, backend=self.name, **kw)

    def expect(self, **kw):
        return self.forced.expect(**kw) if self.forced else contextlib.nullcontext()


@pytest.fixture(params=["numpy", "numba"])
def backend(request):
    if request.param == "numpy":
        return Backend("numpy")
    return Backend("numba", request.getfixturevalue("numba_forced"))


# -- Variables never change shape --------------------------------------------------------

@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
@pytest.mark.parametrize("value_shape", [(3, 2), (1, 3), (6,)])
def test_eager_assign_of_another_shape_is_refused(method, value_shape):
    v = gc.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(ValueError, match=f"{method}: variable has shape \\[2, 3\\]"):
        getattr(v, method)(np.ones(value_shape, np.float32))
    assert v.shape == (2, 3)
    np.testing.assert_array_equal(v.numpy(), np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_traced_assign_with_unknown_dim_checks_the_shape_when_it_runs(backend, method):
    v = gc.Variable(np.zeros(3, np.float32), name="w")

    def put(x):
        getattr(v, method)(x)
        return v.read_value() * 2.0

    f = backend.function(put, input_signature=[gc.TensorSpec([None])])
    np.testing.assert_array_equal(f(gc.constant([1.0, 2.0, 3.0])).numpy(),
                                  [2, 4, 6] if method != "assign_sub" else [-2, -4, -6])
    before = v.numpy()
    for bad in ([1.0], [1.0, 2.0, 3.0, 4.0], []):
        with pytest.raises(InvalidArgumentError) as e:
            f(gc.constant(bad, gc.float32))
        msg = str(e.value)
        assert f"variable 'w' has shape [3] but the value has shape [{len(bad)}]" in msg, msg
        assert "test_inputs.py" in msg and "in put" in msg, msg
        assert v.shape == (3,)
        np.testing.assert_array_equal(v.numpy(), before)


def test_gemm_fused_update_checks_the_shape_too(numba_forced):
    """`w.assign_sub(lr * a @ b)` (a gemm update when large enough, else the ops one by
    one) refuses a product of another shape and leaves `w` as it was."""
    w = gc.Variable(np.ones((4, 4), np.float32))

    @gc.function(backend="numba", input_signature=[gc.TensorSpec([None, 4]),
                                                   gc.TensorSpec([4, None])])
    def step(a, b):
        w.assign_sub(0.5 * gc.matmul(a, b))
        return w.read_value()

    a, b = np.ones((4, 4), np.float32), np.eye(4, dtype=np.float32)
    np.testing.assert_allclose(step(a, b).numpy(), 1 - 0.5 * a @ b)
    with pytest.raises(InvalidArgumentError, match="has shape \\[4, 4\\] but the value"):
        step(np.ones((4, 4), np.float32), np.ones((4, 5), np.float32))
    assert w.shape == (4, 4)
    np.testing.assert_allclose(w.numpy(), 1 - 0.5 * a @ b)


# -- integer division by zero ------------------------------------------------------------

def int_div(x, y):
    a = x * 2 + 1
    return a // y, a % y


@pytest.mark.parametrize("dtype", [gc.int32, gc.int64])
def test_integer_division_by_zero_raises(backend, dtype):
    x = gc.constant([1, 2, 3], dtype)
    for op in (lambda: x // gc.constant([1, 0, 1], dtype), lambda: x % gc.constant(0, dtype)):
        with pytest.raises(InvalidArgumentError, match="integer division by zero"):
            op()
    f = backend.function(int_div)
    with backend.expect(kernels=True):       # `x * 2 + 1` is a kernel beside the checked ops
        q, r = f(x, gc.constant([2, -2, 4], dtype))
    np.testing.assert_array_equal(q.numpy(), np.array([3, 5, 7]) // [2, -2, 4])
    np.testing.assert_array_equal(r.numpy(), np.array([3, 5, 7]) % [2, -2, 4])
    with pytest.raises(InvalidArgumentError) as e:
        f(x, gc.constant([2, 0, 4], dtype))
    msg = str(e.value)
    assert "floordiv: integer division by zero" in msg and "Fix:" in msg, msg
    assert "test_inputs.py" in msg and "in int_div" in msg, msg


def int_div_loop(x, n):
    s = x - x
    for i in range(n):
        s = s + x // (2 - i) + x % (3 - i)
    return s


def test_integer_division_by_zero_in_a_compiled_loop(backend):
    f = backend.function(int_div_loop)
    x = gc.constant(7)
    with backend.expect(loops=True):
        assert int(f(x, gc.constant(2))) == 7 // 2 + 7 % 3 + 7 // 1 + 7 % 2
        with pytest.raises(InvalidArgumentError, match="division by zero"):
            f(x, gc.constant(3))                       # 7 // 0 in the third iteration


def test_float_division_by_zero_still_gives_inf_and_nan(backend):
    f = backend.function(lambda x, y: (x // y, x % y, x / y))
    x, y = gc.constant([1.0, -1.0, 0.0]), gc.constant([0.0, 0.0, 0.0])
    with np.errstate(all="ignore"):
        want = [np.floor_divide(x.numpy(), 0.0), np.mod(x.numpy(), 0.0), x.numpy() / 0.0]
    for got, ref in zip(f(x, y), want):
        np.testing.assert_array_equal(got.numpy(), ref)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=6),
       st.lists(st.integers(-50, 50).filter(bool), min_size=1, max_size=6))
def test_nonzero_integer_division_agrees_with_numpy(xs, ys):
    n = min(len(xs), len(ys))
    x, y = np.array(xs[:n], np.int32), np.array(ys[:n], np.int32)
    for name in ("numpy", "numba"):
        q, r = gc.function(lambda a, b: (a // b, a % b), backend=name)(x, y)
        np.testing.assert_array_equal(q.numpy(), x // y)
        np.testing.assert_array_equal(r.numpy(), x % y)


def test_integer_mean_of_nothing_is_zero():
    assert int(gc.reduce_mean(gc.constant(np.zeros(0, np.int32)))) == 0
    assert int(gc.reduce_mean(gc.constant([-7, 2]))) == -2          # truncated toward zero


# -- labels outside the classes ----------------------------------------------------------

def xent(labels, logits):
    return gc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


@pytest.mark.parametrize("bad", [3, -1, 100])
def test_sparse_cross_entropy_label_out_of_range(backend, bad):
    logits = gc.constant([[1.0, 2.0, 3.0], [0.5, 0.5, 0.0]])
    with pytest.raises(InvalidArgumentError, match=f"label value of {bad} which is outside "
                                                    "the valid range of \\[0, 3\\)"):
        xent(gc.constant([0, bad]), logits)
    f = backend.function(xent, input_signature=[gc.TensorSpec([None], gc.int32),
                                                gc.TensorSpec([None, None])])
    good = f(gc.constant([2, 0]), logits).numpy()
    lg = logits.numpy()
    ref = -(lg - np.log(np.exp(lg).sum(-1, keepdims=True)))[[0, 1], [2, 0]]
    np.testing.assert_allclose(good, ref, rtol=1e-6)
    with pytest.raises(InvalidArgumentError) as e:
        f(gc.constant([bad, 0]), logits)
    assert f"label value of {bad}" in str(e.value) and "in xent" in str(e.value)


def test_one_hot_depth_is_checked():
    with pytest.raises(ValueError, match="one_hot: depth must be non-negative, got -2"):
        gc.one_hot(gc.constant([1]), depth=-2)
    with pytest.raises(TypeError, match="one_hot: depth must be an int"):
        gc.one_hot(gc.constant([1]), depth=2.5)
    np.testing.assert_array_equal(gc.one_hot(gc.constant([1, 5]), depth=3).numpy(),
                                  [[0, 1, 0], [0, 0, 0]])      # out of range: all off, as TF


# -- conversion of Python data -----------------------------------------------------------

@pytest.mark.parametrize("value,dtype,word", [
    ("1.5", gc.float32, "string"), ("1.5", None, "string"), (b"12", None, "bytes"),
    (b"12", gc.int32, "bytes"), (1 + 2j, None, "complex"), (1 + 2j, gc.float64, "complex"),
    ([1, "2"], gc.int32, "string"), (np.array([1 + 1j]), gc.float32, "complex")])
def test_constant_refuses_data_it_would_have_to_parse_or_cut(value, dtype, word):
    with pytest.raises(TypeError, match=word):
        gc.constant(value, dtype)


def test_ragged_lists_name_the_problem():
    for value in ([[1, 2], [3]], [[1.0], [2.0, 3.0]], [[[1], [2]], [[3]]]):
        with pytest.raises(ValueError, match="ragged"):
            gc.constant(value)
        with pytest.raises(ValueError, match="ragged"):
            gc.constant(value, gc.float32)


def test_input_signature_refuses_a_string_for_an_int():
    @gc.function(input_signature=[gc.TensorSpec([], gc.int32)])
    def sq(x):
        return x * x

    with pytest.raises(TypeError, match="argument 'x'='3'.*string"):
        sq("3")
    assert int(sq(3)) == 9 and sq.tracing_count == 1


@pytest.mark.parametrize("shape,err", [([-1], ValueError), ([2, -5], ValueError),
                                       ([2.5], TypeError), ([True], TypeError),
                                       (5, TypeError), ("ab", TypeError)])
def test_tensor_spec_dims(shape, err):
    with pytest.raises(err, match="TensorSpec"):
        gc.TensorSpec(shape)


def test_eye_and_huge_allocations(backend):
    for bad, err in ((-1, ValueError), (2.5, TypeError)):
        with pytest.raises(err, match="eye: num_rows"):
            gc.eye(bad)
    with pytest.raises(ValueError, match="eye: num_columns"):
        gc.eye(2, -3)
    np.testing.assert_array_equal(gc.eye(2, 3).numpy(), np.eye(2, 3))
    with pytest.raises(ResourceExhaustedError, match=r"fill: out of memory .*\[1099511627776\]"):
        gc.zeros([2**40])
    f = backend.function(lambda x: gc.zeros([2**40]) + x)
    with pytest.raises(MemoryError, match="out of memory") as e:
        f(gc.constant(1.0))
    assert isinstance(e.value, ResourceExhaustedError) and "test_inputs.py" in str(e.value)


# -- Python floats key traces by their bits ----------------------------------------------

def test_signed_zero_and_nan_arguments_each_get_their_own_trace(backend):
    f = backend.function(lambda x: gc.divide(gc.constant(1.0), x))
    assert float(f(0.0)) == math.inf
    assert float(f(-0.0)) == -math.inf
    assert f.tracing_count == 2
    for _ in range(4):
        assert math.isnan(float(f(float("nan"))))
    assert f.tracing_count == 3
    assert float(f(0.0)) == math.inf and f.tracing_count == 3


def test_reduce_retracing_passes_changing_floats_as_a_tensor_after_the_warning():
    @gc.function(reduce_retracing=True)
    def scale(x, lr):
        return x * lr

    x = gc.constant([1.0, -2.0])
    with pytest.warns(gc.RetracingWarning, match="passed as a float32 tensor from now on"):
        for i in range(7):
            np.testing.assert_array_equal(scale(x, i / 4).numpy(), x.numpy() * np.float32(i / 4))
    assert scale.tracing_count == 7                    # 6 by value, then 1 for every float
    for lr in (0.5, -0.0, 1e-3, float("inf"), float("nan"), 2.5):
        np.testing.assert_array_equal(scale(x, lr).numpy(), x.numpy() * np.float32(lr))
    assert scale.tracing_count == 7
    np.testing.assert_array_equal(scale(x, 1e300).numpy(), x.numpy() * np.float32(1e300))
    assert scale.tracing_count == 8    # a float float32 cannot hold keeps its own trace


def test_reduce_retracing_keeps_python_values_a_tensor_cannot_replace():
    @gc.function(reduce_retracing=True)
    def poly(x, p):
        return x * math.floor(p)       # needs a Python float: a tensor trace fails

    @gc.function(reduce_retracing=True)
    def rep(x, n):
        return gc.constant([1.0] * n) * x   # ints are never passed as tensors

    x = gc.constant(3.0)
    with pytest.warns(gc.RetracingWarning):
        for i in range(9):
            assert float(poly(x, i + 0.5)) == 3.0 * i
            assert rep(x, i + 1).shape == (i + 1,)
    assert poly.tracing_count == 9 and rep.tracing_count == 9


def test_reduce_retracing_off_keys_every_float_by_value():
    f = gc.function(lambda x, lr: x * lr)
    with pytest.warns(gc.RetracingWarning, match="pass it as a tensor"):
        for i in range(8):
            f(gc.constant(1.0), float(i))
    assert f.tracing_count == 8


def test_traces_keyed_by_a_dead_object_leave_concrete_functions(young_heap):
    import gc as pygc

    class Scale:
        def __init__(self, k):
            self.k = k

    @gc.function
    def apply(s, x):
        return x * s.k

    keep = Scale(2.0)
    objs = [Scale(float(i)) for i in range(3)]
    for s in [keep] + objs:
        apply(s, gc.constant(1.0))
    assert len(apply.concrete_functions()) == 4
    del objs, s
    pygc.collect()
    assert len(apply.concrete_functions()) == 1 and apply.tracing_count == 4
    assert float(apply(keep, gc.constant(1.5))) == 3.0 and apply.tracing_count == 4
