"""Optional comparison columns: hand-written numba kernels, TensorFlow and JAX.

A peer builds, for a workload's Case, a zero-argument callable returning the list of the
same outputs as the graphc workload (anything np.asarray takes), so the runner can time it
and check it against eager graphc. TensorFlow and JAX are used only when already
importable; they are never dependencies. A peer without an implementation for a workload
raises PeerUnsupported.
"""
import importlib.util


class PeerUnsupported(Exception):
    """This peer has no implementation of that workload."""


class NumbaHand:
    """Each workload written by hand as a @numba.njit kernel (numba is a dependency)."""

    name = "numba (hand)"

    @staticmethod
    def unavailable():
        return None if importlib.util.find_spec("numba") else "numba is not installed"

    @staticmethod
    def build(workload, case):
        from . import hand_numba
        kernel = hand_numba.KERNELS.get(workload)
        if kernel is None:
            raise PeerUnsupported(workload)
        return kernel(case)


class TensorFlowPeer:
    """The workload in TensorFlow, compiled with tf.function (when TensorFlow is installed)."""

    name = "tensorflow"

    @staticmethod
    def unavailable():
        return None if importlib.util.find_spec("tensorflow") else "tensorflow is not installed"

    @staticmethod
    def build(workload, case):
        import tensorflow as tf
        args = [tf.constant(a) for a in case.arrays]
        if workload == "mlp_train_step":
            return _tf_mlp(tf, case, args)
        if workload == "elementwise":
            def fn(x):
                return tf.tanh(1.5 * x + 0.5) * tf.exp(-x * x) + 0.5 * tf.sin(x)
        elif workload == "softmax":
            def fn(x):
                return tf.nn.softmax(x, axis=-1)
        elif workload == "layernorm":
            def fn(x, gamma, beta):
                mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
                return (x - mean) * tf.math.rsqrt(var + 1e-5) * gamma + beta
        elif workload == "scalar_loop":
            def fn(n):
                s, _ = tf.while_loop(lambda s, i: i < n, lambda s, i: (s + i * i % 7, i + 1),
                                     (tf.constant(0), tf.constant(0)))
                return s
        elif workload == "branchy_loop":
            def fn(x):
                acc = tf.constant(0.0)
                for i in tf.range(tf.size(x)):
                    if x[i] > 0:
                        acc += x[i] ** 2
                    else:
                        acc -= x[i]
                return acc
        elif workload == "dispatch":
            def fn(x, y):
                return x + y
        else:
            raise PeerUnsupported(workload)
        compiled = tf.function(fn)
        return lambda: [compiled(*args)]


class JaxPeer:
    """The workload in JAX, compiled with jax.jit (when JAX is installed)."""

    name = "jax"

    @staticmethod
    def unavailable():
        return None if importlib.util.find_spec("jax") else "jax is not installed"

    @staticmethod
    def build(workload, case):
        import jax
        import jax.numpy as jnp
        args = [jnp.asarray(a) for a in case.arrays]
        if workload == "mlp_train_step":
            return _jax_mlp(jax, jnp, case, args)
        if workload == "elementwise":
            def fn(x):
                return jnp.tanh(1.5 * x + 0.5) * jnp.exp(-x * x) + 0.5 * jnp.sin(x)
        elif workload == "softmax":
            def fn(x):
                return jax.nn.softmax(x, axis=-1)
        elif workload == "layernorm":
            def fn(x, gamma, beta):
                mean = jnp.mean(x, axis=-1, keepdims=True)
                var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
                return (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta
        elif workload == "scalar_loop":
            def fn(n):
                return jax.lax.fori_loop(0, n, lambda i, s: s + i * i % 7, jnp.int32(0))
        elif workload == "branchy_loop":
            def fn(x):
                def body(i, acc):
                    return jax.lax.cond(x[i] > 0, lambda: acc + x[i] ** 2, lambda: acc - x[i])
                return jax.lax.fori_loop(0, x.shape[0], body, jnp.float32(0.0))
        elif workload == "dispatch":
            def fn(x, y):
                return x + y
        else:
            raise PeerUnsupported(workload)
        compiled = jax.jit(fn)
        return lambda: [compiled(*args).block_until_ready()]


def _tf_mlp(tf, case, args):
    """The MLP step with tf.Variables, a GradientTape and plain SGD, under tf.function."""
    params = [tf.Variable(case.init[k]) for k in _MLP_PARAMS]
    lr = case.learning_rate

    @tf.function
    def step(x, labels):
        w1, b1, w2, b2 = params
        with tf.GradientTape() as tape:
            logits = tf.nn.relu(x @ w1 + b1) @ w2 + b2
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(lr * g)
        return loss

    return lambda: [step(*args)] + params


def _jax_mlp(jax, jnp, case, args):
    """The MLP step as a jitted jax.value_and_grad update on a list of parameter arrays."""
    state = [[jnp.asarray(case.init[k]) for k in _MLP_PARAMS]]
    lr = case.learning_rate

    def loss_fn(params, x, labels):
        w1, b1, w2, b2 = params
        logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    @jax.jit
    def step(params, x, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
        return loss, [p - lr * g for p, g in zip(params, grads)]

    def call():
        loss, state[0] = step(state[0], *args)
        return [loss.block_until_ready()] + state[0]

    return call


_MLP_PARAMS = ("w1", "b1", "w2", "b2")
PEERS = [NumbaHand, TensorFlowPeer, JaxPeer]
