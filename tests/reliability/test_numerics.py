"""Compiled code computes what eager (numpy) computes, up to float rounding (issue 12, item 3).

Every case the adversarial probe found runs on numba kernels (and compiled loops) with the
result compared to eager bit for bit where it is exact: NaN, inf, the sign of zero, integer
results. No fast-math flag may change those.
"""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.kernels.cpu import backend as cpu
from graphc.kernels.vecmath.ulp import ulp_distance
from graphc.runtime.dispatch import bind
from graphc.runtime.registry import REGISTRY

F32, F64, I32, I64 = gc.float32, gc.float64, gc.int32, gc.int64
FEW = settings(max_examples=8, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture,
                                      HealthCheck.too_slow])
APPROX = {"exp", "log", "log1p", "sin", "cos", "tan", "tanh", "erf", "pow"}   # polynomials
MAX_ULP = 4          # vecmath's documented worst case (tan, float32)


def bits_equal(got, want):
    """Same dtype and same value, NaN-ness and zero sign everywhere."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        same = (got == want) & (np.signbit(got) == np.signbit(want)) | (got != got) & (want != want)
    else:
        same = got == want
    return same


def assert_bits(got, want, what=""):
    same = bits_equal(got, want)
    if not same.all():
        k = np.flatnonzero(~same)[:5]
        raise AssertionError(f"{what}: compiled {np.ravel(got)[k]} != eager {np.ravel(want)[k]} "
                             f"at flat positions {k}")


def assert_special_values(got, want, approx, what):
    """NaN-ness, infinities and zero signs exactly; other floats exactly, or within MAX_ULP
    for the polynomial ops."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind != "f" or not approx:
        return assert_bits(got, want, what)
    assert got.dtype == want.dtype
    exact = ~np.isfinite(want) | (want == 0) | ~np.isfinite(got) | (got == 0)
    assert_bits(got[exact], want[exact], what + " (special values)")
    ulps = ulp_distance(got[~exact], want[~exact]) if (~exact).any() else np.zeros(1)
    assert ulps.max() <= MAX_ULP, f"{what}: {ulps.max()} ulp from eager"


