"""pow over IEEE special values gives TF 2.21's values (C99's pow) eagerly and compiled (numpy
rules, fused numba kernels, natively compiled loops), whatever form the exponent takes: a
tensor, a 0-d tensor, a Python number (`x ** 0.5`), a Python base (`2.0 ** t`). numpy's power
takes sqrt for a scalar exponent 0.5 (-0.0 ** 0.5 = -0.0, -inf ** 0.5 = nan); graphc does
not. Integer pow wraps as TF's and raises for a negative exponent, as TF's."""
import math

import numpy as np
import pytest

import graphc as gc

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

inf, nan, R2, H = math.inf, math.nan, math.sqrt(2.0), math.sqrt(0.5)
X = [-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, inf, nan]
Y = [-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, inf, nan]
# tf.pow(x, y) in TF 2.21, a row per x, a column per y; float32 gives these rounded to float32
TF = [
    [0.0, 0.0, -0.0, 0.0, 1.0, 1.0, inf, -inf, inf, -inf, inf, nan],           # -inf
    [0.0, 0.25, -0.5, nan, 1.0, 1.0, nan, -2.0, 4.0, -8.0, inf, nan],           # -2
    [1.0, 1.0, -1.0, nan, 1.0, 1.0, nan, -1.0, 1.0, -1.0, 1.0, nan],            # -1
    [inf, 4.0, -2.0, nan, 1.0, 1.0, nan, -0.5, 0.25, -0.125, 0.0, nan],         # -0.5
    [inf, inf, -inf, inf, 1.0, 1.0, 0.0, -0.0, 0.0, -0.0, 0.0, nan],            # -0.0
    [inf, inf, inf, inf, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, nan],               # 0.0
    [inf, 4.0, 2.0, R2, 1.0, 1.0, H, 0.5, 0.25, 0.125, 0.0, nan],          # 0.5
    [1.0] * 12,                                                                 # 1
    [0.0, 0.25, 0.5, H, 1.0, 1.0, R2, 2.0, 4.0, 8.0, inf, nan],            # 2
    [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, inf, inf, inf, inf, inf, nan],               # inf
    [nan, nan, nan, nan, 1.0, 1.0, nan, nan, nan, nan, nan, nan],               # nan
]
DTYPES = ["float32", "float64"]


def assert_bits(got, want):
    """Equal values, NaN where NaN, and the same sign of zero (a NaN's sign is not TF's)."""
    got, want = np.asarray(got), np.asarray(want, got.dtype)
    np.testing.assert_array_equal(got, want)
    num = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))


def paths(numba_forced):
    """(name, wrap, check): eager, the numpy interpreter, and numba with kernels forced (the
    body is followed by `* 2` so that pow is fused into a kernel; doubling is exact here)."""
    doubled = lambda fn: lambda *a: [v * 2 for v in fn(*a)]
    halve = lambda outs: [gc.constant(v.numpy() / 2) for v in outs]
    return [("eager", lambda fn: fn, None),
            ("numpy", lambda fn: gc.function(fn, backend="numpy"), None),
            ("numba", lambda fn: (lambda f: lambda *a: halve(f(*a)))(
                gc.function(doubled(fn), backend="numba")), numba_forced)]


def run(numba_forced, fn, *args):
    """fn's outputs on each path."""
    out = {}
    for name, wrap, forced in paths(numba_forced):
        if forced is None:
            out[name] = wrap(fn)(*args)
        else:
            with forced.expect(kernels=True):
                out[name] = wrap(fn)(*args)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_exponent(numba_forced, dtype):
    xs = np.repeat(np.array(X, dtype), len(Y))
    ys = np.tile(np.array(Y, dtype), len(X))
    want = np.array(TF, dtype).ravel()
    for name, (out,) in run(numba_forced, lambda a, b: [gc.pow(a, b)],
                            gc.constant(xs), gc.constant(ys)).items():
        assert_bits(out.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("j", range(len(Y)))
def test_scalar_exponent(numba_forced, dtype, j):
    """A 0-d tensor, a Python number, and a Python base: the forms numpy's fast path takes."""
    y = Y[j]
    want = np.array([row[j] for row in TF], dtype)

    def fn(a, b):
        return [gc.pow(a, b), a ** y]

    x = gc.constant(np.array(X, dtype))
    for name, outs in run(numba_forced, fn, x, gc.constant(y, getattr(gc, dtype))).items():
        for out in outs:
            assert_bits(out.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("i", [0, 4, 6])     # bases -inf, -0.0, 0.5
def test_python_base(numba_forced, dtype, i):
    want = np.array(TF[i], dtype)
    ys = gc.constant(np.array(Y, dtype))
    for name, (out,) in run(numba_forced, lambda b: [X[i] ** b], ys).items():
        assert_bits(out.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_a_compiled_loop(numba_forced, dtype):
    """A while loop compiled natively: pow with a scalar exponent inside its body."""
    def fn(a, n):
        out, i = gc.zeros_like(a), gc.constant(0)
        while i < n:
            out = a ** 0.5
            i += 1
        return out

    x = gc.constant(np.array(X, dtype))
    want = np.array([row[6] for row in TF], dtype)
    with numba_forced.expect(loops=True):
        assert_bits(gc.function(fn, backend="numba")(x, gc.constant(2)).numpy(), want)
    assert_bits(fn(x, gc.constant(2)).numpy(), want)
    assert_bits(gc.function(fn, backend="numpy")(x, gc.constant(2)).numpy(), want)


# tf.pow on integers in TF 2.21: wrapped square-and-multiply products
INT_TF = {
    "int32": [(-3, 31, -1264544299), (3, 63, 2111105451), (7, 63, 1075496887),
              (2, 31, -2147483648), (-2, 63, 0), (-1, 63, -1), (0, 0, 1), (5, 2, 25)],
    "int64": [(-3, 31, -617673396283947), (3, 63, -3237885987332494933),
              (7, 31, -7409217536257189193), (2, 63, -9223372036854775808),
              (-2, 63, -9223372036854775808), (2, 31, 2147483648), (0, 0, 1), (5, 2, 25)],
}


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_pow_wraps_as_tf(numba_forced, dtype):
    xs, ys, want = (np.array(c, dtype) for c in zip(*INT_TF[dtype]))

    def fn(a, b, n):        # a loop: integer pow is compiled in loops, not fused kernels
        out, i = gc.zeros_like(a), gc.constant(0)
        while i < n:
            out = gc.pow(a, b)
            i += 1
        return out

    args = (gc.constant(xs), gc.constant(ys), gc.constant(1))
    np.testing.assert_array_equal(fn(*args).numpy(), want)
    np.testing.assert_array_equal(gc.function(fn, backend="numpy")(*args).numpy(), want)
    with numba_forced.expect(loops=True):
        np.testing.assert_array_equal(gc.function(fn, backend="numba")(*args).numpy(), want)


@pytest.mark.parametrize("base", [-2, -1, 0, 1, 3])
def test_integer_negative_exponent_raises_as_tf(numba_forced, base):
    """TF: InvalidArgumentError 'Integers to negative integer powers are not allowed', for
    every base (1 and -1 too), eagerly and in tf.function."""
    x, y = gc.constant([base, 2]), gc.constant([-1, 2])
    for wrap in (lambda f: f, lambda f: gc.function(f, backend="numpy"),
                 lambda f: gc.function(f, backend="numba")):
        with pytest.raises(gc.errors.InvalidArgumentError, match="negative"):
            wrap(lambda a, b: gc.pow(a, b) * 2)(x, y)
