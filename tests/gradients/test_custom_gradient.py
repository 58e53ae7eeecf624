"""gc.custom_gradient: TF's tf.custom_gradient examples, eagerly and compiled on the numpy
backend and on backend="auto" with kernels forced. Expected values are TensorFlow 2.21's
(run with tf.custom_gradient on the same inputs), written here as literals."""
import numpy as np
import pytest

import graphc as gc
from tf_values import first_and_second

MODES = ["eager", "numpy", "auto"]


@pytest.fixture(params=MODES)
def run(request, monkeypatch):
    """run(fn, *args): fn eagerly, or compiled on the mode's backend (auto: numba kernels
    forced at any size)."""
    mode = request.param
    if mode == "auto":
        pytest.importorskip("numba")
        monkeypatch.setenv("GRAPHC_NUMBA_MIN_SIZE", "0")
        monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "kernel")

    def call(fn, *args):
        f = fn if mode == "eager" else gc.function(fn, backend=mode)
        return f(*args)
    call.mode = mode
    return call


def values(x):
    if isinstance(x, (list, tuple)):
        return [values(v) for v in x]
    return None if x is None else np.asarray(x).tolist()


@gc.custom_gradient
def log1pexp(x):
    e = gc.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return gc.math.log(1 + e), grad


def naive_log1pexp(x):
    return gc.math.log(1 + gc.exp(x))