def eager(fn, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy's overflow warnings
        return fn(*[gc.constant(a) for a in arrays])


def compiled(numba_forced, fn, *arrays, loops=False):
    with numba_forced.expect(kernels=not loops, loops=loops):
        return gc.function(fn, backend="numba", autograph=loops)(*arrays)


def both(numba_forced, fn, *arrays):
    """fn compiled on numba and eagerly, as numpy arrays (compiled first)."""
    got = compiled(numba_forced, fn, *arrays)
    return np.asarray(got), eager(fn, *arrays).numpy()


# -- the probe's cases ----------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nan_survives_y_minus_y_minus_x(numba_forced, dt):
    x = np.array([1.0, 2.0, 3.0], dt)
    y = np.array([np.nan, np.inf, 1.0], dt)
    got, want = both(numba_forced, lambda x, y: y - (y - x), x, y)
    assert np.isnan(got[0]) and np.isnan(got[1])     # reassociation gave x
    assert_bits(got, want, "y - (y - x)")


def test_square_of_nan_power_is_nan(numba_forced):
    x = np.array([-2.0, 4.0, -0.0], np.float32)
    got, want = both(numba_forced, lambda x: gc.square(gc.pow(x, 1.5)), x)
    assert np.isnan(got[0])                          # fast-math gave -8
    assert_bits(got, want, "square(pow(x, 1.5))")


def test_overflow_to_inf_is_not_folded_away(numba_forced):
    x = np.array([1e10, 1.0, -1e10], np.float32)
    got, want = both(numba_forced, lambda x: (x * 1e30) * 1e-30, x)
    assert got[0] == np.inf and got[2] == -np.inf    # reassociation gave 1e10
    assert_bits(got, want, "(x * 1e30) * 1e-30")


def test_products_are_not_contracted_into_fma(numba_forced):
    # x * x - y with y = x * x rounded: 0 in numpy, the rounding error of x * x under FMA
    x = np.array([0.1, 1 / 3, np.pi, 1e-3], np.float64)
    y = x * x
    got, want = both(numba_forced, lambda x, y: x * x - y, x, y)
    assert_bits(got, want, "x * x - y")
    assert not got.any()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_signed_zeros_match_eager(numba_forced, dt):
    z = np.array([-0.0, 0.0, -0.0, 0.0, -0.4, 0.4, -0.5, np.nan], dt)
    w = np.array([0.0, -0.0, -0.0, 0.0, -0.0, 0.0, 0.0, 1.0], dt)
    cases = {"sign": lambda z, w: gc.sign(z),         # np.sign(-0.0) is +0.0
             "maximum": gc.maximum, "minimum": gc.minimum, "sqrt": lambda z, w: gc.sqrt(z),
             "round": lambda z, w: gc.round(z), "negative": lambda z, w: -(z * w),
             "abs": lambda z, w: gc.abs(z), "floor": lambda z, w: gc.floor(z),
             "ceil": lambda z, w: gc.ceil(z), "sum": lambda z, w: z + w,
             "difference": lambda z, w: z - w, "product": lambda z, w: z * w}
    c = np.ones(z.shape, bool)
    for name, fn in cases.items():
        # where(c, ., .) with c all True: the op's own result, fused with it into a kernel
        got, want = both(numba_forced, lambda c, z, w: gc.where(c, fn(z, w), z), c, z, w)
        assert_bits(got, want, name)


def test_maximum_and_minimum_of_zeros_in_both_orders(numba_forced):
    a = np.array([-0.0, 0.0, np.nan, 1.0], np.float32)
    b = np.array([0.0, -0.0, 1.0, np.nan], np.float32)
    c = np.ones(a.shape, bool)
    for fn in (gc.maximum, gc.minimum):
        for x, y in ((a, b), (b, a)):
            got, want = both(numba_forced, lambda c, x, y: gc.where(c, fn(x, y), x), c, x, y)
            assert_bits(got, want, fn.__name__)
            assert_bits(want, getattr(np, fn.__name__)(x, y), "numpy rule")
            assert_bits(np.signbit(got[:2]), np.signbit(y[:2]), "a tie gives the second")


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_integer_overflow_wraps_and_is_not_assumed_away(numba_forced, dt):
    info = np.iinfo(dt)
    x = np.array([info.max, info.min, 0, -1, info.max - 1], dt)
    got, want = both(numba_forced, lambda x: gc.greater(x + 1, x), x)
    assert not got[0]                                # `add nsw` let LLVM fold it to True
    assert_bits(got, want, "x + 1 > x")
    got, want = both(numba_forced, lambda x: gc.less(x - 1, x), x)
    assert not got[1]
    assert_bits(got, want, "x - 1 < x")


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_integer_arithmetic_wraps_like_numpy(numba_forced, dt):
    info = np.iinfo(dt)
    vals = np.array([info.max, info.min, info.max - 1, info.min + 1, 0, 1, -1, 2, 3,
                     info.max // 2 + 1, -(info.max // 3)], dt)
    a, b = (np.array(v, dt) for v in zip(*itertools.product(vals, vals)))
    fns = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "neg": lambda a, b: -a, "abs": lambda a, b: gc.abs(a),
           "square": lambda a, b: gc.square(a)}
    c = np.ones(a.shape, bool)
    for name, fn in fns.items():
        got, want = both(numba_forced, lambda c, a, b: gc.where(c, fn(a, b), a), c, a, b)
        assert_bits(got, want, name)
        if name == "neg":
            assert_bits(got[a == info.min], a[a == info.min], "-INT_MIN is INT_MIN")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_float_to_int_casts_give_eagers_values(numba_forced, dt):
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, 2.0**31, -2.0**31,
                  -2.5, 2.5, -0.0, 2147483520.0], dt)
    for to in (I32, I64, gc.bool):
        got, want = both(numba_forced, lambda x: gc.cast(x * 1.0 + 0.0, to), x)
        assert_bits(got, want, f"cast to {to}")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_logsumexp_with_huge_values(numba_forced, dt):
    x = np.array([[1e30, 1.0, -1e30, 2.0], [-1e30, -1e30, 0.5, 1e30],
                  [1e30, 1e30, -3.0, 0.0], [-np.inf, -np.inf, -np.inf, -np.inf]], dt)
    for axis in (0, 1, None):
        for scale in (1.0, 1e30):    # float64: x * 1e30 reaches 1e60 (base: -inf)
            fn = (lambda x: gc.reduce_logsumexp(x * scale, axis=axis))
            got, want = both(numba_forced, fn, x)
            assert_bits(np.isnan(got), np.isnan(want), "NaN")
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dt).eps)


