"""Tensors whose value is known while tracing (gc.constant, gc.shape of a static shape and
pure ops of them) are accepted where an op needs a static int list, as eagerly; random ops
also take a shape known only at run time (`gc.random.normal(gc.shape(x))`, as in TF), and
gc.random.uniform draws integers for an integer dtype (TF's rules)."""
import numpy as np
import pytest

import graphc as gc
from graphc.runtime.static_value import static_value

X = np.arange(6, dtype=np.float32).reshape(2, 3)

STATIC_ARGS = {
    "reduce_sum_axis": lambda x: gc.reduce_sum(x, axis=gc.constant(1)),
    "reduce_max_axes": lambda x: gc.reduce_max(x, axis=gc.constant([0, 1])),
    "computed_axis": lambda x: gc.reduce_sum(x, axis=gc.size(gc.shape(x)) - 1),
    "argmax_axis": lambda x: gc.argmax(x, axis=gc.constant(-1)),
    "cumsum_axis": lambda x: gc.cumsum(x, axis=gc.constant(1)),
    "expand_dims_axis": lambda x: gc.expand_dims(x, gc.constant(0)),
    "concat_axis": lambda x: gc.concat([x, x], gc.constant(1)),
    "tile_multiples": lambda x: gc.tile(x, gc.constant([1, 2])),
    "zeros_of_shape": lambda x: gc.zeros(gc.shape(x) * 2),
    "ones_of_dims": lambda x: gc.ones([gc.shape(x)[1], 2]),
}


@pytest.mark.parametrize("name", sorted(STATIC_ARGS))
def test_static_tensor_arguments_trace_as_they_run_eagerly(name):
    fn = STATIC_ARGS[name]          # a trace-time rule: the numpy backend runs the graph
    want = fn(gc.constant(X))
    got = gc.function(fn, backend="numpy")(X)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_static_value_only_for_values_known_while_tracing():
    seen = {}

    def body(x, n):
        seen["input"] = static_value(x)
        seen["shape"] = static_value(gc.shape(x))
        seen["sum"] = static_value(gc.constant([1, 2]) + 1)
        seen["from_input"] = static_value(n + 1)
        seen["random"] = static_value(gc.random.uniform([2]))
        return x
    gc.function(body)(X, gc.constant(3))
    assert seen["input"] is None and seen["from_input"] is None and seen["random"] is None
    np.testing.assert_array_equal(seen["shape"], [2, 3])
    assert seen["shape"].dtype == np.int32
    np.testing.assert_array_equal(seen["sum"], [2, 3])
    assert static_value(gc.constant(4)) == 4 and static_value(3) is None


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("draw", [gc.random.normal, gc.random.uniform])
def test_random_shape_known_only_at_run_time(draw, backend, numba_forced):
    f = gc.function(lambda x: draw(gc.shape(x)) * 0.0 + x * 2.0,
                    input_signature=[gc.TensorSpec([None, 3], gc.float32)], backend=backend)
    for rows in (2, 5):
        x = np.ones((rows, 3), np.float32)
        if backend == "numba":
            with numba_forced.expect(kernels=True):
                out = f(x)
        else:
            out = f(x)
        np.testing.assert_array_equal(out.numpy(), x * 2.0)
    g = gc.function(lambda x: draw([gc.shape(x)[0], 2], seed=4),
                    input_signature=[gc.TensorSpec([None], gc.float32)], backend=backend)
    a, b = g(np.zeros(3, np.float32)), g(np.zeros(3, np.float32))
    assert a.shape == (3, 2) and not np.array_equal(a.numpy(), b.numpy())   # fresh draws


def test_random_shape_tensor_errors():
    neg = gc.function(lambda n: gc.random.uniform(gc.stack([n, 2])))
    with pytest.raises(gc.errors.InvalidArgumentError, match=r"shape \[-1, 2\] has a negative"):
        neg(gc.constant(-1))
    with pytest.raises(TypeError, match="shape has dtype float32 but needs an integer"):
        gc.function(lambda s: gc.random.normal(s))(gc.constant([1.5]))


def test_dynamic_random_shape_saves_and_loads(tmp_path):
    m = gc.Module()
    m.f = gc.function(lambda x: gc.random.normal(gc.shape(x)),
                      input_signature=[gc.TensorSpec([None], gc.float32)])
    gc.saved_model.save(m, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path))
    assert loaded.f(np.zeros(7, np.float32)).shape == (7,)


@pytest.mark.parametrize("backend", ["eager", "numpy", "numba"])
def test_integer_uniform_draws_in_minval_maxval(backend):
    def draw():
        return gc.random.uniform([2000], -3, 4, dtype=gc.int64)
    gc.random.set_seed(5)
    f = draw if backend == "eager" else gc.function(draw, backend=backend)
    a, b = f(), f()
    assert a.dtype == gc.int64
    assert set(np.unique(a.numpy())) == set(range(-3, 4))     # every value, none outside
    assert not np.array_equal(a.numpy(), b.numpy())           # fresh per call
    gc.random.set_seed(5)
    g = draw if backend == "eager" else gc.function(draw, backend=backend)
    np.testing.assert_array_equal(g().numpy(), a.numpy())     # reproducible from the seed


def test_integer_uniform_errors():
    with pytest.raises(ValueError, match=r"integer dtype \(int32\) needs maxval"):
        gc.random.uniform([2], dtype=gc.int32)
    with pytest.raises(gc.errors.InvalidArgumentError, match="needs minval < maxval"):
        gc.random.uniform([2], 5, 5, dtype=gc.int32)
    with pytest.raises(gc.errors.InvalidArgumentError, match="needs minval < maxval"):
        gc.function(lambda hi: gc.random.uniform([2], 0, hi, dtype=gc.int32))(gc.constant(0))
