"""gc.where(condition) (indices of the true elements) and gc.boolean_mask: results whose
first dim is known only at run time, eagerly and compiled (numpy and auto backends), with
TF 2.21's values, shapes and errors (written here as literals: the tests do not import TF)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from op_helpers import arrays, assert_same

BACKENDS = ["numpy", "auto"]


def _run(fn, args, backend, signature=None):
    """fn eagerly, then compiled on `backend` (with an input_signature when given)."""
    eager = fn(*[gc.constant(a) for a in args])
    compiled = gc.function(fn, backend=backend, input_signature=signature)(*args)
    return eager, compiled


def _specs(*arrays_):
    """TensorSpecs with every dim unknown, for the arrays' dtypes and ranks."""
    return [gc.TensorSpec([None] * a.ndim, gc.as_dtype(a.dtype)) for a in arrays_]


# -- where(condition) ----------------------------------------------------------------------
WHERE_CASES = [
    # (condition, TF 2.21's tf.where(condition))
    (np.array([[True, False], [False, True]]), [[0, 0], [1, 1]]),
    (np.array([0.0, 2.0, -0.0, np.nan], np.float32), [[1], [3]]),   # NaN is nonzero: true
    (np.array([0, 3, 0], np.int32), [[1]]),
    (np.array([[0.5, 0.0], [0.0, -0.0]], np.float64), [[0, 0]]),
    (np.zeros((2, 0, 3), bool), np.zeros((0, 3), np.int64)),
    (np.zeros((4,), bool), np.zeros((0, 1), np.int64)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(WHERE_CASES)))
def test_where_gives_tf_indices_eagerly_and_compiled(case, backend):
    c, want = WHERE_CASES[case]
    want = np.asarray(want, np.int64).reshape(-1, c.ndim)
    for sig in (None, _specs(c)):
        eager, compiled = _run(lambda t: gc.where(t), [c], backend, sig)
        assert_same(eager, want)
        assert_same(compiled, want)


@settings(max_examples=30, deadline=None)
@given(c=arrays("bool", min_dims=1))
def test_where_matches_numpy_argwhere(c):
    f = gc.function(lambda t: gc.where(t), backend="numpy", input_signature=_specs(c))
    assert_same(gc.where(c), np.argwhere(c).astype(np.int64))
    assert_same(f(c), np.argwhere(c).astype(np.int64))


