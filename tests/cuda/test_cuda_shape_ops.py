"""shape, check_shape and sum_to_shape on the cuda backend read only their input's shape:
a graph traced with None dims (input_signature) copies no tensor to the host for them."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError


def _grad_fn(backend):
    @gc.function(input_signature=[gc.TensorSpec([None, 3], gc.float32),
                                  gc.TensorSpec([None, 3], gc.float32)], backend=backend)
    def grads(x, y):
        with gc.GradientTape() as t:
            t.watch([x, y])
            z = gc.reduce_sum(gc.tanh(x * y))
        return t.gradient(z, [x, y])
    return grads


def test_unbroadcast_with_nothing_to_sum_stays_on_the_device(cuda_stats):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    y = np.linspace(2, -2, 12, dtype=np.float32).reshape(4, 3)
    want = [g.numpy() for g in _grad_fn("numpy")(x, y)]
    f = _grad_fn("cuda")
    graph = f.get_concrete_function(*[gc.TensorSpec([None, 3], gc.float32)] * 2).graph
    assert "sum_to_shape" in str(graph)     # both batch dims unknown: checked at run time
    f(x, y)
    with cuda_stats.count():
        got = f(x, y)
    # shapes and unbroadcasts read shapes only, the seed's broadcast_to is a kernel: no
    # tensor comes back to the host, nothing runs a numpy rule
    assert cuda_stats.d2h == 0 and cuda_stats.device_ops >= 5
    assert cuda_stats.fallbacks == 0
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


def test_unbroadcast_that_sums_runs_a_reduction_kernel_with_the_numpy_result(cuda_stats):
    x = np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3)      # broadcast at run time
    y = np.linspace(2, -2, 12, dtype=np.float32).reshape(4, 3)
    want = [g.numpy() for g in _grad_fn("numpy")(x, y)]
    f = _grad_fn("cuda")
    f(x, y)
    with cuda_stats.count():
        got = f(x, y)
    assert cuda_stats.fallbacks == 0 and cuda_stats.d2h == 0     # x's sum: shaped.sum_to
    assert got[0].shape == (1, 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


def test_a_run_time_shape_check_raises_at_the_users_line():
    @gc.function(input_signature=[gc.TensorSpec([None], gc.int32),
                                  gc.TensorSpec([None, 4], gc.float32)], backend="cuda")
    def loss(labels, logits):
        return gc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    logits = np.zeros((3, 4), np.float32)
    np.testing.assert_allclose(loss(np.array([0, 1, 3], np.int32), logits).numpy(),
                               np.full(3, np.log(4.0), np.float32), rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="labels of shape") as e:
        loss(np.array([1], np.int32), logits).numpy()
    assert "test_cuda_shape_ops.py" in str(e.value)
