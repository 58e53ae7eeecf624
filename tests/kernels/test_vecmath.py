"""Accuracy (ulp against a higher-precision reference), special values, vectorization and
typing errors of graphc.kernels.vecmath."""
import math
import os
import re
import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba.core.errors import TypingError

from graphc.kernels import vecmath as vm
from graphc.kernels.vecmath import bits as bits
from graphc.runtime.registry import REGISTRY
import graphc.runtime.ops  # noqa: F401 - registers the ops

ULP = 4
UNARY = ["exp", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "tan", "erf", "fast_sin",
         "fast_cos", "fast_tan"]
TRIG_LIMIT = {("fast_" + n, np.float32): vm.F32_FAST_ACCURATE_BELOW for n in ("sin", "cos", "tan")}
TRIG_LIMIT.update({("fast_" + n, np.float64): vm.F64_ACCURATE_BELOW for n in ("sin", "cos", "tan")})
FLOATS = [np.float32, np.float64]
LD = np.longdouble
_erf64 = numba.vectorize(["float64(float64)"])(lambda v: math.erf(v))


def _ld_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (reference taking and returning float64 / long double arrays)
REFERENCE = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
             "sigmoid": _ld_sigmoid, "sin": np.sin, "cos": np.cos, "tan": np.tan,
             "erf": None, "pow": np.power}


def expected(name, dtype, *args):
    """The reference rounded to `dtype`: computed in float64 for float32, in 80-bit long double
    for float64 (erf: libm's float64 erf, which is within 1 ulp)."""
    name = name.replace("fast_", "")
    with np.errstate(all="ignore"):
        if name == "erf":
            return _erf64(args[0].astype(np.float64)).astype(dtype)
        wide = np.float64 if dtype is np.float32 else LD
        return REFERENCE[name](*(a.astype(wide) for a in args)).astype(dtype)


_LOOPS = {}


def apply(name, *arrays):
    """Run vm.<name> elementwise in a compiled loop (the way generated kernels call it)."""
    if name not in _LOOPS:
        fn = getattr(vm, name)
        if len(arrays) == 1:
            @numba.njit(error_model="numpy")
            def loop(a, out):
                for i in range(a.size):
                    out[i] = fn(a[i])
        else:
            @numba.njit(error_model="numpy")
            def loop(a, b, out):
                for i in range(a.size):
                    out[i] = fn(a[i], b[i])
        _LOOPS[name] = loop
    out = np.empty_like(arrays[0])
    _LOOPS[name](*arrays, out)
    return out


def edges(dtype):
    """Specials, denormals, limits and the overflow/underflow edges of exp-like functions."""
    fi = np.finfo(dtype)
    tiny_sub = np.array(fi.smallest_subnormal, dtype)
    base = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, fi.max, -fi.max,
            fi.smallest_normal, -fi.smallest_normal, float(tiny_sub), float(fi.smallest_normal) / 3,
            np.pi / 2, np.pi, 1e-3, 0.625, 0.875, 4.0, 6.0, 20.0, -20.0]
    out = [np.array(base, dtype)]
    for edge in (np.log(float(fi.max)), np.log(float(tiny_sub)), np.log(float(fi.smallest_normal)),
                 -1.0, 0.625, 0.875, 2.5, 4.0):
        for sign in (1, -1):
            centre = np.array(sign * edge, dtype)
            steps = np.arange(-8, 9)
            out.append((centre.view(_INT[dtype]) + steps).view(dtype))
    return np.concatenate(out)


_INT = {np.float32: np.int32, np.float64: np.int64}


