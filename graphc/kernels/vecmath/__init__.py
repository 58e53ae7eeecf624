"""Vectorizable math for fused numba kernels.

The pip llvmlite has no SVML, so `math.exp`/`math.tanh`/`math.sin` in a numba loop become scalar
libm calls and the loop is never vectorized. The functions here are range reduction + polynomial
in plain float arithmetic (the approach of SLEEF, XLA's vector math and Cephes; coefficients are
our own fits, see `vecmath_fit`), with the few bit-level steps done by LLVM intrinsics
(`vecmath_bits`) and every special case patched in with `select`, so a loop calling them
compiles to SIMD code (`<8 x float>` on AVX2).

Use them inside `numba.njit` code: `exp(x)`, `pow(x, y)`... They are generic over float32 and
float64 (integers are computed in float64, like numpy), accurate to a few ulp over the whole
range including inf, nan, -0.0 and denormals. float64 sin/cos/tan call libm (whole range, not
vectorized); `fast_sin/cos/tan` are the vectorized polynomials, exact over |x| < 2**17 (float32)
or 2**47 (float64) and nan beyond, and `fast_trig_miss(x)` is 1 where an argument is beyond that
range, so a kernel can run the fast variant and redo the work with the whole-range one only when
some argument missed. They keep their own fast-math flags (only FMA contraction), so a caller's
`fastmath=True` cannot fold away their nan/inf handling.
Checked exhaustively over all 2**32 float32 inputs against float64 numpy rounded to float32:
max error 1 ulp (exp, log, log1p, tanh, erf), 2 (sin, cos), 3 (sigmoid), 4 (tan).
Called from Python they also work, elementwise on scalars and arrays (slowly: for tests).

`SCALAR_FUNCS` maps the names used in the op registry's scalar templates to these functions;
`FAST_SCALAR_FUNCS` swaps in `fast_sin/cos/tan`, which leave out the huge-argument paths.
"""
import math

import numba
import numpy as np
from numba import types
from numba.core.dispatcher import Dispatcher
from numba.core.errors import TypingError
from numba.extending import lower_builtin, type_callable

from . import bits as _bits
from .linking import compile_inline_only
from .explog import make_exp, make_log, make_log1p
from .pow import make_pow
from .special import make_erf, make_sigmoid, make_tanh
from .trig import (F32_FAST_ACCURATE_BELOW, F64_ACCURATE_BELOW, make_cos, make_sin,
                           make_tan, make_trig_miss)
from .ulp import max_ulp_error, ulp_distance  # noqa: F401 - public helpers

__all__ = ["exp", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "tan", "erf", "pow",
           "sqrt", "floor", "ceil", "rint", "sign", "abs", "fast_sin", "fast_cos", "fast_tan",
           "fast_trig_miss",
           "SCALAR_FUNCS", "FAST_SCALAR_FUNCS", "ulp_distance", "max_ulp_error",
           "F64_ACCURATE_BELOW", "F32_FAST_ACCURATE_BELOW"]

_PY_UFUNCS = {}


def _float_type(name, *args):
    """The float type an elementwise call computes in (numpy promotion), or a TypingError."""
    if not all(isinstance(a, (types.Float, types.Integer, types.Boolean)) for a in args):
        raise TypingError(f"vecmath.{name}: expected float or integer scalars, got "
                          f"{', '.join(str(a) for a in args)}; call it on array elements")
    if all(a == types.float32 for a in args):
        return types.float32
    return types.float64


