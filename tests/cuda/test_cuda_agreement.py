"""backend="cuda" agrees with backend="numpy" at small sizes: elementwise ops of every dtype
(integer overflow, NaN, inf, -0.0), reductions, softmax, layernorm, cond/while, gradients,
the MLP train step, and random programs. Each test also asserts the fewest CUDA kernel
launches expected (lowering.lower_group)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from cuda_helpers import CudaRuns, agree, mlp_step

KERNELS = 1     # every test below has fused groups: their CUDA kernels must run

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),   # numpy's, edge values
              pytest.mark.filterwarnings("ignore::graphc.autograph.AutoGraphWarning")]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_elementwise_every_dtype(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 4)) * 5).astype(dtype)
    y = (np.abs(rng.standard_normal(4)) * 3 + 1).astype(dtype)
    agree(lambda a, b: [a + b, a - b, a * b, gc.maximum(a, b), gc.minimum(a, b), -a,
                        gc.abs(a), a < b, a == b, a // b, a % b], x, y, kernels=KERNELS)


def test_bool_elementwise():
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    agree(lambda p, q: [p & q, p | q, ~p, gc.logical_xor(p, q) if hasattr(gc, "logical_xor")
                        else p & ~q], a, b, kernels=KERNELS)


def test_integer_overflow_wraps_like_numpy():
    x = np.array([2**30, -2**30, 123456789, 2**31 - 1], np.int32)
    agree(lambda a: [(a * a) // 3, (a + a) * 4 - 1, a + 1], x, kernels=KERNELS)
    y = np.array([2**62, -2**62, 2**63 - 1], np.int64)
    agree(lambda a: [a * 4, a + a, a - (-a)], y, kernels=KERNELS)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_inf_and_negative_zero(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 3e38, -1.5], dtype)
    agree(lambda a: [gc.exp(a * 2), gc.log(a + 0), gc.maximum(a * 1, a * 2), gc.sqrt(a),
                     gc.minimum(a * 1, -a), gc.sign(-a), gc.floor(a * 0.5), a * -1.0,
                     a / 0.0, -a + 0.0], x, kernels=KERNELS)
    # float floordiv is TF's floor(x / y): inf // 3 is inf, -1e-30 // inf is -0. (numpy: nan, -1)
    agree(lambda a: [(a * 2) // 3.0, (a * -1.0) // np.inf, gc.floordiv(a * 1, 0.0)], x,
          kernels=KERNELS)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_reductions(axis, dtype):
    x = np.arange(-6, 6).reshape(3, 4).astype(dtype)
    agree(lambda a: [gc.reduce_sum(a * 2, axis=axis), gc.reduce_max(a, axis=axis),
                     gc.reduce_min(a, axis=axis, keepdims=True),
                     gc.reduce_prod(a + 7, axis=axis)], x, kernels=KERNELS)
    if dtype != "int32":
        agree(lambda a: [gc.reduce_mean(a, axis=axis), gc.reduce_logsumexp(a, axis=axis)],
              x, kernels=KERNELS)


def _softmax(x):
    m = gc.reduce_max(x, axis=-1, keepdims=True)
    e = gc.exp(x - m)
    return e / gc.reduce_sum(e, axis=-1, keepdims=True)


def _layernorm(x, g, b):
    mean = gc.reduce_mean(x, axis=-1, keepdims=True)
    xc = x - mean
    var = gc.reduce_mean(xc * xc, axis=-1, keepdims=True)
    return xc * gc.rsqrt(var + 1e-5) * g + b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_and_layernorm(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 7)).astype(dtype)
    g, b = rng.standard_normal(7).astype(dtype), rng.standard_normal(7).astype(dtype)
    agree(_softmax, x, kernels=KERNELS)
    agree(_layernorm, x, g, b, kernels=KERNELS)
    agree(lambda a: gc.nn.log_softmax(a * 0.5), x, kernels=KERNELS)


def test_cond_and_while():
    def f(x, n):
        i = gc.constant(0)
        while i < n:
            x = x * 0.5 + 1.0
            i += 1
        if gc.reduce_sum(x) > 3.0:
            x = x - 1.0
        else:
            x = x + 1.0
        return x, i
    for n in (0, 1, 4):
        runs = agree(f, np.arange(3, dtype=np.float32), np.int32(n), kernels=KERNELS)
        assert runs.device_ops >= 2          # the while and the cond ran as device steps


def test_gradients_inside_a_cuda_function():
    w = gc.Variable(np.array([[0.5, -1.0], [2.0, 0.25]]))

    def f(x):
        with gc.GradientTape() as tape:
            y = gc.reduce_sum(gc.tanh(gc.matmul(x, w)) ** 2)
        gw, = tape.gradient(y, [w])
        return y, gw
    x = np.array([[1.0, 2.0], [-0.5, 0.3], [0.0, 1.0]])
    agree(f, x, kernels=KERNELS)

    def g(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            acc = x
            for _ in gc.range(3):
                acc = gc.sin(acc) * x
            s = gc.reduce_sum(acc)
        return tape.gradient(s, x)
    agree(g, x, kernels=KERNELS)


def test_mlp_train_step_agrees_with_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = rng.integers(0, 3, 6).astype(np.int32)
    results = {}
    for backend in ("numpy", "cuda"):
        step, params = mlp_step(backend)
        runs = CudaRuns()
        with runs.count():
            losses = [float(step(x, y)) for _ in range(3)]
        results[backend] = losses, [p.numpy() for p in params]
        if backend == "cuda":
            assert runs.kernels >= KERNELS and runs.device_ops > 0
    (l0, p0), (l1, p1) = results["numpy"], results["cuda"]
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    assert l1[2] < l1[0]
    for a, b in zip(p0, p1):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


UNARY = [gc.exp, gc.tanh, gc.abs, gc.negative, gc.square, lambda a: gc.maximum(a, 0.0),
         lambda a: gc.reduce_sum(a, axis=-1, keepdims=True), lambda a: gc.reshape(a, [-1, 3]),
         lambda a: a * 0.5 + 1.0, lambda a: _softmax(a)]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b,
          lambda a, b: gc.minimum(a, b), lambda a, b: gc.where(a > b, a, b)]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=st.lists(st.tuples(st.booleans(), st.integers(0, 99), st.integers(0, 99)),
                     min_size=1, max_size=6),
       seed=st.integers(0, 2**16), dtype=st.sampled_from(["float32", "float64"]))
def test_random_programs_agree(prog, seed, dtype):
    """A random chain of unary and binary ops over two (2, 3) inputs (values stay (2, 3))."""
    def f(a, b):
        vals = [a, b]
        for binary, i, j in prog:
            x = vals[i % len(vals)]
            if binary:
                vals.append(BINARY[j % len(BINARY)](x, vals[j % len(vals)]))
            else:
                vals.append(UNARY[j % len(UNARY)](x) + 0 * x)
        # one op the simplifier keeps, so a kernel runs even when the chain folds away
        # (where(b > b, b, b) is b: no kernel, and the check below was not honest then)
        return vals[2:] + [vals[-1] * 1.5 + a]
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((2, 3)).astype(dtype) for _ in range(2))
    agree(f, a, b, kernels=KERNELS)
