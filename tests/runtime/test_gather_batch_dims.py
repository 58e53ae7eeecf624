"""gc.gather with batch_dims, as tf.gather: values, shapes, gradients and errors eagerly and
compiled (numpy and auto backends, static and unknown dims). TF 2.21's results are written
as literals (the tests do not import TF) or derived with numpy per batch."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from op_helpers import assert_same

P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
I = np.array([[0, 2], [1, 1]], np.int32)
BACKENDS = ["numpy", "auto"]


def numpy_gather(p, idx, axis, batch_dims):
    """Per batch index, np.take along the batch's own axis."""
    lead = p.shape[:batch_dims]
    rows = [np.take(p[b], idx[b], axis=axis - batch_dims) for b in np.ndindex(lead)]
    tail = rows[0].shape if rows else \
        p.shape[batch_dims:axis] + idx.shape[batch_dims:] + p.shape[axis + 1:]
    return np.array(rows, p.dtype).reshape(lead + tail)


def _both(fn, args, backend, unknown=False):
    sig = [gc.TensorSpec([None] * np.ndim(a), gc.as_dtype(np.asarray(a).dtype))
           for a in args] if unknown else None
    return fn(*[gc.constant(a) for a in args]), \
        gc.function(fn, backend=backend, input_signature=sig)(*args)


# (params, indices, kwargs, TF 2.21's result shape)
SHAPE_CASES = [
    (P, I, dict(batch_dims=1), (2, 2, 4)),                      # axis defaults to batch_dims
    (P, I, dict(axis=2, batch_dims=1), (2, 3, 2)),
    (P, np.array([[0, 3, 1], [2, 2, 0]]), dict(axis=-1, batch_dims=-1), (2, 3, 3)),
    (np.zeros((2, 3, 4, 5), np.float32), np.arange(12).reshape(2, 3, 2) % 4,
     dict(axis=2, batch_dims=2), (2, 3, 2, 5)),
    (np.zeros((2, 3, 4, 5), np.float32), np.arange(12).reshape(2, 3, 2) % 4,
     dict(axis=3, batch_dims=2), (2, 3, 4, 2)),
    (np.zeros((2, 3, 4, 5), np.float32), np.arange(12).reshape(2, 3, 2) % 4,
     dict(axis=3, batch_dims=1), (2, 3, 4, 3, 2)),
    (np.zeros((2, 3, 4, 5), np.float32), np.array([1, 0]), dict(axis=1, batch_dims=1),
     (2, 4, 5)),
    (P, np.zeros((2, 0), np.int32), dict(batch_dims=1), (2, 0, 4)),
    (np.zeros((0, 3), np.float32), np.zeros((0, 2), np.int32), dict(batch_dims=1), (0, 2)),
]


def test_tf_values():
    # TF 2.21: tf.gather(P, I, batch_dims=1) and tf.gather(P, I, axis=2, batch_dims=1)
    assert_same(gc.gather(P, I, batch_dims=1), np.array(
        [[[0, 1, 2, 3], [8, 9, 10, 11]], [[16, 17, 18, 19], [16, 17, 18, 19]]], np.float32))
    assert_same(gc.gather(P, I, axis=2, batch_dims=1), np.array(
        [[[0, 2], [4, 6], [8, 10]], [[13, 13], [17, 17], [21, 21]]], np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(SHAPE_CASES)))
def test_batch_gather_matches_tf_shapes_and_numpy(case, backend):
    p, idx, kw, shape = SHAPE_CASES[case]
    p = np.arange(p.size, dtype=np.float32).reshape(p.shape)
    b = kw["batch_dims"] + idx.ndim if kw["batch_dims"] < 0 else kw["batch_dims"]
    axis = kw.get("axis", b) % p.ndim
    want = numpy_gather(p, idx, axis, b)
    assert want.shape == shape
    for unknown in (False, True):
        eager, compiled = _both(lambda x, i: gc.gather(x, i, **kw), [p, idx], backend, unknown)
        assert_same(eager, want)
        assert_same(compiled, want)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_batch_gather_matches_numpy_on_random_shapes(data):
    rank = data.draw(st.integers(2, 4))
    b = data.draw(st.integers(1, rank - 1))
    axis = data.draw(st.integers(b, rank - 1))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    extra = tuple(data.draw(st.lists(st.integers(0, 2), max_size=2)))
    idx = np.random.default_rng(len(shape)).integers(0, shape[axis], shape[:b] + extra)
    p = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    want = numpy_gather(p, idx, axis, b)
    f = gc.function(lambda x, i: gc.gather(x, i, axis=axis, batch_dims=b), backend="numpy")
    assert_same(gc.gather(p, idx, axis=axis, batch_dims=b), want)
    assert_same(f(p, idx), want)