def value_and_grad(f):
    def g(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return y, tape.gradient(y, x)
    return g


@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # the naive gradient's inf * 0
def test_log1pexp_is_stable_where_the_naive_gradient_is_nan(run):
    y, g = run(value_and_grad(log1pexp), gc.constant(100.0))
    assert float(y) == np.inf and float(g) == 1.0              # TF: inf, 1.0
    _, naive = run(value_and_grad(naive_log1pexp), gc.constant(100.0))
    assert np.isnan(float(naive))                              # TF: nan


def test_second_derivative_through_grad_fn_ops(run):
    _, dy, d2y = run(first_and_second(log1pexp), gc.constant(2.0))
    # TF: 0.8807971, 0.10499358 (= e^2 / (1 + e^2)^2: grad_fn's ops differentiated through
    # the forward's exp, which the outer tape recorded)
    np.testing.assert_allclose([float(dy), float(d2y)], [0.8807971, 0.10499358], rtol=1e-6)


@gc.custom_gradient
def clip_gradient_by_norm(x, norm):
    y = gc.identity(x)

    def grad_fn(dresult):
        return [gc.clip_by_norm(dresult, norm), None]
    return y, grad_fn


def test_clip_gradient_by_norm(run):
    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            loss = gc.reduce_sum(clip_gradient_by_norm(x, 1.0) * gc.constant([3.0, 4.0, 0.0]))
        return loss, tape.gradient(loss, x)
    loss, g = run(f, gc.constant([1.0, 2.0, 3.0]))
    assert float(loss) == 11.0
    np.testing.assert_allclose(g, [0.6, 0.8, 0.0], rtol=1e-6)   # TF: [0.6, 0.8, 0.0]


@gc.custom_gradient
def ste_round(x):
    return gc.round(x), lambda dy: dy


@gc.custom_gradient
def ste_sign(x):
    return gc.sign(x), lambda dy: dy * gc.cast(gc.abs(x) <= 1, dy.dtype)


def test_straight_through_estimators(run):
    def f(x, y):
        with gc.GradientTape() as tape:
            tape.watch([x, y])
            a = gc.reduce_sum(ste_round(x) * x)
            b = gc.reduce_sum(ste_sign(y) * gc.constant([1.0, 2.0, 3.0, 4.0, 5.0]))
        return tape.gradient([a, b], [x, y])
    gx, gy = run(f, gc.constant([0.4, 1.6, -2.5]), gc.constant([-2.0, -0.5, 0.0, 0.5, 3.0]))
    np.testing.assert_allclose(gx, [0.4, 3.6, -4.5], rtol=1e-6)    # TF: [0.4, 3.6, -4.5]
    assert values(gy) == [0.0, 2.0, 3.0, 4.0, 0.0]                  # TF's
    # without the estimator, round has no gradient at all (TF: None for the path)
    assert values(run(value_and_grad(gc.round), gc.constant([0.4]))[1]) is None


@gc.custom_gradient
def two_outputs(x, y):
    def grad(da, db):              # one upstream per output, as TF passes them
        return da * y + db, da * x - db
    return (x * y, x - y), grad


def test_two_outputs(run):
    def f(x, y):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            a, b = two_outputs(x, y)
            s = gc.reduce_sum(a * 3.0 + b * b)
        return tape.gradient(s, [x, y]), tape.gradient(a, [x, y])
    both, only_a = run(f, gc.constant([1.5, -2.0]), gc.constant([2.0, 0.5]))
    assert values(both) == [[5.0, -3.5], [5.5, -1.0]]            # TF's
    # b unused: its upstream is zeros (TF passes zeros too)
    assert values(only_a) == [[2.0, 0.5], [1.5, -2.0]]


def test_persistent_tape_calls_grad_fn_per_gradient(run):
    calls = []

    @gc.custom_gradient
    def f(x):
        def grad(dy):
            calls.append(1)
            return dy * 2.0
        return x * 5.0, grad     # the forward's own gradient (5) is never used

    def g(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
            z = f(x * 3.0) + y
        return tape.gradient(y, x), tape.gradient(z, x)
    gy, gz = run(g, gc.constant(1.0))
    assert (float(gy), float(gz)) == (2.0, 8.0)
    assert len(calls) == 3       # once per use of f in each gradient, when it is built


def test_variables_need_the_variables_argument_and_get_its_gradients(run):
    v = gc.Variable(3.0)

    @gc.custom_gradient
    def usev(x):
        def grad(u, variables=None):
            assert variables == [v] or [w is v for w in variables] == [True]
            return u * v, [u * x * 100.0]
        return x * v, grad

    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = usev(x)
        return tape.gradient(y, [x, v])
    assert values(run(f, gc.constant(1.5))) == [3.0, 150.0]       # TF: 3.0, 150.0

    @gc.custom_gradient
    def no_variables_arg(x):
        return x * v, lambda u: u * v
    with pytest.raises(TypeError, match="grad_fn must accept keyword argument 'variables'"):
        run(lambda x: no_variables_arg(x), gc.constant(1.0))


def test_tape_gradients_of_other_ops_are_unaffected(run):
    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = log1pexp(x) + gc.sin(x) * x
        return tape.gradient(y, x)
    x = 0.5
    expected = 1 / (1 + np.exp(-x)) + np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(float(run(f, gc.constant(x))), expected, rtol=1e-6)


def test_keyword_arguments_are_passed_through_without_gradients(run):
    @gc.custom_gradient
    def scaled(x, scale=2.0):
        return x * scale, lambda u: u * scale

    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = scaled(x, scale=3.0)
        return y, tape.gradient(y, x)
    assert values(run(f, gc.constant(1.0))) == [3.0, 3.0]     # TF (eagerly): 3.0, 3.0


def test_without_a_tape_f_just_runs(run):
    assert float(run(lambda x: log1pexp(x) * 2.0, gc.constant(0.0))) == pytest.approx(
        2 * np.log(2.0), rel=1e-6)


class Scale(gc.Module):
    """y = tanh(x * w) + b, whose gradient for w is clipped to [-0.5, 0.5] by grad_fn."""

    def __init__(self):
        super().__init__()
        self.w = gc.Variable([0.5, -1.0, 2.0])
        self.b = gc.Variable(0.1)

    def __call__(self, x):
        @gc.custom_gradient
        def forward(x):
            def grad(dy, variables=None):
                t = gc.tanh(x * self.w)
                d = dy * (1 - t * t)
                gw = gc.clip_by_value(gc.reduce_sum(d * x, axis=0), -0.5, 0.5)
                by_var = {id(self.w): gw, id(self.b): gc.reduce_sum(dy)}
                return d * self.w, [by_var[id(v)] for v in variables]
            return gc.tanh(x * self.w) + self.b, grad
        return forward(x)


def hand_written_steps(x, t, steps):
    """The same SGD steps with the gradients written out in numpy (float32)."""
    w, b = np.array([0.5, -1.0, 2.0], np.float32), np.float32(0.1)
    for _ in range(steps):
        th = np.tanh(x * w)
        dy = 2 * (th + b - t) / np.float32(t.size)
        gw = np.clip(np.sum(dy * (1 - th * th) * x, axis=0), -0.5, 0.5)
        w, b = w - np.float32(0.1) * gw, b - np.float32(0.1) * np.sum(dy)
    return w, b


def test_module_variable_trained_with_sgd_in_a_compiled_step(run):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    t = rng.normal(size=(8, 3)).astype(np.float32)
    model, opt = Scale(), gc.optimizers.SGD(0.1)

    def step(x, t):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean((model(x) - t) ** 2)
        grads = tape.gradient(loss, [model.w, model.b])
        opt.apply_gradients(zip(grads, [model.w, model.b]))
        return loss
    f = step if run.mode == "eager" else gc.function(step, backend=run.mode)
    for _ in range(5):
        loss = f(x, t)
    # TF (the same module with tf.custom_gradient, tf.keras SGD, in a tf.function)
    np.testing.assert_allclose(float(loss), 1.1957893, rtol=1e-6)
    np.testing.assert_allclose(model.w.numpy(), [0.33008495, -0.91645426, 1.9684831], rtol=1e-6)
    np.testing.assert_allclose(float(model.b.numpy()), 0.19918315, rtol=1e-6)
    w, b = hand_written_steps(x, t, 5)
    np.testing.assert_allclose(model.w.numpy(), w, rtol=1e-6)
    np.testing.assert_allclose(float(model.b.numpy()), b, rtol=1e-6)


def test_recompute_grad_matches_the_plain_gradient(run):
    v = gc.Variable([0.3, -0.2])

    def block(x):
        return gc.tanh(x * v) * x
    recomputed = gc.recompute_grad(block)

    def grads(fn):
        def f(x):
            with gc.GradientTape() as tape:
                tape.watch(x)
                r = gc.reduce_sum(fn(x) ** 2)
            return tape.gradient(r, [x, v])
        return f
    x = gc.constant([1.0, 2.0])
    got = values(run(grads(recomputed), x))
    np.testing.assert_allclose(got, values(run(grads(block), x)), rtol=1e-6)
    # TF's tf.recompute_grad: [[0.32968068, 1.0976033], [0.5331819, -5.2015848]]
    np.testing.assert_allclose(got, [[0.32968068, 1.0976033], [0.5331819, -5.2015848]],
                               rtol=1e-6)
