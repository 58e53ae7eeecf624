"""Agreement harness: every elementwise op, every reduction and the fused patterns give the
same results on the numba backend as on the numpy interpreter and eagerly.

Each function computes many ops at once, so one compiled kernel covers a whole op family
per dtype and broadcast pattern: the number of distinct compiles stays small.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.runtime.registry import REGISTRY
from agreement_helpers import agree as _agree

FLOAT_UNARY = ["negative", "abs", "sign", "square", "exp", "log", "log1p", "sqrt", "rsqrt",
               "sin", "cos", "tan", "tanh", "floor", "ceil", "round", "erf"]
INT_UNARY = ["negative", "abs", "sign", "square"]
BINARY = ["add", "subtract", "multiply", "divide", "floordiv", "mod", "pow", "maximum",
          "minimum"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
REDUCE = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]


pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py


def _op(name):
    return getattr(gc, name)


# shapes: a domain and a second operand that broadcasts into it (ranks 1..2 keep compiles few)
shape_pairs = st.sampled_from([((7,), (7,)), ((7,), ()), ((3, 5), (5,)), ((3, 5), (3, 1)),
                               ((3, 5), (3, 5)), ((1, 5), (4, 1))])


def _data(rng, shape, dtype, positive=False):
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape) * 3
        x = np.abs(x) + 0.1 if positive else x
        return np.asarray(x, dtype=dtype)
    lo = 1 if positive else -9
    return np.asarray(rng.integers(lo, 10, size=shape), dtype=dtype)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=shape_pairs, dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_float_unary_ops_agree(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    x, y = _data(rng, shapes[0], dtype), _data(rng, shapes[1], dtype, positive=True)
    # multiply by y first so each op is fused with another one into the same kernel
    _agree(lambda a, b: [_op(n)(a * b) for n in FLOAT_UNARY], x, y)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=shape_pairs, dtype=st.sampled_from(["int32", "int64"]),
       seed=st.integers(0, 2**16))
def test_int_unary_ops_agree(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    x, y = _data(rng, shapes[0], dtype), _data(rng, shapes[1], dtype, positive=True)
    _agree(lambda a, b: [_op(n)(a * b) for n in INT_UNARY], x, y)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=shape_pairs, dtype=st.sampled_from(["float32", "float64", "int32", "int64"]),
       seed=st.integers(0, 2**16))
def test_binary_and_compare_ops_agree_with_broadcasting(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    x, y = _data(rng, shapes[0], dtype), _data(rng, shapes[1], dtype, positive=True)
    if np.dtype(dtype).kind == "i":
        y = np.minimum(y, 3).astype(dtype)     # keep integer powers in range

    def f(a, b):
        a2 = a + a                               # fused producer for every op below
        outs = [_op(n)(a2, b) for n in BINARY + COMPARE]
        outs.append(gc.where(a2 > b, a2, b))
        outs.append(gc.logical_and(a2 > b, gc.logical_not(a2 < b * b)))
        outs.append(gc.cast(a2, gc.float64 if a.dtype != gc.float64 else gc.float32))
        outs.append(gc.cast(a2 * b, gc.int32 if a.dtype.is_floating else gc.float32))
        outs.append(gc.cast(a2 - b, gc.bool))
        return outs
    _agree(f, x, y)


def test_integer_division_by_zero_raises_on_every_backend(numba_forced):
    """TF raises for an integer zero divisor (numpy gives 0): eagerly and on both backends;
    non-zero divisors agree, the ops running beside a fused producer."""
    x = np.array([7, -7, 0, 5], np.int32)
    fn = lambda a, b: [gc.floordiv(a * 3 + a, b), gc.mod(a * 3 - a, b)]  # noqa: E731
    _agree(fn, x, np.array([3, -2, 1, 2], np.int32))
    for zero_at in range(4):
        y = np.array([3, -2, 1, 2], np.int32)
        y[zero_at] = 0
        for run in (fn, gc.function(fn, backend="numpy"), gc.function(fn, backend="numba")):
            with pytest.raises(gc.errors.InvalidArgumentError, match="division by zero"):
                run(gc.constant(x), gc.constant(y))


def test_int32_overflow_wraps_like_numpy():
    x = np.array([2**30, -2**30, 123456789], np.int32)
    _agree(lambda a: [(a * a) // 3, (a + a) * 4 - 1], x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's own overflow warnings
def test_special_float_values_agree():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3e38, -1.5], np.float32)
    _agree(lambda a: [gc.exp(a * 2), gc.log(a + 0), gc.maximum(a * 1, a * 2),
                      gc.minimum(a * 1, -a), gc.sign(-a), gc.floor(a * 0.5)], x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_float_floordiv_agrees_at_infinities_and_zeros():
    # TF's floor(x / y): inf // 2 is inf and -1 // inf is -0.0 (Python's // gives nan, -1)
    x = np.array([np.inf, -np.inf, -1.0, -0.0, 1.0, 7.0, np.nan], np.float32)
    y = np.array([2.0, 3.0, np.inf, 1.0, 0.1, 0.0, 1.0], np.float32)
    got = _agree(lambda a, b: [gc.floordiv(a * 2, b * 2), (a * 2) // (b * 2)], x, y)
    want = np.array([np.inf, -np.inf, -0.0, -0.0, 10.0, np.inf, np.nan], np.float32)
    for g in got:
        np.testing.assert_array_equal(g.numpy(), want)
        assert np.signbit(g.numpy()[2:4]).all()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from([(6,), (3, 4), (2, 3, 4)]), data=st.data(),
       dtype=st.sampled_from(["float32", "float64", "int32"]), keep=st.booleans(),
       seed=st.integers(0, 2**16))
def test_reductions_agree(shape, data, dtype, keep, seed):
    rng = np.random.default_rng(seed)
    axes = data.draw(st.sampled_from([None, len(shape) - 1, 0, tuple(range(len(shape)))]))
    x = _data(rng, shape, dtype)
    y = _data(rng, shape, dtype, positive=True)
    if np.dtype(dtype).kind == "i":
        y = np.ones_like(y)

    def f(a, b):
        t = a * b
        return [_op(n)(t, axis=axes, keepdims=keep) for n in REDUCE]
    _agree(f, x, y)


def test_reduce_max_propagates_nan_and_handles_inf():
    x = np.array([[1, np.nan, 3], [-np.inf, -np.inf, -np.inf], [np.inf, 2, 1]], np.float32)
    _agree(lambda a: [gc.reduce_max(a * 1.5, axis=1), gc.reduce_min(a * 1.5, axis=1)], x)


def test_bool_reductions_agree():
    x = np.array([[1, -2, 3], [0, 0, 0], [4, 5, 6]], np.float32)
    _agree(lambda a: [gc.reduce_all(a * a > 0, axis=1), gc.reduce_any(a * a > 1, axis=1)], x)


def _softmax(x):
    m = gc.reduce_max(x, axis=-1, keepdims=True)
    e = gc.exp(x - m)
    return e / gc.reduce_sum(e, axis=-1, keepdims=True)


def _layernorm(x, g, b):
    mean = gc.reduce_mean(x, axis=-1, keepdims=True)
    xc = x - mean
    var = gc.reduce_mean(xc * xc, axis=-1, keepdims=True)
    return xc * gc.rsqrt(var + 1e-5) * g + b


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 9), cols=st.integers(1, 17), seed=st.integers(0, 2**16),
       dtype=st.sampled_from(["float32", "float64"]))
def test_fused_patterns_agree(rows, cols, seed, dtype):
    rng = np.random.default_rng(seed)
    x = _data(rng, (rows, cols), dtype)
    g, b = _data(rng, (cols,), dtype), _data(rng, (cols,), dtype)
    w = _data(rng, (cols, 3), dtype)
    bias = _data(rng, (3,), dtype)
    _agree(_softmax, x)
    _agree(_layernorm, x, g, b)
    _agree(lambda a: gc.reduce_logsumexp(a * 2, axis=1), x)
    _agree(lambda a: gc.nn.log_softmax(a * 0.5), x)
    _agree(lambda a: [gc.nn.gelu(a * 0.5), gc.nn.sigmoid(a) * gc.nn.relu(a)], x)
    _agree(lambda a, m, c: gc.nn.relu(gc.matmul(a, m) + c) * 2.0, x, w, bias)
    _agree(lambda a: gc.reduce_mean(gc.square(a - gc.reduce_mean(a, axis=0)), axis=0), x)


def test_every_fusible_registry_op_is_covered():
    """A new elementwise op in the registry must be added to this harness."""
    covered = set(FLOAT_UNARY + INT_UNARY + BINARY + COMPARE + REDUCE) | {
        "where", "logical_and", "logical_not", "logical_or", "cast", "fill", "stop_gradient",
        "piecewise_linear", "piecewise_linear_grad", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "logical_xor"}
    fusible = {n for n, d in REGISTRY.items() if d.kind in ("elementwise", "reduce")}
    missing = fusible - covered - {"reduce_all", "reduce_any"}
    assert not missing, f"ops without an agreement test: {sorted(missing)}"


def test_logical_or_agrees():
    x = np.array([[1, -2], [0, 3]], np.float32)
    _agree(lambda a: gc.logical_or(a * a > 1, a < 0), x)


def test_stop_gradient_agrees():
    x = np.array([[1, -2], [0, 3]], np.float32)
    _agree(lambda a: gc.stop_gradient(a * 2) + a, x)


def test_piecewise_linear_markers_agree():
    """relu's gradient markers (identities the simplifier removes) in a second derivative."""
    x = np.array([[1, -2], [0, 3]], np.float32)

    def second(a):
        with gc.GradientTape() as outer:
            outer.watch(a)
            with gc.GradientTape() as inner:
                inner.watch(a)
                y = gc.nn.relu(a * 2.0) * a + gc.nn.leaky_relu(a)
            g = inner.gradient(y, a)
        return g * 3.0, outer.gradient(g, a) + 1.0
    _agree(second, x)