def dense_float32():
    """About 2.1M float32 bit patterns spread evenly over all of them, plus the edges."""
    pats = np.arange(0, 2 ** 32, 2039, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([pats.view(np.float32), edges(np.float32)])


def sample_float64(seed=0):
    """Random float64 bit patterns (every exponent), plus dense ranges where results change."""
    rng = np.random.default_rng(seed)
    pats = rng.integers(0, 2 ** 64, 200_000, dtype=np.uint64).view(np.float64)
    ranges = [rng.uniform(-800, 800, 100_000), rng.uniform(-30, 30, 100_000),
              rng.uniform(-1, 1, 50_000), rng.uniform(-1e-8, 1e-8, 10_000)]
    return np.concatenate([pats, *ranges, edges(np.float64)])


def assert_close(name, dtype, x, got, want, *more):
    d = vm.ulp_distance(got, want)
    bad = d > ULP
    if bad.any():
        i = int(np.argmax(d))
        args = ", ".join(repr(a[i]) for a in (x, *more))
        raise AssertionError(f"{name}[{dtype.__name__}]({args}) = {got[i]!r}, reference "
                             f"{want[i]!r}: {int(d[i])} ulp; {int(bad.sum())} of {d.size} "
                             f"values beyond {ULP} ulp")


def _domain(name, dtype, x):
    """fast trig is only computed below a limit (nan beyond, tested separately)."""
    limit = TRIG_LIMIT.get((name, dtype))
    return x if limit is None else x[~(np.abs(x) >= limit)]


@pytest.mark.parametrize("name", UNARY)
def test_dense_float32_within_4_ulp(name):
    x = _domain(name, np.float32, dense_float32())
    assert_close(name, np.float32, x, apply(name, x), expected(name, np.float32, x))


@pytest.mark.parametrize("name", UNARY)
def test_float64_sample_within_4_ulp(name):
    x = _domain(name, np.float64, sample_float64())
    assert_close(name, np.float64, x, apply(name, x), expected(name, np.float64, x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_within_4_ulp(dtype):
    rng = np.random.default_rng(1)
    n = 100_000
    x = np.exp(rng.uniform(-30, 30, n)).astype(dtype)
    y = rng.uniform(-40, 40, n).astype(dtype)
    x[:20_000] = 1 + rng.uniform(-1e-3, 1e-3, 20_000)       # |y log x| large near 1
    y[:20_000] = rng.uniform(-5e4, 5e4, 20_000)
    x[20_000:30_000] = -np.rint(rng.uniform(0, 50, 10_000))  # negative base, integer powers
    y[20_000:30_000] = np.rint(rng.uniform(-30, 30, 10_000))
    assert_close("pow", dtype, x, apply("pow", x, y), expected("pow", dtype, x, y), y)


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_special_cases_match_c99(dtype):
    sp = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf,
                   -np.inf, np.nan, np.finfo(dtype).smallest_subnormal, np.finfo(dtype).max],
                  dtype)
    x, y = (a.ravel() for a in np.meshgrid(sp, sp))
    got = apply("pow", x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)                               # C99 pow semantics
    assert_close("pow", dtype, x, got, want, y)
    zero = want == 0
    assert (np.signbit(got[zero]) == np.signbit(want[zero])).all()


# sign of zero results: odd functions keep -0.0
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,at_minus_zero,at_plus_zero", [
    ("exp", 1.0, 1.0), ("log", -np.inf, -np.inf), ("log1p", -0.0, 0.0), ("tanh", -0.0, 0.0),
    ("sigmoid", 0.5, 0.5), ("sin", -0.0, 0.0), ("cos", 1.0, 1.0), ("tan", -0.0, 0.0),
    ("erf", -0.0, 0.0), ("fast_sin", -0.0, 0.0), ("fast_cos", 1.0, 1.0),
    ("fast_tan", -0.0, 0.0)])
def test_signed_zero(name, at_minus_zero, at_plus_zero, dtype):
    got = apply(name, np.array([-0.0, 0.0], dtype))
    want = np.array([at_minus_zero, at_plus_zero], dtype)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", FLOATS)
def test_infinities_and_nan(dtype):
    x = np.array([np.inf, -np.inf, np.nan], dtype)
    want = {"exp": [np.inf, 0, np.nan], "log": [np.inf, np.nan, np.nan],
            "log1p": [np.inf, np.nan, np.nan], "tanh": [1, -1, np.nan],
            "sigmoid": [1, 0, np.nan], "sin": [np.nan] * 3, "cos": [np.nan] * 3,
            "tan": [np.nan] * 3, "erf": [1, -1, np.nan], "fast_sin": [np.nan] * 3,
            "fast_cos": [np.nan] * 3, "fast_tan": [np.nan] * 3}
    for name, w in want.items():
        np.testing.assert_array_equal(apply(name, x), np.array(w, dtype), err_msg=name)


