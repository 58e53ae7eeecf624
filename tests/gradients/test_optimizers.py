"""SGD and Adam against numpy reimplementations of the Keras formulas, eagerly and in
compiled train steps; slot creation follows the create-once rule."""
import numpy as np
import pytest

import graphc as gc

X = np.random.default_rng(0).normal(size=(8, 3))
Y = X @ np.array([1.5, -2.0, 0.5]) + 0.3


def tf_lr(lr):
    """TF's rule: the learning rate is a float32 Variable, cast to a float64 model's dtype
    (Keras 3: SGD(0.1) updates a float64 variable by 0.10000000149011612 * g); Python-float
    hyperparameters that Keras passes to ops.cast (SGD's momentum, Adam's betas in their
    powers) go through float32 too."""
    return np.float64(np.float32(lr))


def grad_np(w, b):
    err = X @ w + b - Y
    return 2 * X.T @ err / len(Y), np.array(2 * err.mean())


def sgd_np(steps, lr, momentum, nesterov=False):
    w, b = np.zeros(3), np.zeros(())
    vel = [np.zeros(3), np.zeros(())]
    for _ in range(steps):
        for k, g in enumerate(grad_np(w, b)):
            p = [w, b][k]
            if momentum:
                mom = tf_lr(momentum)
                vel[k] = mom * vel[k] - lr * g
                p += mom * vel[k] - lr * g if nesterov else vel[k]
            else:
                p -= lr * g
    return w, b


def adam_np(steps, lr, b1=0.9, b2=0.999, eps=1e-7):
    w, b = np.zeros(3), np.zeros(())
    m, v = [np.zeros(3), np.zeros(())], [np.zeros(3), np.zeros(())]
    for t in range(1, steps + 1):
        for k, g in enumerate(grad_np(w, b)):
            p = [w, b][k]
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            alpha = lr * np.sqrt(1 - tf_lr(b2) ** t) / (1 - tf_lr(b1) ** t)
            p -= alpha * m[k] / (np.sqrt(v[k]) + eps)
    return w, b


def train(opt, steps, compiled):
    w = gc.Variable(np.zeros(3))
    b = gc.Variable(np.zeros(()))
    x, y = gc.constant(X), gc.constant(Y)

    def step(x, y):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean((gc.matmul(x, gc.reshape(w, [3, 1]))[:, 0] + b - y) ** 2)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss
    fn = gc.function(step) if compiled else step
    for _ in range(steps):
        fn(x, y)
    return w.numpy(), b.numpy(), fn


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_matches_numpy(compiled, momentum, nesterov):
    opt = gc.optimizers.SGD(0.05, momentum=momentum, nesterov=nesterov)
    w, b, fn = train(opt, 7, compiled)
    ew, eb = sgd_np(7, tf_lr(0.05), momentum, nesterov)
    np.testing.assert_allclose(w, ew, rtol=1e-10)
    np.testing.assert_allclose(b, eb, rtol=1e-10)
    assert int(opt.iterations.numpy()) == 7
    if compiled:
        assert fn.tracing_count == 2     # slots made in the first trace: traced again, as TF


@pytest.mark.parametrize("compiled", [False, True])
def test_adam_matches_numpy(compiled):
    opt = gc.optimizers.Adam(0.1)
    w, b, _ = train(opt, 9, compiled)
    ew, eb = adam_np(9, tf_lr(0.1))
    np.testing.assert_allclose(w, ew, rtol=1e-9)
    np.testing.assert_allclose(b, eb, rtol=1e-9)
    assert int(opt.iterations.numpy()) == 9


def test_slots_are_created_once_inside_a_compiled_step():
    opt = gc.optimizers.Adam(0.01)
    _, _, fn = train(opt, 3, True)
    assert len(opt.variables()) == 2 + 2 * 2   # iterations, learning rate + (m, v) for two
    assert opt.variables == opt.variables() and opt.variables[0] is opt.iterations  # Keras 3
    assert opt.variables[1] is opt.learning_rate
    m = opt.get_slot(next(iter(opt._slots)), "m")
    assert m.trainable is False and np.any(m.numpy() != 0)
    with pytest.raises(KeyError, match="no slot 'velocity'"):
        opt.get_slot(next(iter(opt._slots)), "velocity")


