"""The training examples train, their compiled steps agree with eager ones, and the RNN's
gradient (through a converted `for` loop) matches finite differences."""
import importlib.util
import io
import pathlib

import numpy as np

import graphc as gc
from grad_check import check_gradients

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_mlp_reaches_95_percent():
    out = io.StringIO()
    acc = load("train_mlp").train(epochs=8, out=out)
    assert acc >= 0.95
    text = out.getvalue()
    assert "epoch 8/8" in text and "accuracy" in text and "traced 2 time(s)" in text


def test_mlp_compiled_step_matches_eager_step():
    mlp = load("train_mlp")
    x, y = mlp.make_data(n_per_class=5)
    results = []
    for compile_it in (False, True):
        model = mlp.MLP([x.shape[1], 8, 10])
        opt = gc.optimizers.SGD(0.1, momentum=0.9)

        def step(xb, yb):
            with gc.GradientTape() as tape:
                loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(
                    yb, model(xb)))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))
            return loss
        run = gc.function(step) if compile_it else step
        losses = [float(run(gc.constant(x), gc.constant(y))) for _ in range(3)]
        results.append((losses, [v.numpy() for v in model.trainable_variables]))
    (l0, w0), (l1, w1) = results
    np.testing.assert_allclose(l0, l1, rtol=1e-5)
    for a, b in zip(w0, w1):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert l0[2] < l0[0]


def test_rnn_example_learns_to_sum():
    first, last = load("rnn_sequence").train(epochs=10, out=io.StringIO())
    assert last < 0.1 * first


def test_rnn_gradient_matches_finite_differences():
    """The example's model itself (a converted `for` over gc.range), in float64."""
    rnn = load("rnn_sequence")
    model = rnn.RNN(hidden=5, seed=2, dtype=np.float64)
    x = np.random.default_rng(3).uniform(-0.5, 0.5, (2, 4, 1))
    check_gradients(model, [x])                       # d/d(input sequence)

    def loss(xs):
        return gc.reduce_sum(model(xs) ** 2)
    step = gc.function(lambda xs: _grads(loss, xs, model.trainable_variables))
    grads = step(gc.constant(x))
    eps = 1e-6
    for var, g in zip(model.trainable_variables, grads):
        base = var.numpy()
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                bumped = base.copy()
                bumped[idx] += sign * eps
                var.assign(bumped)
                numeric[idx] += sign * float(loss(gc.constant(x))) / (2 * eps)
        var.assign(base)
        np.testing.assert_allclose(np.asarray(g), numeric, rtol=1e-5, atol=1e-7,
                                   err_msg=var.name)


def _grads(loss, xs, variables):
    with gc.GradientTape() as tape:
        value = loss(xs)
    return tape.gradient(value, list(variables))
