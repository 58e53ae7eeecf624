"""Whole TF-2 programs ported mechanically (`tf.` -> `gc.` through the tiny shim below) and
compared end to end with the numbers TF 2.21 printed for the identical program, data and
initial weights (the tf spelling was run in a TF 2.21 venv; its outputs are the literals
here). Small sizes: the point is the whole path -- Module, tape, optimizer, checkpoint
manager, restore into fresh objects, AutoGraph while loop with assign_sub -- not one op."""
import types

import numpy as np
import pytest

import graphc as gc


def tf_spelling(backend):
    """`tf` as these programs use it: graphc, with Keras' optimizer path and a backend."""
    tf = types.SimpleNamespace(**{n: getattr(gc, n) for n in dir(gc) if not n.startswith("_")})
    tf.keras = types.SimpleNamespace(optimizers=gc.optimizers)
    tf.function = lambda f=None, **kw: gc.function(f, backend=backend, **kw)
    return tf


# --- the programs, exactly as run under TensorFlow (the tf name is the only difference) ---
def mlp_ckpt_losses(tf, tmp):
    """TF's guide MLP (tf.Module, Adam, GradientTape in a tf.function), a CheckpointManager
    save per epoch, then a fresh model and optimizer restored from the latest and trained on."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4)).astype(np.float32)
    Y = rng.integers(0, 3, 40).astype(np.int32)
    W1 = rng.normal(0, 0.5, (4, 8)).astype(np.float32)
    W2 = rng.normal(0, 0.5, (8, 3)).astype(np.float32)

    class Dense(tf.Module):
        def __init__(self, w, activation=None):
            super().__init__()
            self.w = tf.Variable(w)
            self.b = tf.Variable(tf.zeros([w.shape[1]]))
            self.activation = activation

        def __call__(self, x):
            y = tf.matmul(x, self.w) + self.b
            return self.activation(y) if self.activation else y

    class MLP(tf.Module):
        def __init__(self):
            super().__init__()
            self.hidden = Dense(W1, tf.nn.relu)
            self.out = Dense(W2)

        def __call__(self, x):
            return self.out(self.hidden(x))

    def make():
        model, opt = MLP(), tf.keras.optimizers.Adam(learning_rate=0.01)

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y, logits=model(x)))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return model, opt, step

    losses = []
    model, opt, step = make()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model, optimizer=opt),
                                         tmp, max_to_keep=2)
    for epoch in range(2):
        for i in range(4):
            losses.append(float(step(X[i * 10:(i + 1) * 10], Y[i * 10:(i + 1) * 10])))
        manager.save()
    model2, opt2, step2 = make()
    tf.train.Checkpoint(model=model2, optimizer=opt2).restore(manager.latest_checkpoint)
    for i in range(4):
        losses.append(float(step2(X[i * 10:(i + 1) * 10], Y[i * 10:(i + 1) * 10])))
    return (losses, [v.numpy() for v in model2.trainable_variables], int(opt2.iterations),
            step2.experimental_get_tracing_count())


def linear_early_stop(tf):
    """Manual assign_sub updates in a tf.function, a while loop stopping on a tensor test."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(32, 3)).astype(np.float32)
    Y = (X @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
         + 0.05 * rng.normal(size=(32, 1))).astype(np.float32)
    w, b = tf.Variable(tf.zeros([3, 1])), tf.Variable(0.0)

    @tf.function
    def fit(x, y, lr, tol):
        step = tf.constant(0)
        prev = tf.constant(np.inf, tf.float32)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        while step < 500 and prev - loss > tol:
            with tf.GradientTape() as tape:
                loss_t = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            dw, db = tape.gradient(loss_t, [w, b])
            w.assign_sub(lr * dw)
            b.assign_sub(lr * db)
            prev = loss
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            step += 1
        return step, loss

    n, loss = fit(X, Y, 0.1, 1e-5)
    return int(n), float(loss), w.numpy().ravel().tolist(), float(b.numpy())


# --- TF 2.21's results for the programs above ------------------------------------------
TF_MLP_LOSSES = [1.2924550771713257, 1.6575549840927124, 1.8546552658081055,
                 1.6891765594482422, 1.1833117008209229, 1.4950227737426758,
                 1.7183892726898193, 1.5387614965438843,    # saved after steps 4 and 8
                 1.1297533512115479, 1.3703911304473877,    # a fresh model restored
                 1.600227952003479, 1.408561110496521]
TF_MLP_OUT_W = [
    [-0.3844625949859619, 0.292912095785141, -0.1176719218492508],
    [0.3715558350086212, -0.08196401596069336, -0.2718949019908905],
    [-0.4148355722427368, 1.4219738245010376, 0.047530096024274826],
    [-0.9740114808082581, -0.3723319470882416, 0.32460829615592957],
    [-0.19983389973640442, 0.6930521726608276, 0.4288129210472107],
    [-0.1567666083574295, -0.2546611726284027, -0.39457157254219055],
    [-0.2942505180835724, -0.7936933636665344, 0.62142014503479],
    [0.6855785846710205, -0.5565231442451477, -0.475077748298645]]
TF_LINEAR = (44, 0.0020751296542584896,
             [1.4834684133529663, -2.0049924850463867, 0.483791708946228], 0.29694560170173645)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_mlp_checkpoint_resume_matches_tf(backend, tmp_path):
    losses, weights, iterations, traces = mlp_ckpt_losses(tf_spelling(backend), str(tmp_path))
    np.testing.assert_allclose(losses, TF_MLP_LOSSES, rtol=2e-6)
    np.testing.assert_allclose(weights[-1], TF_MLP_OUT_W, rtol=1e-5, atol=1e-6)
    # the restored optimizer resumed its step count and slots; the first trace made the
    # new optimizer's slots, so the step was traced again (TF: 2)
    assert (iterations, traces) == (12, 2)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_linear_early_stop_matches_tf(backend):
    steps, loss, w, b = linear_early_stop(tf_spelling(backend))
    assert steps == TF_LINEAR[0]
    np.testing.assert_allclose(loss, TF_LINEAR[1], rtol=1e-5)
    np.testing.assert_allclose(w + [b], TF_LINEAR[2] + [TF_LINEAR[3]], rtol=1e-5)
