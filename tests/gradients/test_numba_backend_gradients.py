"""The same gradient checks compiled for the numba backend (forward and backward fused
into one graph): elementwise chains, reductions, matmul, cond, while and TensorArray loops,
with kernels forced (the tiny shapes would otherwise run numpy rules), asserting that the
compiled code each case is expected to hold really ran (or, where the graph holds nothing
the backend compiles, that none did)."""
import numpy as np
import pytest

import graphc as gc
from grad_check import check_gradients

X = np.array([0.3, -1.2, 0.7])


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


# What each case's traced gradient graph runs compiled, with kernels forced (tests/conftest.py
# numba_forced): "kernels" (fused groups), "loops" (whole while/cond compiled), or why nothing.
COMPILED = {
    "softmax_of_square": "kernels",
    "gelu_chain": "kernels",
    "reductions": "kernels",
    "matmul_tb": "no fused group (matmuls and transposes run BLAS through their numpy "
                 "rules) and no loop",
    "mlp_loss": "kernels",
    "cond": "loops",   # the scalar-predicate cond and its gradient cond are lowered whole
    "rnn_loop": "kernels",   # the gradient loops keep stacks (lists): interpreted
    "tensorarray_loop": "no fused group, and the loops hold TensorArray lists: interpreted",
}


def _check(name, numba_forced, run):
    what = COMPILED[name]
    if what in ("kernels", "loops"):
        with numba_forced.expect(kernels=what == "kernels", loops=what == "loops"):
            run()
    else:
        with numba_forced.none(what):
            run()


@pytest.mark.parametrize("name", sorted(CASES))
def test_ops_and_cond(name, numba_forced):
    fn, args = CASES[name]
    _check(name, numba_forced, lambda: check_gradients(fn, args, backend="numba"))


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
def test_loops(fn, n, numba_forced):
    _check(fn.__name__, numba_forced,
           lambda: check_gradients(fn, [X], extra=(n,), backend="numba"))