def _grad(axis, batch_dims, up):
    def grad(x, i):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.reduce_sum(gc.gather(x, i, axis=axis, batch_dims=batch_dims) * up)
        return tape.gradient(y, x)
    return grad


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_scatters_back_per_batch(backend):
    up = np.arange(1, 13, dtype=np.float32).reshape(2, 3, 2)
    # TF 2.21's gradient (the repeated index 1 of the second batch adds up)
    want = np.array([[[1, 0, 2, 0], [3, 0, 4, 0], [5, 0, 6, 0]],
                     [[0, 15, 0, 0], [0, 19, 0, 0], [0, 23, 0, 0]]], np.float32)
    for unknown in (False, True):
        eager, compiled = _both(_grad(2, 1, up), [P, I], backend, unknown)
        assert_same(eager, want)
        assert_same(compiled, want)


@pytest.mark.parametrize("kw,error,words", [
    (dict(axis=0, batch_dims=1), ValueError, "batch_dims (1) must be less than or equal to "
                                             "axis (0)"),
    (dict(batch_dims=3), ValueError, "Expected batch_dims in the range [-2, 2], but got 3"),
    (dict(batch_dims=-3), ValueError, "Expected batch_dims in the range [-2, 2], but got -3"),
    (dict(batch_dims=1.0), TypeError, "batch_dims must be a Python int"),
])
def test_argument_errors(kw, error, words):
    for fn in (lambda x, i: gc.gather(x, i, **kw),
               gc.function(lambda x, i: gc.gather(x, i, **kw), backend="numpy")):
        with pytest.raises(error) as e:
            fn(gc.constant(P), gc.constant(I))
        assert words in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_and_batch_errors(backend):
    bad = np.array([[0, 3], [1, 1]], np.int32)          # TF: indices[0,1] = 3 is not in [0, 3)
    f = gc.function(lambda x, i: gc.gather(x, i, batch_dims=1), backend=backend,
                    input_signature=[gc.TensorSpec([None, 3, 4]), gc.TensorSpec([None, 2],
                                                                                gc.int32)])
    for run in (lambda: gc.gather(P, bad, batch_dims=1), lambda: f(P, bad)):
        with pytest.raises(InvalidArgumentError, match=r"index 3 at indices\[0,1\] is out of "
                           r"range \[0, 3\)"):
            run()
    with pytest.raises(InvalidArgumentError, match=r"index -1 at indices\[1,0\]"):
        f(P, np.array([[0, 0], [-1, 1]], np.int32))       # never wraps around as numpy would
    # TF: params.shape[0]: 2 should be equal to indices.shape[0]: 3
    three = np.zeros((3, 2), np.int32)
    with pytest.raises(ValueError, match=r"params.shape\[0\]: 2 should be equal to "
                       r"indices.shape\[0\]: 3"):
        gc.gather(P, three, batch_dims=1)
    with pytest.raises(InvalidArgumentError, match=r"params.shape\[0\]: 2 should be equal to "
                       r"indices.shape\[0\]: 3") as e:
        f(P, three)
    assert "test_gather_batch_dims.py" in str(e.value)


def test_batch_dims_zero_is_the_plain_gather():
    f = gc.function(lambda x: gc.gather(x, [2, 0], axis=1, batch_dims=0), backend="numpy")
    assert "batch_gather" not in str(f.get_concrete_function(P).graph)
    assert_same(f(P), P[:, [2, 0]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_gather_in_a_loop(backend):
    def fn(x, i):
        total = gc.zeros([2, 2, 4])
        for k in gc.range(3):
            total += gc.gather(x * gc.cast(k, gc.float32), i, batch_dims=1)
        return total
    eager, compiled = _both(fn, [P, I], backend)
    assert_same(eager, 3.0 * numpy_gather(P, I, 1, 1))
    assert_same(compiled, 3.0 * numpy_gather(P, I, 1, 1))