def test_non_contiguous_inputs_agree():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    _agree(lambda a: gc.exp(gc.transpose(a) * 0.1) + 1.0, x)
    _agree(lambda a: gc.reduce_sum(gc.transpose(a) * 2.0, axis=1), x)
    _agree(lambda a: a[:, ::2] * 3.0 - 1.0, x)


def test_parallel_variant_agrees(monkeypatch, all_cores_free):
    """The prange variant (used from PAR_MIN elements up) on small shapes."""
    from graphc.kernels.cpu import groups
    from graphc.kernels.cpu import kernel as cpu_kernel
    monkeypatch.setattr(groups, "PAR_MIN", 0)
    x = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
    got = _agree(_softmax, x)
    np.testing.assert_allclose(got[0].numpy().sum(axis=1), 1.0, rtol=1e-5)
    _agree(lambda a: gc.tanh(a * 2.0) * gc.exp(-a * a) + 0.5 * gc.sin(a), x)
    par = [k.fast[1] if k.fast else k.parallel for k in cpu_kernel._KERNELS.values()]
    assert sum(bool(p and p.signatures) for p in par) >= 2


def _trig_counts():
    from graphc.kernels.cpu import kernel as cpu_kernel
    kernels = [k for k in cpu_kernel._KERNELS.values() if k.fast]
    return (sum(k.redone for k in kernels if not k.checked),
            sum(k.slow_chunks for k in kernels if k.checked))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("par", [False, True])