# -- every fusable elementwise op on special values ---------------------------------------
def _specials(dt):
    if dt.is_floating:
        f = np.finfo(dt.np)
        return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, f.tiny, -f.tiny,
                         f.smallest_subnormal, -f.smallest_subnormal, f.max, -f.max, 1.0, -1.0,
                         0.5, -0.5, -0.4, 2.5, -2.5, 3.0, 1e30, -1e30, 1e-30, 0.7, -7.3, 100.0],
                        dt.np)
    if dt.is_bool:
        return np.array([False, True])
    i = np.iinfo(dt.np)
    return np.array([0, 1, -1, 2, -2, 3, 7, -7, 31, i.max, i.min, i.max - 1, i.min + 1], dt.np)


def _values(dt):
    if dt.is_floating:
        return st.floats(width=dt.np.itemsize * 8, allow_nan=True, allow_infinity=True)
    if dt.is_bool:
        return st.booleans()
    i = np.iinfo(dt.np)
    return st.integers(int(i.min), int(i.max))


def _ops(arity):
    return sorted(k for k, v in REGISTRY.items() if v.scalar and v.kind == "elementwise"
                  and k not in ("where", "cast", "fill", "stop_gradient", "piecewise_linear",
                                "piecewise_linear_grad")      # (identities the simplifier drops)
                  and ("{1}" in v.scalar) == (arity == 2))


def _accepted(op, dt, arity):
    try:
        bind(op, *[gc.constant(np.ones(1, dt.np))] * arity)
    except TypeError:
        return False
    return True


def _chain(ops, c, xs):
    """Each op on `xs`; `where(c, op(xs), previous result of that dtype)` with c all True
    keeps every result exact and makes the ops one fused group (one kernel to compile)."""
    prev, outs = {}, []
    for op in ops:
        r = bind(op, *xs)
        # (not where(c, r, r) for the first: the simplifier folds that to r, leaving a
        # one-op group that runs its numpy rule)
        r = gc.where(c, r, prev[r.dtype] if r.dtype in prev else gc.zeros_like(r))
        prev[r.dtype] = r
        outs.append(r)
    return outs


def _looped(ops, raising=()):
    """ops on (c, *xs) in a one-iteration native loop; `raising` (integer // % **) take
    their own arguments (c, *xs, *safe_xs), which avoid a zero divisor or a negative power."""
    def apply(xs, safe):
        return [bind(op, *(safe if op in raising else xs)) for op in ops]

    def fn(c, *args):
        half = len(args) // 2 if raising else len(args)
        xs, safe = args[:half], args[half:]
        outs = apply(xs, safe)
        i = gc.constant(0)
        while i < 1:
            outs = apply(xs, safe)
            i += 1
        return outs
    return fn


DTYPES = [F32, F64, I32, I64, gc.bool]


def _grid(dt, arity, extra):
    s = np.concatenate([_specials(dt), np.array(extra, dt.np)])
    if arity == 1:
        return [s]
    return [np.array(v, dt.np) for v in zip(*itertools.product(s, _specials(dt)))]


@pytest.mark.parametrize("arity", [1, 2])
@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("where", ["kernel", "loop"])
def test_every_elementwise_op_gives_eagers_special_values(numba_forced, where, dt, arity):
    ops = [op for op in _ops(arity) if _accepted(op, dt, arity)]
    if where == "kernel":      # integer // % ** keep their numpy rule (they raise), unfused
        ops = [op for op in ops if not (dt.is_integer and op in ("pow", "floordiv", "mod"))]
    if not ops:
        pytest.skip(f"no {arity}-ary elementwise op takes {dt}")
    raising = [op for op in ops if dt.is_integer and op in ("pow", "floordiv", "mod")]
    fn = (lambda c, *xs: _chain(ops, c, xs)) if where == "kernel" else _looped(ops, raising)

    fast = gc.function(fn, backend="numba")

    @FEW
    @given(st.lists(_values(dt), min_size=4, max_size=4))   # one shape: one compiled loop
    def check(extra):
        xs = _grid(dt, arity, extra)
        safe = [x[xs[-1] > 0] for x in xs] if raising else []   # positive b: b ** a, a // b
        c = np.ones(xs[0].shape, bool)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with numba_forced.expect(kernels=where == "kernel", loops=where == "loop"):
                got = fast(c, *xs, *safe)
        for op, g in zip(ops, got):
            args = safe if op in raising else xs
            want = eager(lambda *a, op=op: bind(op, *a), *args).numpy()
            assert_special_values(np.asarray(g), want, op in APPROX and dt.is_floating,
                                  f"{op} {dt} ({where})")
        if where == "kernel":      # every op ran inside the fused kernel
            text = cpu.describe(fast.get_concrete_function(c, *xs).graph)
            grouped = " ".join(ln for ln in text.splitlines() if "group_" in ln)
            assert all(f"{op}_0" in grouped for op in ops), text[:2000]
    check()