@pytest.mark.parametrize("name,dtype", sorted(TRIG_LIMIT, key=str))
def test_reduced_range_trig_is_nan_beyond_its_limit(name, dtype):
    limit = TRIG_LIMIT[(name, dtype)]
    x = np.array([limit, -limit, np.finfo(dtype).max], dtype)
    assert np.isnan(apply(name, x)).all()
    inside = np.array([limit / 2, -limit / 3, np.nextafter(dtype(limit), dtype(0))], dtype)
    assert_close(name, dtype, inside, apply(name, inside), expected(name, dtype, inside))


@pytest.mark.parametrize("dtype", FLOATS)
def test_fast_trig_miss_flags_exactly_the_finite_arguments_beyond_the_fast_range(dtype):
    limit = TRIG_LIMIT[("fast_sin", dtype)]
    x = np.array([0.0, -1.5, limit / 2, np.nextafter(dtype(limit), dtype(0)), limit, -limit,
                  np.finfo(dtype).max, -np.finfo(dtype).max, np.inf, -np.inf, np.nan], dtype)
    want = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0], dtype)
    got = apply("fast_trig_miss", x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    # where it flags nothing, the fast variants agree with the whole-range functions
    ok = got == 0
    for name in ("sin", "cos", "tan"):
        assert_close(name, dtype, x[ok], apply("fast_" + name, x)[ok], apply(name, x)[ok])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["sin", "cos", "tan"]),
       st.floats(min_value=2.0 ** 47, max_value=1.7e308, allow_nan=False))
def test_float64_trig_whole_range(name, v):
    x = np.array([v, -v], np.float64)
    assert_close(name, np.float64, x, apply(name, x), expected(name, np.float64, x))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(UNARY), st.floats(width=32, allow_nan=True, allow_infinity=True))
def test_hypothesis_float32(name, v):
    x = _domain(name, np.float32, np.array([v], np.float32))
    assert_close(name, np.float32, x, apply(name, x), expected(name, np.float32, x))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(UNARY), st.floats(allow_nan=True, allow_infinity=True))
def test_hypothesis_float64(name, v):
    x = _domain(name, np.float64, np.array([v]))
    assert_close(name, np.float64, x, apply(name, x), expected(name, np.float64, x))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FLOATS), st.floats(0, 1e6), st.floats(-60, 60))
def test_hypothesis_pow(dtype, a, b):
    x, y = np.array([a], dtype), np.array([b], dtype)
    assert_close("pow", dtype, x, apply("pow", x, y), expected("pow", dtype, x, y), y)


# -- vectorization ---------------------------------------------------------------------------
_LIBM = re.compile(
    r"call [^@\n]*@(llvm\.)?(exp|log|log1p|tanh|sin|cos|tan|erf|pow)(f|\.v?\d*f\d+)?\(")


@pytest.mark.parametrize("dtype,vector", [(np.float32, "float"), (np.float64, "double")])
def test_loops_compile_to_simd_without_libm_calls(dtype, vector):
    x = np.linspace(-3, 3, 64).astype(dtype)
    for name in UNARY + ["pow", "fast_trig_miss"]:
        whole_range_trig = name in ("sin", "cos", "tan")
        if dtype is np.float64 and whole_range_trig:
            continue        # whole-range float64 trig is libm; kernels run fast_* first
        apply(name, *([x] if name != "pow" else [np.abs(x), x]))
        loop = _LOOPS[name]
        sig = [s for s in loop.signatures if s[0].dtype == numba.from_dtype(dtype)][0]
        ir = loop.inspect_llvm(sig)
        # whole-range float32 trig branches to its Payne-Hanek path (see vecmath._whole_range),
        # so only its fast_* twin, which kernels run first, must be SIMD
        assert whole_range_trig or re.search(rf"<\d+ x {vector}>", ir), \
            f"{name}[{dtype.__name__}] not vectorized"
        assert not _LIBM.search(ir), f"{name}[{dtype.__name__}] calls libm"