def test_fast_trig_kernel_redoes_huge_arguments_with_whole_range_trig(monkeypatch, dtype, par):
    """Trig kernels that are not flat (here: broadcasting a row) run the reduced-range
    polynomials first and redo the group with the whole-range functions when an argument
    reaches 2**17 (float32) / 2**47 (float64)."""
    from graphc.kernels.cpu import groups
    monkeypatch.setattr(groups, "PAR_MIN", 0 if par else 1 << 62)
    rng = np.random.default_rng(4)
    x = rng.uniform(-10, 10, (6, 5)).astype(dtype)
    row = rng.uniform(-1, 1, (1, 5)).astype(dtype)
    fn = lambda a, r: [gc.sin(a) * r + gc.cos(a * 0.5), gc.tan(a) - r]  # noqa: E731
    before = _trig_counts()
    _agree(fn, x, row)
    assert _trig_counts() == before
    x[1, 2], x[4, 0], x[5, 4] = 1e30, -2.0 ** 52, np.inf
    _agree(fn, x, row)
    assert _trig_counts()[0] > before[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("par", [False, True])
def test_flat_trig_kernel_checks_each_chunk(monkeypatch, dtype, par):
    """Flat elementwise trig groups check each chunk's arguments (here one computed in the
    group, a * 0.5) and run only the chunks holding huge ones with whole-range trig."""
    from graphc.kernels.cpu import codegen_chunks, groups
    monkeypatch.setattr(groups, "PAR_MIN", 0 if par else 1 << 62)
    n = 3 * codegen_chunks.CHUNK + 17                      # three full chunks and a tail
    x = np.random.default_rng(5).uniform(-10, 10, n).astype(dtype)
    fn = lambda a: gc.sin(a) * 2.0 + gc.cos(a * 0.5) - gc.tan(a)  # noqa: E731 - one group
    before = _trig_counts()
    _agree(fn, x)
    assert _trig_counts() == before
    x[5], x[n - 3] = 1e30, np.inf            # first chunk: huge; tail: inf (nan, no miss)
    x[codegen_chunks.CHUNK + 1] = -1e20       # second chunk: huge
    _agree(fn, x)
    compiled = gc.function(fn, backend="numba")
    compiled(x)                                  # measures and decides once
    _, slow = _trig_counts()
    compiled(x)
    redone, slow_after = _trig_counts()
    assert redone == before[0] and slow_after - slow == 2      # one call: two chunks


def test_empty_tensors_agree():
    x = np.zeros((0, 3), np.float32)
    _agree(lambda a: [gc.exp(a * 2.0) + 1.0] + [_op(n)(a * 2.0, axis=0) for n in REDUCE], x)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum", "mod"]),
       dtype=st.sampled_from(["int32", "float32", "float64"]), n=st.integers(0, 40),
       start=st.integers(-5, 5))
