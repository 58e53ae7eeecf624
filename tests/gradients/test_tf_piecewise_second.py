"""Second derivatives of the piecewise-linear activations are TF 2.21's: zeros for relu,
relu6, leaky_relu and abs (TF's ReluGradGrad/Relu6GradGrad/LeakyReluGradGrad give the
features zeros; graphc's "piecewise_linear" and "piecewise_linear_grad" ops carry them), None
for maximum/minimum/clip_by_value/where against constants (TF's MaximumGrad and SelectV2's
gradients reach x only through comparisons), elu's exp branch as TF; eagerly, on the numpy
backend and on numba with kernels forced."""
import numpy as np
import pytest

import graphc as gc

from tf_values import RUNS, check, first_and_second, run

X = [-2.0, -0.5, 0.0, 0.5, 3.0, 7.0]
E2, E05 = 0.1353352665901184, 0.6065306663513184      # TF's float32 exp(-2), exp(-0.5)
# op: (first derivative, second derivative or None), from nested tf.GradientTapes in TF 2.21
TF = {
    "relu": (gc.nn.relu, [0, 0, 0, 1, 1, 1], [0] * 6),
    "relu6": (gc.nn.relu6, [0, 0, 0, 1, 1, 0], [0] * 6),
    "leaky_relu": (gc.nn.leaky_relu, [0.2, 0.2, 0.2, 1, 1, 1], [0] * 6),
    "elu": (gc.nn.elu, [E2, E05, 1, 1, 1, 1], [E2, E05, 0, 0, 0, 0]),
    "abs": (lambda x: gc.abs(x) * 2.0, [-2, -2, 0, 2, 2, 2], [0] * 6),
    "relu_times_x": (lambda x: gc.nn.relu(x) * x, [0, 0, 0, 1, 6, 14], [0, 0, 0, 2, 2, 2]),
    "maximum": (lambda x: gc.maximum(x, 0.5), [0, 0, 0, 1, 1, 1], None),
    "minimum": (lambda x: gc.minimum(x, 0.5), [1, 1, 1, 1, 0, 0], None),
    "clip_by_value": (lambda x: gc.clip_by_value(x, -1.0, 1.0), [0, 1, 1, 1, 0, 0], None),
    "where": (lambda x: gc.where(x > 0, x, 2.0 * x), [2, 2, 2, 1, 1, 1], None),
}


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("name", sorted(TF))
def test_second_derivative_as_tf(numba_forced, backend, name):
    op, first, second = TF[name]
    x = gc.constant(np.array(X, np.float32))
    if backend == "auto":
        with numba_forced.expect(kernels=True):     # the forward and gradients fused
            _, g, h = run(first_and_second(op), backend, x)
    else:
        _, g, h = run(first_and_second(op), backend, x)
    check(g, first, np.float32)
    if second is None:
        assert h is None
    else:
        check(h, second, np.float32)


def test_third_derivative_of_relu_is_zeros_as_tf():
    """TF: ReluGradGrad's gradient is ReluGrad again and zeros: every order is zeros."""
    x = gc.constant([-1.0, 2.0])
    with gc.GradientTape() as t3:
        t3.watch(x)
        _, _, h = first_and_second(gc.nn.relu)(x)
    check(t3.gradient(h, x), [0, 0], np.float32)


def test_first_order_graph_has_no_marker_ops():
    """The markers are identities the simplifier removes: a training step's graph is
    maximum/where alone, as before."""
    from graphc.runtime.graph import walk
    from graphc.runtime.passes import optimize

    @gc.function
    def grad(x):
        with gc.GradientTape() as t:
            t.watch(x)
            y = gc.reduce_sum(gc.nn.relu(x) + gc.nn.leaky_relu(x))
        return t.gradient(y, x)

    graph = optimize(grad.get_concrete_function(gc.constant([1.0, -1.0])).graph)
    assert not [op for op in walk(graph) if op.type.startswith("piecewise_linear")]
