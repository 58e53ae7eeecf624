"""A gc.Tensor never shares writable memory with its caller: results of a compiled function
that return an argument (or a view of it) are copies, and np.asarray(t) is read-only."""
import numpy as np
import pytest

import graphc as gc

VIEWS = {
    "identity": lambda x: x,
    "reshape": lambda x: gc.reshape(x, [-1]),
    "index": lambda x: x[0],
    "slice": lambda x: x[:, 1:],
    "transpose": lambda x: gc.transpose(x),
    "expand_dims": lambda x: gc.expand_dims(x, 0),
    "squeeze": lambda x: gc.squeeze(x[None]),
    "cast_same": lambda x: gc.cast(x, gc.float32),
    "stop_gradient": lambda x: gc.stop_gradient(x),
    "broadcast_same": lambda x: gc.broadcast_to(x, [2, 3]),
    "times_one": lambda x: x * 1,
    "unstack": lambda x: gc.unstack(x)[0],
    "pair": lambda x: (x, x + 1),
    "dict": lambda x: {"a": x, "b": gc.reshape(x, [3, 2])},
}


def _first(result):
    if isinstance(result, dict):
        return list(result.values())
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_result_does_not_follow_writes_into_the_argument(name, backend, numba_forced):
    fn = VIEWS[name]
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = [t.numpy() for t in _first(fn(gc.constant(arr)))]
    f = gc.function(fn, backend=backend)
    for _ in range(2):                      # the first call and the cached one
        arr = np.arange(6, dtype=np.float32).reshape(2, 3)
        got = _first(f(arr))
        arr[...] = -7.0                     # the caller reuses its buffer
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_concrete_function_result_is_not_the_argument(backend):
    f = gc.function(lambda x: gc.reshape(x, [2, 2]), backend=backend)
    cf = f.get_concrete_function(gc.TensorSpec([4], gc.float32))
    arr = np.ones(4, np.float32)
    out = cf(arr)
    arr[0] = 5.0
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 2), np.float32))


def test_fresh_results_are_not_copied():
    f = gc.function(lambda x: x * 2.0, backend="numpy")
    x = np.ones(3, np.float32)
    out = f(x)
    assert not np.shares_memory(np.asarray(out), x)


def test_asarray_of_a_tensor_is_read_only():
    t = gc.constant([1.0, 2.0])
    view = np.asarray(t)
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    copy = np.array(t)                  # np.array copies: that one is the caller's to write
    copy[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.asarray(t, dtype=np.float32).flags.writeable is False


def test_asarray_read_only_view_still_feeds_functions(numba_forced):
    t = gc.constant(np.arange(4, dtype=np.float32))
    f = gc.function(lambda x: gc.exp(x) + x, backend="numba")
    with numba_forced.expect():
        out = f(np.asarray(t))
    np.testing.assert_allclose(out.numpy(), np.exp(np.arange(4)) + np.arange(4), rtol=1e-6)


def test_constant_and_convert_to_tensor_copy_numpy_data():
    for make in (gc.constant, gc.convert_to_tensor):
        arr = np.array([1.0, 2.0], np.float32)
        t = make(arr)
        arr[0] = 9.0
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