def test_compiled_scalar_loops_agree(op, dtype, n, start):
    """A while loop over scalars, compiled whole on numba, against the interpreter."""
    def loop(acc, k):
        i = gc.constant(0)
        while i < k:
            step = gc.cast(i % 3 + 1, acc.dtype)
            acc = _op(op)(acc, step) if op != "mod" else acc % (step + 2) + step
            i += 1
        return acc
    acc, k = gc.constant(np.asarray(start, dtype)), gc.constant(np.int32(n))
    ref = gc.function(loop, backend="numpy")(acc, k)
    fast = gc.function(loop, backend="numba")
    res = fast(acc, k)
    assert res.dtype == ref.dtype and res.shape == ()
    np.testing.assert_allclose(res.numpy(), ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(loop(acc, k).numpy(), ref.numpy(), rtol=1e-6)   # eager
    ((_, runner, reason),) = fast.get_concrete_function(acc, k).graph._numba_plan.loops
    assert runner is not None and runner.fn is not None, reason


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=shape_pairs, dtype=st.sampled_from(["int32", "int64"]), seed=st.integers(0, 2**16))
def test_bitwise_and_xor_ops_agree(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shapes[0], dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, size=shapes[1], dtype=dtype, endpoint=True)
    _agree(lambda a, b: [gc.bitwise_and(a, b) - b, gc.bitwise_or(a, b) + 1,
                         gc.bitwise_xor(a, b) * 3, gc.invert(a ^ b),
                         gc.logical_xor(a > b, a < 0) | (a == b)], x, y)
