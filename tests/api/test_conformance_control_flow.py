"""API.md conformance of gc.while_loop used directly (found by the s8 API audit)."""
import numpy as np

import graphc as gc


def _value(t, dtype):
    assert isinstance(t, gc.Tensor), f"expected a gc.Tensor, got {type(t).__name__} {t!r}"
    assert t.dtype == dtype
    return t.numpy()


def test_eager_while_loop_with_python_numbers_gives_tensors():
    # TF 2.21: tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (0, 0)) run
    # eagerly gives (<tf.Tensor 5 int32>, <tf.Tensor 10 int32>), as the traced loop does;
    # graphc gave back the Python ints 5 and 10
    i, s = gc.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (0, 0))
    assert _value(i, gc.int32) == 5 and _value(s, gc.int32) == 10
    n, x = gc.while_loop(lambda n, x: n < 3, lambda n, x: (n + 1, x * 2.0), [0, 1.0])
    assert _value(n, gc.int32) == 3 and _value(x, gc.float32) == np.float32(8.0)


def test_eager_and_traced_while_loop_agree_on_python_numbers():
    def loop():
        return gc.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + 0.5), (0, 0.0),
                             maximum_iterations=3)
    eager = loop()
    traced = gc.function(loop)()
    for e, t in zip(eager, traced):
        assert isinstance(e, gc.Tensor) and e.dtype == t.dtype
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert eager[0].numpy() == 3 and eager[1].numpy() == np.float32(1.5)


def test_eager_while_loop_with_numpy_values_gives_tensors():
    # TF 2.21: tf.while_loop(c, lambda i, x: (i + 1, x * 2), (np.int64(0), np.float64(1.5)))
    # run eagerly gives (<tf.Tensor 3 int64>, <tf.Tensor 12.0 float64>), as graphc's traced
    # loop; graphc's eager loop gave back numpy scalars
    def loop():
        return gc.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                             (np.int64(0), np.float64(1.5)))
    for got in (loop(), gc.function(loop)()):
        assert _value(got[0], gc.int64) == 3 and _value(got[1], gc.float64) == 12.0
    v, = gc.while_loop(lambda v: v[0] < 2, lambda v: (v + 1,), (np.array([0, 5], np.int32),))
    assert isinstance(v, gc.Tensor) and v.numpy().tolist() == [2, 7]