# -- reductions ---------------------------------------------------------------------------
def _reduce_tolerance(x, axis, dt):
    """numpy's and the kernel's summation orders differ: bound by n * eps * sum(|x|)."""
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    return 2 * np.log2(n + 2) * np.finfo(dt).eps * np.sum(np.abs(x), axis=axis) + \
        np.finfo(dt).tiny


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axis", [((7, 3000), 1), ((3000, 7), 0), ((5, 130), None),
                                        ((4, 33, 40), (1, 2)), ((2, 5, 1100), 2),
                                        ((3, 2100), -1)])
def test_reductions_with_inf_nan_and_huge_values(numba_forced, dt, shape, axis):
    @FEW
    @given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.001, 0.05]))
    def check(seed, p_special):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(shape).astype(dt)
        pick = rng.random(shape) < p_special
        x[pick] = rng.choice(np.array([np.inf, -np.inf, np.nan, 1e30, -1e30], dt),
                             size=int(pick.sum()))
        for name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min"):
            fn = (lambda x, name=name: getattr(gc, name)(x * 1.0 + 0.0, axis=axis))
            got, want = both(numba_forced, fn, x)
            assert_bits(np.isnan(got), np.isnan(want), f"{name}: NaN")
            assert_bits(np.where(np.isinf(got), got, 0), np.where(np.isinf(want), want, 0),
                        f"{name}: inf")
            fin = np.isfinite(want) & np.isfinite(got)
            tol = _reduce_tolerance(np.where(np.isfinite(x), x, 0), axis, dt)
            if name == "reduce_mean":
                tol = tol / (x.size / np.size(want))
            err = np.abs(got.astype(np.float64) - want)[fin]
            assert np.all(err <= np.broadcast_to(tol, want.shape)[fin]), name
    check()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_products_keep_inf_nan_and_zero_signs(numba_forced, dt):
    rows = np.array([[1.5, -2.0, 0.5, 3.0] * 300, [1e30, 1e30, 1.0, 1.0] * 300,
                     [-0.0, 1.0, 2.0, 3.0] * 300, [np.inf, 0.0, 1.0, 1.0] * 300,
                     [1.0] * 1199 + [np.nan]], dt)
    got, want = both(numba_forced, lambda x: gc.reduce_prod(x * 1.0 + 0.0, axis=1), rows)
    assert_bits(np.isnan(got), np.isnan(want), "NaN")
    assert_bits(np.signbit(got), np.signbit(want), "sign")
    np.testing.assert_allclose(got, want, rtol=1e-4 if dt == np.float32 else 1e-12)


def test_integer_sums_wrap_like_numpy(numba_forced):
    info = np.iinfo(np.int64)
    x = np.array([[info.max, 1, 1, 5], [info.min, -1, 3, 0]] * 600, np.int64).reshape(2, -1)
    ones = np.ones_like(x)          # x * ones: an elementwise op fused with the reduction
    for axis in (0, 1, None):
        for fn in (gc.reduce_sum, gc.reduce_prod):
            got, want = both(numba_forced, lambda x, k: fn(x * k, axis=axis), x, ones)
            assert_bits(got, want, f"int64 {fn.__name__} over {axis}")


def test_row_max_of_zeros_is_a_zero_and_nan_wins(numba_forced):
    # which zero a max/min returns over a row holding both +0.0 and -0.0 is not specified
    # (numpy's own choice depends on the array's length); the value and NaN are
    x = np.array([[-0.0, 0.0, -0.0], [0.0, np.nan, -1.0], [-0.0, -0.0, -0.0]], np.float32)
    ones = np.ones_like(x)
    for fn in (gc.reduce_max, gc.reduce_min):
        got, want = both(numba_forced, lambda x, k: fn(x * k, axis=1), x, ones)
        assert got[0] == 0 and np.isnan(got[1]) and np.signbit(got[2])
        assert_bits(got[1:], want[1:], fn.__name__)