def _define(name, factory, nargs, doc, int_impl=None):
    """A Python function `name` that numba compiles to the per-dtype implementation, called
    with LLVM's `alwaysinline` (`int_impl`, one-argument functions only, keeps integer
    arguments integer).

    Typed by a plain template and lowered to one call of the per-dtype implementation (or a
    small wrapper where it is not an njit function), compiled once per process as IR for
    inlining only (`linking`): numba's `overload(inline="always")` re-ran its inliner and
    typing at every call site, which cost a kernel's cold compile 15-40% (a 4-function loop,
    measured side by side in fresh processes)."""
    impls = {types.float32: factory(np.float32), types.float64: factory(np.float64)}
    wrappers = {}

    def python_call(*args):
        if name not in _PY_UFUNCS:
            sigs = ([f"float32({', '.join(['float32'] * nargs)})",
                     f"float64({', '.join(['float64'] * nargs)})"])
            body = (lambda f: (lambda a: f(a)) if nargs == 1 else (lambda a, b: f(a, b)))(
                globals()[name])
            _PY_UFUNCS[name] = numba.vectorize(sigs)(body)
        return _PY_UFUNCS[name](*args)

    def compiled(key, argtys):
        """(dispatcher, its compile result) of the wrapper for `key`: ft, or 'int'."""
        if key not in wrappers:
            impl = int_impl if key == "int" else impls[key]
            if isinstance(impl, Dispatcher):
                wrappers[key] = impl
            elif getattr(impl, "inlined_dispatcher", None) is not None:
                wrappers[key] = impl.inlined_dispatcher
            else:
                fn = impl if key == "int" else (
                    (lambda x: impl(x)) if nargs == 1 else (lambda x, y: impl(x, y)))
                wrappers[key] = numba.njit(error_model="numpy")(fn)
        return compile_inline_only(wrappers[key], argtys)

    def typed(*args):
        if int_impl is not None and isinstance(args[0], types.Integer):
            return compiled("int", args).signature.return_type
        return _float_type(name, *args)

    if nargs == 1:       # numba reads the arity from the parameters
        def fn(x):
            return python_call(x)

        def typer(x):
            return typed(x)
    else:
        def fn(x, y):
            return python_call(x, y)

        def typer(x, y):
            return typed(x, y)
    type_callable(fn)(lambda context: typer)

    @lower_builtin(fn, *[types.Any] * nargs)
    def _lower(context, builder, sig, args):
        if int_impl is not None and isinstance(sig.args[0], types.Integer):
            cres, argtys = compiled("int", sig.args), sig.args
        else:
            ft = sig.return_type
            argtys = (ft,) * nargs
            args = [context.cast(builder, a, t, ft) for a, t in zip(args, sig.args)]
            cres = compiled(ft, argtys)
        context.add_linking_libs([cres.library])
        callee = context.declare_function(builder.module, cres.fndesc)
        _status, res = context.call_conv.call_function(
            builder, callee, sig.return_type, argtys, args, attrs=("alwaysinline",))
        return res

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


exp = _define("exp", make_exp, 1, "e**x (0 below the underflow edge, inf above overflow).")
log = _define("log", make_log, 1, "Natural log: -inf at +-0, nan for x < 0, inf at inf.")
log1p = _define("log1p", make_log1p, 1, "log(1 + x), exact for tiny x; -inf at -1.")
tanh = _define("tanh", make_tanh, 1, "Hyperbolic tangent; saturates to +-1, keeps -0.0.")
sigmoid = _define("sigmoid", make_sigmoid, 1, "1 / (1 + exp(-x)), precise down to denormals.")
def _whole_range(make, libm_fn):
    """float32: the fast polynomial below F32_FAST_ACCURATE_BELOW, the Payne-Hanek one only
    beyond it (a branch, not both computed and selected: LLVM never finished optimizing two
    nested selected copies in a loop over a broadcast row, fuzz seed 799), and called, not
    inlined; float64: libm,
    since a float64 Payne-Hanek would need ~17 words of 2/pi per lane."""
    libm = numba.njit(error_model="numpy")(lambda x: libm_fn(x))

    def float32():
        # the Payne-Hanek path as a call, not inlined: inlined into each use it made LLVM
        # spend minutes on a loop with sin(sin(x)) and a reduction of sin(x) (seed 799
        # again, once this function reached kernels unoptimized: linking.py)
        fast = make(np.float32, fast=True)
        full = _bits.outlined(make(np.float32).inlined_dispatcher)
        limit = np.float32(F32_FAST_ACCURATE_BELOW)

        @numba.njit(error_model="numpy")
        def whole_range(x):
            if abs(x) < limit:
                return fast(x)
            return full(x)
        return whole_range
    return lambda ft: float32() if ft is np.float32 else libm