def test_where_traces_a_first_dim_known_at_run_time():
    f = gc.function(lambda t: gc.where(t), backend="numpy")
    cf = f.get_concrete_function(gc.TensorSpec([3, 4], gc.bool))
    # TF: shape=(None, 2), dtype=int64 for a [3, 4] bool condition
    assert cf.outputs[0].shape == (None, 2) and cf.outputs[0].dtype == gc.int64
    g = gc.function(lambda t: gc.where(t), input_signature=[gc.TensorSpec([None, 3], gc.bool)])
    for rows in (0, 1, 5):                       # one trace for every number of rows
        c = np.arange(rows * 3).reshape(rows, 3) % 4 == 1
        assert_same(g(c), np.argwhere(c).astype(np.int64))
    assert g.tracing_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_indices_feed_further_ops(backend, numba_forced):
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0) / 4.0

    def fn(t):
        idx = gc.where(t > 0.0)
        coords = gc.cast(idx, gc.float32) * 2.0 + 1.0           # an elementwise chain on them
        return coords, gc.reduce_sum(idx, axis=0), gc.gather(gc.reshape(t, [-1]),
                                                             idx[:, 0] * 4 + idx[:, 1])
    want_idx = np.argwhere(x > 0)
    want = [want_idx.astype(np.float32) * 2 + 1, want_idx.sum(0), x[x > 0]]
    sig = _specs(x)
    if backend == "auto":
        with numba_forced.expect(kernels=True):
            eager, compiled = _run(fn, [x], backend, sig)
    else:
        eager, compiled = _run(fn, [x], backend, sig)
    assert_same(list(eager), want)
    assert_same(list(compiled), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_in_a_loop(backend):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0

    def fn(t):
        total = gc.constant(0, gc.int64)
        for i in gc.range(4):
            total += gc.reduce_sum(gc.where(t > gc.cast(i, gc.float32)))
        return total
    want = sum(np.argwhere(x > i).sum() for i in range(4))
    eager, compiled = _run(fn, [x], backend)
    assert_same(eager, np.int64(want))
    assert_same(compiled, np.int64(want))


def test_where_errors():
    # TF: eagerly InvalidArgumentError "WhereOp : Unhandled input dimensions: 0"
    with pytest.raises(InvalidArgumentError, match="where: condition must have rank"):
        gc.where(gc.constant(True))
    f = gc.function(lambda t: gc.where(t), backend="numpy")
    with pytest.raises(ValueError, match="where: condition must have rank") as e:
        f(gc.constant(True))
    assert "test_ops_selection.py" in str(e.value)         # at the user's line
    # TF: "x and y must both be non-None or both be None."
    for args in ((np.ones(2), None), (None, np.ones(2))):
        with pytest.raises(ValueError, match="both be given or both be None"):
            gc.where(np.array([True, False]), *args)


def test_where_has_no_gradient():
    x = gc.constant([[1.0, -2.0], [3.0, 4.0]])
    with gc.GradientTape() as tape:           # TF: None (the indices are integers)
        tape.watch(x)
        y = gc.reduce_sum(gc.cast(gc.where(x > 0.0), gc.float32))
    assert tape.gradient(y, x) is None


# -- boolean_mask --------------------------------------------------------------------------
T = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
T3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
MASK_CASES = [
    # (tensor, mask, axis, TF 2.21's tf.boolean_mask(tensor, mask, axis))
    (T, np.array([True, False, True]), None, [[1.0, 2.0], [5.0, 6.0]]),
    (T, np.array([[True, False], [False, True], [True, True]]), None, [1.0, 4.0, 5.0, 6.0]),
    (T, np.array([True, False]), 1, [[1.0], [3.0], [5.0]]),
    (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False]), -2,
     [[0.0, 1.0, 2.0]]),
    (T3, np.array([[True, False, True], [False, False, True]]), None,
     T3.reshape(6, 4)[[0, 2, 5]]),
    (T3, np.array([[True, False, True, True], [False, False, True, False],
                   [True, True, True, True]]), 1, T3.reshape(2, 12)[:, [0, 2, 3, 6, 8, 9, 10, 11]]),
    (T3, np.array([True, False, False, True]), 2, T3[:, :, [0, 3]]),
    (np.zeros((0, 0, 3), np.float32), np.zeros((0, 3), bool), 1, np.zeros((0, 0), np.float32)),
    (np.array([1, 2, 3], np.int32), np.array([1.5, 0.0, -1.0], np.float32), None, [1, 3]),
]


def _up(shape):
    """A distinct upstream gradient for every element of a result."""
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape)


def _grad_fn(axis, up):
    def grad(t, m):
        with gc.GradientTape() as tape:
            tape.watch(t)
            y = gc.reduce_sum(gc.boolean_mask(t, m, axis=axis) * up)
        return tape.gradient(y, t)
    return grad


def _numpy_grad(t, m, axis, up):
    """TF's gradient: the upstream values back at the kept positions, zeros elsewhere."""
    a = 0 if axis is None else axis % t.ndim
    g = np.zeros_like(t)
    flat = g.reshape(t.shape[:a] + (int(np.prod(m.shape)),) + t.shape[a + m.ndim:])
    flat[(slice(None),) * a + (m.ravel() != 0,)] = up
    return g


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(MASK_CASES)))
def test_boolean_mask_matches_tf(case, backend):
    t, m, axis, want = MASK_CASES[case]
    want = np.asarray(want, t.dtype)
    fn = lambda x, k: gc.boolean_mask(x, k, axis=axis)     # noqa: E731
    for sig in (None, _specs(t, m)):
        eager, compiled = _run(fn, [t, m], backend, sig)
        assert_same(eager, want)
        assert_same(compiled, want)
    if t.dtype.kind != "f":
        return
    up = _up(want.shape)
    want_grad = _numpy_grad(t, m, axis, up)
    for sig in (None, _specs(t, m)):
        eager, compiled = _run(_grad_fn(axis, up), [t, m], backend, sig)
        assert_same(eager, want_grad)
        assert_same(compiled, want_grad)