# -- compiled loops -----------------------------------------------------------------------
def test_compiled_loops_follow_the_same_rules(numba_forced):
    info = np.iinfo(np.int64)

    def loop(x, y, n, k):
        acc = gc.zeros_like(x)
        w = gc.zeros_like(n)
        i = gc.constant(0)
        while i < 3:
            acc = y - (y - x) + acc * 0.0          # NaN y stays NaN
            w = w + gc.cast(n + k > n, gc.int64)   # n = INT64_MAX: wraps, never True
            i += 1
        return acc, w, gc.sign(x * 0.0), (x * 1e30) * 1e-30

    x = np.array([1.0, 2.0, -0.0, 1e10], np.float32)
    y = np.array([np.nan, 1.0, 0.0, 2.0], np.float32)
    n = np.array([info.max, 0], np.int64)
    k = np.array([1, 1], np.int64)
    got = compiled(numba_forced, loop, x, y, n, k, loops=True)
    want = eager(loop, x, y, n, k)
    for g, w, what in zip(got, want, ("y - (y - x)", "int wrap", "sign(-0.0)", "overflow")):
        assert_bits(np.asarray(g), w.numpy(), what)
    assert np.asarray(got[1])[0] == 0 and np.isnan(np.asarray(got[0])[0])


def test_integer_floordiv_mod_pow_in_compiled_loops(numba_forced):
    info = np.iinfo(np.int64)
    a = np.array([info.min, info.min, 7, -7, info.max, 3, -3, 2], np.int64)
    b = np.array([-1, 1, -1, 2, -1, 40, 63, 63], np.int64)

    def loop(a, b):
        q, r, p = a // b, a % b, a ** gc.abs(b)
        i = gc.constant(0)
        while i < 1:
            q, r, p = a // b, a % b, a ** gc.abs(b)
            i += 1
        return q, r, p
    got = compiled(numba_forced, loop, a, b, loops=True)
    for g, w, what in zip(got, eager(loop, a, b), ("//", "%", "**")):
        assert_bits(np.asarray(g), w.numpy(), what)
    assert np.asarray(got[0])[0] == info.min          # INT_MIN // -1 wraps (numba gave 0)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sums_of_buffered_rows(numba_forced, dt):
    # exp(x) is needed by two passes, so it is kept in a row buffer and summed from there
    # (exact.buffer_sum); rows longer than a block (1024) go through the pairwise cascade
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 2500)).astype(dt)
    x[1, 7], x[2, 2000], x[3, :] = np.nan, np.inf, -np.inf

    def softmax(x):
        e = gc.exp(x)
        return e / gc.reduce_sum(e, axis=-1, keepdims=True), gc.reduce_sum(e, axis=-1)
    got = compiled(numba_forced, softmax, x)
    want = eager(softmax, x)
    for g, w in zip(got, want):
        g, w = np.asarray(g), w.numpy()
        assert_bits(np.isnan(g), np.isnan(w), "NaN")
        assert_bits(np.isinf(g), np.isinf(w), "inf")
        fin = np.isfinite(w)
        np.testing.assert_allclose(g[fin], w[fin], rtol=20 * np.finfo(dt).eps)


def test_no_fast_math_flags_in_generated_kernels_or_loops(numba_forced):
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)

    def softmax(x):
        e = gc.exp(x - gc.reduce_max(x, axis=-1, keepdims=True))
        return e / gc.reduce_sum(e, axis=-1, keepdims=True)

    def loop(x):
        i = gc.constant(0)
        while i < 2:
            x = x * 0.5 + 1.0
            i += 1
        return x
    for fn, loops in ((softmax, False), (loop, True)):
        fast = gc.function(fn, backend="numba")
        with numba_forced.expect(kernels=not loops, loops=loops):
            fast(x)
        graph = fast.get_concrete_function(x).graph
        sources = [r.source for _, r, _ in graph._numba_plan.loops if r is not None] if loops \
            else [cpu.describe(graph)]
        assert sources and all("njit(" in s and "fastmath" not in s for s in sources)