sin = _define("sin", _whole_range(make_sin, math.sin), 1, "Sine; nan for inf/nan.")
cos = _define("cos", _whole_range(make_cos, math.cos), 1, "Cosine; nan for inf/nan.")
tan = _define("tan", _whole_range(make_tan, math.tan), 1, "Tangent; nan for inf/nan.")
_FAST_DOC = ("{0} as a vectorizable polynomial without a huge-argument path: nan for |x| >= "
             "2**17 (float32) or 2**47 (float64), about 5x cheaper than `{0}` in float32 loops.")
fast_sin = _define("fast_sin", lambda ft: make_sin(ft, fast=True), 1, _FAST_DOC.format("sin"))
fast_cos = _define("fast_cos", lambda ft: make_cos(ft, fast=True), 1, _FAST_DOC.format("cos"))
fast_tan = _define("fast_tan", lambda ft: make_tan(ft, fast=True), 1, _FAST_DOC.format("tan"))
fast_trig_miss = _define(
    "fast_trig_miss", make_trig_miss, 1,
    "1 (in x's float type) where fast_sin/cos/tan(x) is nan although sin/cos/tan(x) is not "
    "(finite |x| beyond the fast range), else 0: a sum of these tells a kernel to redo.")
erf = _define("erf", make_erf, 1, "Error function; +-1 beyond the saturation edge.")
pow = _define("pow", make_pow, 2,  # noqa: A001 - the template name
              "x**y with the C99 special cases (pow(x, 0) = 1, pow(1, y) = 1, pow(-1, inf) = 1,"
              " nan for negative x with non-integer y, sign kept for odd integer y).")


def _plain(name, bit_op, doc):
    """Ops LLVM already vectorizes (one instruction), through the same generic front door."""
    return _define(name, lambda ft: bit_op, 1, doc)


sqrt = _plain("sqrt", _bits.sqrt, "Square root (one vsqrtps/vsqrtpd); nan below 0.")
floor = _plain("floor", _bits.floor, "Round down, keeping the float dtype.")
ceil = _plain("ceil", _bits.ceil, "Round up, keeping the float dtype.")
rint = _plain("rint", _bits.rint, "Round half to even (np.rint), keeping the float dtype.")


def _make_sign(ft):
    zero, one = ft(0), ft(1)

    @numba.njit(fastmath={"contract"}, error_model="numpy")
    def sign_(x):
        nonpositive = _bits.select(x < zero, -one, _bits.select(x == x, zero, x))  # 0 or nan
        return _bits.select(x > zero, one, nonpositive)
    return _bits.inlined(sign_)


@numba.njit
def _sign_int(x):
    return (x > 0) - (x < 0)


sign = _define("sign", _make_sign, 1, "np.sign: -1, 1, zero for zero, nan for nan.",
               int_impl=lambda x: type(x)(_sign_int(x)))
abs = _define("abs", lambda ft: _bits.fabs, 1, "|x| (clears a float's sign bit).",  # noqa: A001
              int_impl=lambda x: x if x >= 0 else -x)

# Template names of the op registry's scalar templates -> functions for generated kernels.
SCALAR_FUNCS = {f.__name__: f for f in (exp, log, log1p, tanh, sigmoid, sin, cos, tan, erf,
                                        pow, sqrt, floor, ceil, rint, sign, abs)}
# The same with the reduced-range trig: for kernels that check fast_trig_miss and redo.
FAST_SCALAR_FUNCS = dict(SCALAR_FUNCS, sin=fast_sin, cos=fast_cos, tan=fast_tan)