@pytest.mark.parametrize("dtype", FLOATS)
def test_exp_scaling_without_avx512_gives_the_same_bits(dtype, monkeypatch):
    """bits.scale_pow2 lowers to llvm.ldexp (vscalef) on AVX-512 targets and to two exact
    multiplications elsewhere: compiled here as if the target had no AVX-512, exp agrees bit
    for bit with the default build (on an AVX-512 machine: the two lowerings agree), across
    the overflow edge and the denormal results."""
    from graphc.kernels.vecmath import explog
    lo, hi = (-110, 92) if dtype is np.float32 else (-760, 712)
    x = np.random.default_rng(5).uniform(lo, hi, 200_000).astype(dtype)
    x = np.concatenate([edges(dtype), x])
    want = apply("exp", x)          # compiled first: the helpers' IR is cached per process
    monkeypatch.setattr(bits, "_target_has_avx512f", lambda context: False)
    portable = explog.make_exp(dtype)

    @numba.njit(error_model="numpy")
    def loop(a, out):
        for i in range(a.size):
            out[i] = portable(a[i])
    out = np.empty_like(x)
    loop(x, out)
    assert "ldexp" not in loop.inspect_llvm(loop.signatures[0])
    np.testing.assert_array_equal(out.view(_INT[dtype]), want.view(_INT[dtype]))


@numba.njit(fastmath=True, error_model="numpy")
def _fastmath_caller(a, out):
    for i in range(a.size):
        out[i] = vm.exp(a[i]) + vm.log(a[i]) + vm.tanh(a[i])


def test_fastmath_caller_keeps_nan_and_inf_handling():
    x = np.array([np.nan, np.inf, 0.0, -1.0], np.float32)
    out = np.empty_like(x)
    _fastmath_caller(x, out)
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf and np.isnan(out[3])