def test_learning_rate_variable_is_read_on_every_call():
    lr = gc.Variable(0.05, dtype=gc.float64, trainable=False)
    opt = gc.optimizers.SGD(lr)
    w, b, fn = train(opt, 3, True)
    lr.assign(0.0)
    fn(gc.constant(X), gc.constant(Y))
    np.testing.assert_allclose(w, sgd_np(3, 0.05, 0.0)[0])   # unchanged by the lr=0 step


def test_float32_variables_keep_their_dtype():
    w = gc.Variable(np.ones(2, np.float32))
    opt = gc.optimizers.Adam(0.1)
    with gc.GradientTape() as tape:
        loss = gc.reduce_sum(w * w)
    opt.apply_gradients([(tape.gradient(loss, w), w)])
    assert w.dtype == gc.float32
    np.testing.assert_allclose(w.numpy(), [0.9, 0.9], rtol=1e-5)


def test_errors():
    w = gc.Variable([1.0, 2.0])
    opt = gc.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="no gradients provided for any variable"):
        opt.apply_gradients([(None, w)])
    with pytest.raises(TypeError, match="gradient of dtype float64 for variable"):
        opt.apply_gradients([(gc.constant([1.0, 1.0], gc.float64), w)])
    with pytest.raises(TypeError, match="expected \\(gradient, gc.Variable\\) pairs"):
        opt.apply_gradients([(gc.constant([1.0, 1.0]), gc.constant([1.0, 1.0]))])
    with pytest.raises(ValueError, match="momentum must be a number in \\[0, 1\\]"):
        gc.optimizers.SGD(0.1, momentum=1.5)
    with pytest.raises(ValueError, match="beta_1 must be a number in \\[0, 1\\)"):
        gc.optimizers.Adam(beta_1=1.0)
    with pytest.raises(ValueError, match="learning_rate must be >= 0"):
        gc.optimizers.SGD(-1.0)
    # a None gradient next to a real one is skipped with a UserWarning naming it, as in Keras
    v = gc.Variable([5.0], name="unused_v")
    with pytest.warns(UserWarning, match=r"gradients do not exist for variables \['unused_v:0'\]"):
        opt.apply_gradients([(gc.constant([1.0, 1.0]), w), (None, v)])
    np.testing.assert_allclose(w.numpy(), [0.9, 1.9])
    np.testing.assert_allclose(v.numpy(), [5.0])


def test_lazily_built_model_and_slots_in_one_compiled_step():
    """Model variables and optimizer slots both created on the first call of the step."""
    class Lazy(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        def __call__(self, x):
            if self.w is None:
                self.w = gc.Variable(np.zeros((3, 1)))
            return gc.matmul(x, self.w)[:, 0]
    model = Lazy()
    opt = gc.optimizers.SGD(0.05, momentum=0.9)

    @gc.function
    def step(x, y):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    for _ in range(7):
        step(gc.constant(X), gc.constant(Y - 0.3))
    # same updates as the numpy momentum SGD on w alone (no bias here)
    w, vel = np.zeros(3), np.zeros(3)
    for _ in range(7):
        g = 2 * X.T @ (X @ w - (Y - 0.3)) / len(Y)
        vel = tf_lr(0.9) * vel - tf_lr(0.05) * g
        w = w + vel
    np.testing.assert_allclose(model.w.numpy()[:, 0], w, rtol=1e-10)
    assert step.tracing_count == 2 and len(opt.variables()) == 3


def test_keras3_apply_and_build():
    """Keras 3's optimizer.apply(grads, variables) and build(variables): the same update as
    apply_gradients, slots made by build."""
    w1, w2 = gc.Variable([1.0, 2.0]), gc.Variable([1.0, 2.0])
    a, b = gc.optimizers.Adam(0.1), gc.optimizers.Adam(0.1)
    b.build([w2])
    assert len(b.variables) == 4 and len(a.variables) == 2     # Keras 3: iteration, lr, m, v
    g = gc.constant([0.5, -1.0])
    a.apply_gradients([(g, w1)])
    b.apply([g], [w2])
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())
    assert int(b.iterations.numpy()) == 1
    with pytest.raises(ValueError, match="1 gradients for 2 variables"):
        b.apply([g], [w1, w2])
