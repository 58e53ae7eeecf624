"""The same gradient checks compiled for the numba backend (forward and backward fused
into one graph): elementwise chains, reductions, matmul, cond, while and TensorArray loops."""
import os

import numpy as np
import pytest

import graphc as gc
from grad_check import check_gradients

X = np.array([0.3, -1.2, 0.7])


@pytest.fixture(autouse=True, scope="module")
def fused_kernels_even_for_small_shapes(tmp_path_factory):
    """Force the numba backend to compile its fused kernels (it would otherwise run tiny
    test shapes with numpy), with a kernel cache private to this module."""
    try:
        gc.function(lambda x: x + 1, backend="numba")(gc.constant(1.0))
    except ValueError as e:
        pytest.skip(f"numba backend unavailable: {e}")
    keys = ("GRAPHC_CACHE_DIR", "GRAPHC_NUMBA_MIN_SIZE", "GRAPHC_KERNEL_CHOICE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(GRAPHC_CACHE_DIR=str(tmp_path_factory.mktemp("kernels")),
                      GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel")
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


CASES = {
    "softmax_of_square": (lambda x: gc.nn.softmax(x * x), [X]),
    "gelu_chain": (lambda x: gc.nn.gelu(gc.tanh(x) * 2.0 + x), [X]),
    "reductions": (lambda x: gc.reduce_logsumexp(gc.reshape(x * x, [3, 1]) *
                                                 gc.constant([[1.0, 2.0]], gc.float64), axis=0),
                   [X]),
    "matmul_tb": (lambda a, b: gc.matmul(a, b, transpose_b=True),
                  [np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0, 1, 12).reshape(4, 3)]),
    "mlp_loss": (lambda w: gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(
        np.array([0, 2, 1]), gc.nn.relu(gc.constant(np.eye(3) - 0.2) @ w))),
        [np.linspace(-1, 1, 12).reshape(3, 4)]),
    "cond": (lambda x: gc.cond(gc.reduce_sum(x) < 0, lambda: gc.sin(x) * x,
                               lambda: gc.exp(x)), [X]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ops_and_cond(name):
    fn, args = CASES[name]
    check_gradients(fn, args, backend="numba")


def rnn_loop(x, n):
    def body(i, h):
        return i + 1, gc.tanh(h * x[i % 3] + x)
    return gc.while_loop(lambda i, h: i < n, body, [gc.constant(0), x * 0.5])[1]


def tensorarray_loop(x, n):
    def body(i, h, ta):
        h = gc.tanh(h * x[i % 3] + 0.5)
        return i + 1, h, ta.write(i, h)
    _, h, ta = gc.while_loop(lambda i, h, ta: i < n, body,
                             [0, gc.constant(0.1, gc.float64), gc.TensorArray(gc.float64, n, element_shape=())])
    return gc.reduce_sum(ta.stack()) + h


@pytest.mark.parametrize("fn", [rnn_loop, tensorarray_loop], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [1, 4])
def test_loops(fn, n):
    check_gradients(fn, [X], extra=(n,), backend="numba")