def test_boolean_mask_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    t = rng.normal(size=(3, 4)).astype(np.float64)
    m = np.array([[True, False, True, True], [False, False, False, False],
                  [True, True, False, True]])
    loss = lambda x: gc.reduce_sum(gc.sin(gc.boolean_mask(x, m)) ** 2)   # noqa: E731

    def grad(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        return tape.gradient(y, x)
    eps, fd = 1e-6, np.zeros_like(t)
    for i in np.ndindex(t.shape):
        d = np.zeros_like(t)
        d[i] = eps
        fd[i] = (float(loss(gc.constant(t + d))) - float(loss(gc.constant(t - d)))) / (2 * eps)
    np.testing.assert_allclose(grad(gc.constant(t)).numpy(), fd, atol=1e-8)
    compiled = gc.function(grad, input_signature=[gc.TensorSpec([None, 4], gc.float64)])
    np.testing.assert_allclose(compiled(t).numpy(), fd, atol=1e-8)


def test_boolean_mask_static_shapes_as_tf():
    f = gc.function(lambda x, k: gc.boolean_mask(x, k, axis=1), backend="numpy")
    # TF: [3, 2, 4] masked by a [2] mask on axis 1 is (3, None, 4); by [2, 4]: (3, None)
    cf = f.get_concrete_function(gc.TensorSpec([3, 2, 4]), gc.TensorSpec([2], gc.bool))
    assert cf.outputs[0].shape == (3, None, 4)
    cf = f.get_concrete_function(gc.TensorSpec([3, 2, 4]), gc.TensorSpec([2, 4], gc.bool))
    assert cf.outputs[0].shape == (3, None)


@pytest.mark.parametrize("mask,axis,error,words", [
    (np.array(True), None, ValueError, "mask cannot be scalar"),                  # TF's words
    (np.array([True, False]), None, ValueError, "mask of shape [2] does not match"),
    (np.array([[True]]), None, ValueError, "mask of shape [1,1] does not match"),
    (np.array([True, False, True]), 2, ValueError, "do not fit a tensor of shape [3,2]"),
])
def test_boolean_mask_errors(mask, axis, error, words):
    for fn in (lambda x, k: gc.boolean_mask(x, k, axis=axis),
               gc.function(lambda x, k: gc.boolean_mask(x, k, axis=axis), backend="numpy")):
        with pytest.raises(error) as e:
            fn(gc.constant(T), gc.constant(mask))
        assert words in str(e.value) and "boolean_mask" in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_boolean_mask_shape_mismatch_known_only_at_run_time_raises(backend):
    f = gc.function(lambda x, k: gc.boolean_mask(x, k, axis=1), backend=backend,
                    input_signature=[gc.TensorSpec([None, None, 4]),
                                     gc.TensorSpec([None], gc.bool)])
    assert_same(f(T3, np.array([False, True, True])), T3[:, 1:])
    with pytest.raises(InvalidArgumentError, match=r"mask of shape \[2\] does not match the "
                       r"axis 1 of a tensor of shape \[2,3,4\]") as e:
        f(T3, np.array([True, False]))                     # eagerly a ValueError
    assert "test_ops_selection.py" in str(e.value)


def test_where_and_boolean_mask_in_a_saved_model(tmp_path):
    class M(gc.Module):
        @gc.function(input_signature=[gc.TensorSpec([None, 2], gc.float32)])
        def positive(self, x):
            return {"idx": gc.where(x > 0.0), "vals": gc.boolean_mask(x, x > 0.0)}

    gc.saved_model.save(M(), str(tmp_path / "m"))
    loaded = gc.saved_model.load(str(tmp_path / "m"))
    for x in (T - 3.5, np.zeros((0, 2), np.float32)):
        out = loaded.positive(x)
        assert_same(out["idx"], np.argwhere(x > 0).astype(np.int64))
        assert_same(out["vals"], x[x > 0])