@numba.njit(cache=True, error_model="numpy")
def _cached_chain(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = vm.tanh(np.float32(0.5) * v) * vm.exp(-v * v) + vm.sin(v) + vm.pow(v, v)


def test_cache_true_callers_compile_and_agree():
    x = np.linspace(0.1, 3, 50).astype(np.float32)
    out = np.empty_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", numba.NumbaWarning)   # e.g. "cannot cache"
        _cached_chain(x, out)
    xd = x.astype(np.float64)
    want = np.tanh(0.5 * xd) * np.exp(-xd * xd) + np.sin(xd) + xd ** xd
    np.testing.assert_allclose(out, want, rtol=3e-6)


# -- the template table ------------------------------------------------------------------------
def test_scalar_funcs_cover_registry_templates_and_agree_with_numpy_impls():
    used = set()
    for op in REGISTRY.values():
        m = re.fullmatch(r"(\w+)\(\{0\}\)", op.scalar or "")
        if not m or m.group(1) not in vm.SCALAR_FUNCS:
            continue
        used.add(m.group(1))
        kernel = numba.njit(eval("lambda a: " + op.scalar.format("a"), dict(vm.SCALAR_FUNCS)))

        @numba.njit
        def run(a, out, kernel=kernel):
            for i in range(a.size):
                out[i] = kernel(a[i])
        for dtype in FLOATS:
            x = np.concatenate([np.linspace(-5, 5, 101).astype(dtype), edges(dtype)])
            x = _domain(op.type, dtype, np.abs(x) if op.type in ("log", "sqrt") else x)
            out = np.empty_like(x)
            run(x, out)
            with np.errstate(all="ignore"):
                want = np.asarray(op.numpy(x)).astype(dtype)
            assert_close(op.type, dtype, x, out, want)
    assert {"exp", "log", "log1p", "tanh", "sin", "cos", "erf", "sqrt", "floor", "rint"} <= used
    assert {"sigmoid", "pow", "tan", "sign", "abs", "ceil"} <= set(vm.SCALAR_FUNCS)
    assert vm.FAST_SCALAR_FUNCS["sin"] is vm.fast_sin and vm.FAST_SCALAR_FUNCS["exp"] is vm.exp


@numba.njit
def _sign_abs(f, i):
    return vm.sign(f), vm.abs(f), vm.sign(i), vm.abs(i)


def test_sign_and_abs_keep_integers_integer_and_match_numpy():
    for f in (-2.5, -0.0, 0.0, 3.0, np.inf, -np.inf, np.nan):
        for i in (-7, 0, 9, np.iinfo(np.int64).min):
            sf, af, si, ai = _sign_abs(f, i)
            # the same values as numpy's, signed zeros (sign(-0.0) is +0.0) and NaN included
            np.testing.assert_equal((sf, af), (np.sign(np.float64(f)), np.abs(np.float64(f))))
            np.testing.assert_equal((si, ai), (np.sign(np.int64(i)), np.abs(np.int64(i))))
            assert type(sf) is type(af) is float and type(si) is type(ai) is int


def test_python_call_runs_elementwise():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    got = vm.sign(x)
    assert got.dtype == np.float32 and list(got) == [-1.0, 0.0, 1.0]


# -- errors ------------------------------------------------------------------------------------
@numba.njit
def _exp_of_tuple(t):
    return vm.exp(t)


def test_non_number_argument_is_a_typing_error_naming_the_function():
    with pytest.raises(TypingError, match=r"vecmath\.exp: expected float or integer scalars"):
        _exp_of_tuple((1.0, 2.0))


@pytest.mark.parametrize("call,message", [
    (lambda: bits.select(1.0, 2.0, 3.0), r"vecmath\.select: condition must be a boolean"),
    (lambda: bits.horner(np.float32(1), (1.0, 2.0)), r"vecmath\.horner: coefficients must be"),
    (lambda: bits.pick(1.0, (1, 2)), r"vecmath\.pick: table must be a tuple of floats"),
    (lambda: bits.to_float64(1.0), r"vecmath\.to_float64: expected float32"),
    (lambda: bits.rint(3), r"vecmath\.rint: expected float32 or float64"),
])
def test_intrinsic_misuse_is_a_typing_error(call, message):
    jitted = numba.njit(call)
    with pytest.raises(TypingError, match=message):
        jitted()


# -- the ulp helper ----------------------------------------------------------------------------
def test_ulp_distance():
    one = np.float32(1)
    assert vm.ulp_distance(np.nextafter(one, np.float32(2)), one) == 1
    assert vm.ulp_distance(np.float32(-0.0), np.float32(0.0)) == 0
    assert vm.ulp_distance(np.float32(np.inf), np.finfo(np.float32).max) == 1
    assert vm.ulp_distance(np.float64(np.nan), np.float64(np.nan)) == 0
    assert vm.ulp_distance(np.float64(np.nan), np.float64(1)) >= 2 ** 62
    tiny = np.float64(5e-324)
    assert vm.ulp_distance(tiny, -tiny) == 2
    assert vm.max_ulp_error(np.array([1.0, 2.0]), np.array([1.0, np.nextafter(2.0, 3)])) == \
        (1, (1,))


def test_ulp_distance_rejects_mixed_dtypes_with_the_fix():
    with pytest.raises(TypeError, match="float32 and float64.*cast the reference"):
        vm.ulp_distance(np.ones(2, np.float32), np.ones(2))


# -- provenance of the coefficients --------------------------------------------------------------
@pytest.mark.parametrize("name,dtype", [("sin", np.float32), ("exp", np.float32),
                                        ("log", np.float64), ("sin_pi", np.float32)])
def test_committed_coefficients_are_what_the_fit_script_produces(name, dtype):
    pytest.importorskip("mpmath")
    from graphc.kernels.vecmath import coeffs as vecmath_coeffs, fit as vecmath_fit
    g, w, lo, hi, degrees = vecmath_fit.TABLES[name]
    if name in vecmath_fit.FIXED_FIRST:
        fitted = vecmath_fit.fit_fixed_first(g, w, lo, hi, degrees[dtype], dtype)
        fitted = [dtype(c) for c in fitted]
    else:
        fitted = [dtype(c) for c in vecmath_fit.fit(g, w, lo, hi, degrees[dtype])]
    table = getattr(vecmath_coeffs, f"{name.upper()}_{'F32' if dtype is np.float32 else 'F64'}")
    assert list(table) == fitted


@pytest.mark.skipif(not os.environ.get("GRAPHC_EXHAUSTIVE"),
                    reason="every float32 below the fast range (~2.3e9 values, minutes): "
                           "set GRAPHC_EXHAUSTIVE=1")
@pytest.mark.parametrize("name", ["fast_sin", "fast_cos", "fast_tan"])
def test_fast_float32_trig_exhaustive_below_its_limit(name):
    """Every float32 with |x| below F32_FAST_ACCURATE_BELOW, both signs."""
    top = int(np.float32(vm.F32_FAST_ACCURATE_BELOW).view(np.int32))
    for start in range(0, top, 1 << 25):
        pos = np.arange(start, min(start + (1 << 25), top), dtype=np.int32).view(np.float32)
        for x in (pos, -pos):
            assert_close(name, np.float32, x, apply(name, x), expected(name, np.float32, x))
