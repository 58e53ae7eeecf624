"""TF functions TF code leans on: gc.identity, gc.rank, gc.add_n, gc.newaxis, gc.is_tensor,
gc.executing_eagerly and gc.get_static_value, eagerly and inside a compiled function."""
import contextlib

import numpy as np
import pytest

import graphc as gc


@pytest.mark.parametrize("backend", ["eager", "numpy", "numba"])
def test_identity_rank_add_n(backend, numba_forced):
    def fn(x):
        return (gc.identity(x) * 2.0, gc.rank(x), gc.add_n([x, x * 2.0, x]),
                x[gc.newaxis, :, gc.newaxis].shape[0] + 0, gc.executing_eagerly())
    x = gc.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    if backend == "eager":
        out = fn(x)
        assert out[4] is True
    else:
        with numba_forced.expect() if backend == "numba" else contextlib.nullcontext():
            out = gc.function(fn, backend=backend)(x)
        assert bool(out[4]) is False                   # tracing: not eager
    np.testing.assert_array_equal(out[0].numpy(), x.numpy() * 2)
    assert int(out[1]) == 2 and out[1].dtype == gc.int32
    np.testing.assert_array_equal(out[2].numpy(), x.numpy() * 4)
    assert int(out[3]) == 1


def test_identity_of_a_variable_is_its_value_now():
    v = gc.Variable([1.0, 2.0])
    t = gc.identity(v)
    v.assign([5.0, 5.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert gc.is_tensor(t) and gc.is_tensor(v) and not gc.is_tensor(np.ones(2))


def test_add_n_errors():
    with pytest.raises(ValueError, match="add_n does not broadcast"):
        gc.add_n([gc.constant([1.0, 2.0]), gc.constant([1.0])])
    with pytest.raises(ValueError, match="non-empty list"):
        gc.add_n([])
    with pytest.raises(TypeError, match="different dtypes"):
        gc.add_n([gc.constant([1.0]), gc.constant([1])])


def test_get_static_value():
    assert gc.get_static_value(gc.constant(3)) == 3
    seen = []

    def fn(x):
        seen.append((gc.get_static_value(gc.shape(x)), gc.get_static_value(x)))
        return x
    gc.function(fn)(gc.constant([1.0, 2.0]))
    np.testing.assert_array_equal(seen[0][0], [2])
    assert seen[0][1] is None
