"""Bit-level and single-instruction building blocks for the vectorizable math in `vecmath`.

Each helper is a numba `@intrinsic` that emits a few plain LLVM instructions (bitcast, shifts,
`select`, `llvm.rint`/`llvm.fmuladd`/...), never a libm call, so LLVM's loop vectorizer can turn a
loop that calls them into SIMD code. All are generic over float32/float64 (the integer width
follows the float width); a non-float argument is a typing error naming the helper.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .linking import compile_inline_only

# float width -> (integer type, mantissa bits, exponent bias)
_LAYOUT = {32: (ir.IntType(32), 23, 127), 64: (ir.IntType(64), 52, 1023)}
_I32 = ir.IntType(32)


def _float_arg(name, *args):
    """The common float type of `args`, or a TypingError that says what was passed."""
    first = args[0]
    if not isinstance(first, types.Float) or any(a != first for a in args[1:]):
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath.{name}: expected float32 or float64 arguments of one type, "
                          f"got {', '.join(str(a) for a in args)}")
    return first


def _float_ir(t):
    return ir.FloatType() if t.bitwidth == 32 else ir.DoubleType()


def _llvm_float(name, nargs):
    """An intrinsic calling `llvm.<name>.f32/.f64` on `nargs` floats of one type."""
    def typed(*args):
        ft = _float_arg(name, *args)

        def codegen(context, builder, sig, llargs):
            ty = _float_ir(ft)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ty, [ty] * nargs), f"llvm.{name}.f{ft.bitwidth}")
            return builder.call(fn, llargs)
        return ft(*[ft] * nargs), codegen

    # numba reads the typer's arity from its parameters
    typers = {1: lambda typingctx, x: typed(x), 2: lambda typingctx, a, b: typed(a, b),
              3: lambda typingctx, a, b, c: typed(a, b, c)}
    typer = typers[nargs]
    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


rint = _llvm_float("rint", 1)        # round half to even (vroundps)
floor = _llvm_float("floor", 1)
ceil = _llvm_float("ceil", 1)
fabs = _llvm_float("fabs", 1)
sqrt = _llvm_float("sqrt", 1)
# max/min that propagate NaN (IEEE 754-2019 maximum/minimum): as a loop reduction LLVM
# vectorizes these, while a compare-select max is kept scalar without no-nans flags
# (measured: row max of 4096x1024 float32, 1.5 ms against 5.3 ms).
fmaximum = _llvm_float("maximum", 2)
fminimum = _llvm_float("minimum", 2)
# |mag| with the sign bit of `sgn` (and/or on the bits)
copysign = _llvm_float("copysign", 2)
# a*b + c, fused where the target has FMA (it does here): used for Horner steps.
mad = _llvm_float("fmuladd", 3)
# a*b + c with a single rounding, always (needed for exact product error terms).
fma = _llvm_float("fma", 3)


@intrinsic
def select(typingctx, cond, a, b):
    """`a if cond else b` as one LLVM `select` (no branch, so the loop stays vectorizable)."""
    if not isinstance(cond, types.Boolean):
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath.select: condition must be a boolean, got {cond}")
    ft = _float_arg("select", a, b)

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])
    return ft(cond, ft, ft), codegen


# Adding ROUND_MAGIC (1.5 * 2**mantissa_bits) to a float v with |v| < 2**22 (float32; 2**51
# float64) rounds v to an integer n that the sum z holds in its low mantissa bits: z - ROUND_MAGIC
# is rint(v) and z's lowest bit is n's parity (`flip_if_odd`), with no float->int conversion.
# EXP_MAGIC adds the exponent bias as well, so z = EXP_MAGIC + n holds n + bias there, which
# `pow2_bits` shifts into the exponent field.
ROUND_MAGIC = {np.float32: np.float32(1.5 * 2.0 ** 23), np.float64: np.float64(1.5 * 2.0 ** 52)}
EXP_MAGIC = {np.float32: np.float32(1.5 * 2.0 ** 23 + 127),
             np.float64: np.float64(1.5 * 2.0 ** 52 + 1023)}


def _target_has_avx512f(context):
    """Whether the code being generated is for a CPU with AVX-512F (numba's target machine:
    NUMBA_CPU_NAME/NUMBA_CPU_FEATURES, else the host); False where that cannot be told."""
    magic_tuple = getattr(context.codegen(), "magic_tuple", None)
    features = magic_tuple()[2] if callable(magic_tuple) else ""
    return "+avx512f" in (features or "").split(",")


@intrinsic
def pow2_bits(typingctx, z):
    """2**n for z = EXP_MAGIC + n and n + bias in [1, 2 * bias] (a normal power of two): z's bits
    shifted left by the mantissa width, so n + bias lands in the exponent field."""
    ft = _float_arg("pow2_bits", z)

    def codegen(context, builder, sig, args):
        ity, mbits, _bias = _LAYOUT[ft.bitwidth]
        bits = builder.shl(builder.bitcast(args[0], ity), ir.Constant(ity, mbits))
        return builder.bitcast(bits, _float_ir(ft))
    return ft(ft), codegen


@intrinsic
def scale_pow2(typingctx, p, z, n):
    """p * 2**n rounded once (into the denormals, or to inf), for p in [0.5, 2], z = EXP_MAGIC + n
    and n = z - EXP_MAGIC in [-151, 129] (float32) or [-1076, 1025] (float64); nan p gives nan.

    AVX-512 targets: `llvm.ldexp`, one vscalefps (n as an integer from z's bits, no float->int
    conversion). Elsewhere (llvm.ldexp would be a libm call per lane): two multiplications by
    normal powers of two, 2**(n -+ K) (exact: the product stays normal) then 2**(+-K), which
    rounds once, with K = 64 (float32) or 600 (float64).
    """
    ft = _float_arg("scale_pow2", p, z, n)

    def codegen(context, builder, sig, args):
        ity, mbits, _bias = _LAYOUT[ft.bitwidth]
        fty = _float_ir(ft)
        p, z, n = args
        zbits = builder.bitcast(z, ity)
        if _target_has_avx512f(context):
            npf, npi = (np.float32, np.int32) if ft.bitwidth == 32 else (np.float64, np.int64)
            magic_bits = int(np.array(EXP_MAGIC[npf]).view(npi))
            k = builder.sub(zbits, ir.Constant(ity, magic_bits))
            if ity.width != 32:
                k = builder.trunc(k, _I32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(fty, [fty, _I32]), f"llvm.ldexp.f{ft.bitwidth}.i32")
            return builder.call(fn, [p, k])
        big = 64 if ft.bitwidth == 32 else 600
        neg = builder.fcmp_ordered("<", n, ir.Constant(fty, 0.0))
        off = builder.select(neg, ir.Constant(ity, (-big) << mbits), ir.Constant(ity, big << mbits))
        s2 = builder.sub(builder.shl(zbits, ir.Constant(ity, mbits)), off)
        s1 = builder.select(neg, ir.Constant(fty, 2.0 ** -big), ir.Constant(fty, 2.0 ** big))
        return builder.fmul(builder.fmul(p, builder.bitcast(s2, fty)), s1)
    return ft(ft, ft, ft), codegen


@intrinsic
def flip_if_odd(typingctx, v, z):
    """v with its sign flipped where z = ROUND_MAGIC + n holds an odd n (an xor of z's lowest
    bit, shifted to the sign, into v)."""
    ft = _float_arg("flip_if_odd", v, z)

    def codegen(context, builder, sig, args):
        ity = _LAYOUT[ft.bitwidth][0]
        sign = builder.shl(builder.bitcast(args[1], ity), ir.Constant(ity, ft.bitwidth - 1))
        return builder.bitcast(builder.xor(builder.bitcast(args[0], ity), sign), _float_ir(ft))
    return ft(ft, ft), codegen


def _log_split(builder, ft, x):
    """(k, m) with x = 2**k * m, m in [sqrt(1/2), sqrt(2)), for positive normal x."""
    ity, mbits, bias = _LAYOUT[ft.bitwidth]
    sqrt_half = 0x3F3504F3 if ft.bitwidth == 32 else 0x3FE6A09E667F3BCD
    ix = builder.sub(builder.bitcast(x, ity), ir.Constant(ity, sqrt_half))
    k = builder.ashr(ix, ir.Constant(ity, mbits))
    if ity.width != 32:
        k = builder.trunc(k, _I32)                 # i32 -> f64 converts in SIMD on AVX2
    mant = builder.and_(ix, ir.Constant(ity, (1 << mbits) - 1))
    m = builder.bitcast(builder.add(mant, ir.Constant(ity, sqrt_half)), _float_ir(ft))
    return builder.sitofp(k, _float_ir(ft)), m


@intrinsic
def log_exponent(typingctx, x):
    """k (as a float) with x = 2**k * m and m in [sqrt(1/2), sqrt(2)); x positive and normal."""
    ft = _float_arg("log_exponent", x)

    def codegen(context, builder, sig, args):
        return _log_split(builder, ft, args[0])[0]
    return ft(ft), codegen


@intrinsic
def log_mantissa(typingctx, x):
    """m in [sqrt(1/2), sqrt(2)) with x = 2**k * m; x positive and normal."""
    ft = _float_arg("log_mantissa", x)

    def codegen(context, builder, sig, args):
        return _log_split(builder, ft, args[0])[1]
    return ft(ft), codegen


@intrinsic
def binary_exponent(typingctx, x):
    """The unbiased exponent field of x as an integral float (x finite and nonzero normal)."""
    ft = _float_arg("binary_exponent", x)

    def codegen(context, builder, sig, args):
        ity, mbits, bias = _LAYOUT[ft.bitwidth]
        e = builder.lshr(builder.bitcast(args[0], ity), ir.Constant(ity, mbits))
        e = builder.and_(e, ir.Constant(ity, (2 * bias + 1)))
        if ity.width != 32:
            e = builder.trunc(e, _I32)
        e = builder.sub(e, ir.Constant(_I32, bias))
        return builder.sitofp(e, _float_ir(ft))
    return ft(ft), codegen


@intrinsic
def to_float64(typingctx, x):
    """fpext float32 -> float64 (exact)."""
    if _float_arg("to_float64", x) != types.float32:
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath.to_float64: expected float32, got {x}")

    def codegen(context, builder, sig, args):
        return builder.fpext(args[0], ir.DoubleType())
    return types.float64(types.float32), codegen


@intrinsic
def to_float32(typingctx, x):
    """fptrunc float64 -> float32 (rounds to nearest)."""
    if _float_arg("to_float32", x) != types.float64:
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath.to_float32: expected float64, got {x}")

    def codegen(context, builder, sig, args):
        return builder.fptrunc(args[0], ir.FloatType())
    return types.float32(types.float64), codegen


@intrinsic
def horner(typingctx, t, coeffs):
    """c0 + t*(c1 + t*(c2 + ...)) for a tuple of coefficients, as a straight line of fmuladd."""
    ft = _float_arg("horner", t)
    if not (isinstance(coeffs, types.UniTuple) and coeffs.dtype == ft and coeffs.count >= 1):
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath.horner: coefficients must be a tuple of {ft}, got {coeffs}")

    def codegen(context, builder, sig, args):
        x, cs = args
        ty = _float_ir(ft)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ty, [ty] * 3), f"llvm.fmuladd.f{ft.bitwidth}")
        acc = builder.extract_value(cs, coeffs.count - 1)
        for i in range(coeffs.count - 2, -1, -1):
            acc = builder.call(fn, [acc, x, builder.extract_value(cs, i)])
        return acc
    return ft(ft, coeffs), codegen


@intrinsic
def horner2(typingctx, t, cond, coeffs_a, coeffs_b):
    """`horner(t, coeffs_a if cond else coeffs_b)` picking coefficients per lane with `select`,
    so two polynomial pieces cost one evaluation (the shorter tuple is padded with zeros)."""
    ft = _float_arg("horner2", t)
    for cs in (coeffs_a, coeffs_b):
        if not (isinstance(cs, types.UniTuple) and cs.dtype == ft):
            from numba.core.errors import TypingError
            raise TypingError(f"vecmath.horner2: coefficients must be tuples of {ft}, got {cs}")

    def codegen(context, builder, sig, args):
        x, c, ca, cb = args
        ty = _float_ir(ft)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ty, [ty] * 3), f"llvm.fmuladd.f{ft.bitwidth}")
        n = max(coeffs_a.count, coeffs_b.count)

        def coef(i):
            a = builder.extract_value(ca, i) if i < coeffs_a.count else ir.Constant(ty, 0.0)
            b = builder.extract_value(cb, i) if i < coeffs_b.count else ir.Constant(ty, 0.0)
            return builder.select(c, a, b)
        acc = coef(n - 1)
        for i in range(n - 2, -1, -1):
            acc = builder.call(fn, [acc, x, coef(i)])
        return acc
    return ft(ft, cond, coeffs_a, coeffs_b), codegen


def inlined(dispatcher, nargs=1, attrs=("alwaysinline",)):
    """An intrinsic calling the njit `dispatcher` with the `alwaysinline` call-site attribute
    (compiled as IR for inlining only: `linking.compile_inline_only`); `outlined` below for
    `noinline`.

    LLVM's inliner skips large callees (erf, pow), and a call left in a loop body stops the loop
    vectorizer. Inlining at LLVM level (rather than numba's `inline="always"`) keeps the callee's
    own fast-math flags, so a caller compiled with `fastmath=True` cannot fold away its
    inf/nan handling.
    """
    def typer(args):
        cres = compile_inline_only(dispatcher, args)

        def codegen(context, builder, sig, llargs):
            context.add_linking_libs([cres.library])
            fn = context.declare_function(builder.module, cres.fndesc)
            _status, res = context.call_conv.call_function(
                builder, fn, sig.return_type, sig.args, llargs, attrs=attrs)
            return res
        return cres.signature, codegen

    if nargs == 1:
        def call(typingctx, x):
            return typer((x,))
    elif nargs == 2:
        def call(typingctx, x, y):
            return typer((x, y))
    elif nargs == 3:
        def call(typingctx, x, y, z):
            return typer((x, y, z))
    else:
        def call(typingctx, x, y, z, w):
            return typer((x, y, z, w))
    call.__name__ = call.__qualname__ = getattr(dispatcher, "__name__", "inlined")
    result = intrinsic(call)
    if "alwaysinline" in attrs:     # lets vecmath._define call it without a wrapper
        result.inlined_dispatcher = dispatcher
    return result


def outlined(dispatcher, nargs=1):
    """An intrinsic calling the njit `dispatcher` with `noinline`: its IR is linked into the
    kernel and compiled there as a function of its own, for large code on a rarely taken
    branch (inlined into every use, it can cost LLVM minutes: see vecmath._whole_range)."""
    return inlined(dispatcher, nargs, ("noinline",))


@intrinsic
def pick(typingctx, index, table):
    """table[int(index)] for a small constant tuple, as a chain of selects (no memory gather,
    which AVX2 targets scalarize); index is an integral float in [0, len(table))."""
    ft = _float_arg("pick", index)
    if not (isinstance(table, types.UniTuple) and isinstance(table.dtype, types.Float)):
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath.pick: table must be a tuple of floats, got {table}")

    def codegen(context, builder, sig, args):
        idx, tab = args
        res = builder.extract_value(tab, 0)
        for i in range(1, table.count):
            hit = builder.fcmp_ordered("==", idx, ir.Constant(_float_ir(ft), float(i)))
            res = builder.select(hit, builder.extract_value(tab, i), res)
        return res
    return table.dtype(ft, table), codegen


@intrinsic
def prefer_vector_width(typingctx, width):
    """Let LLVM vectorize the calling function's loops `width` bits wide (a literal int).

    On AVX-512 CPUs LLVM keeps loops at 256 bits by default (prefer-256-bit tuning); for
    compute-bound kernels 512 is faster (measured on an Emerald Rapids VM: the issue's
    tanh/exp/sin chain 2.67 -> 2.12 ns per element, bit-identical results). Emits no code:
    it sets the function attributes (inside a prange loop it would have to sit in the loop
    body, which numba outlines into a function of its own)."""
    if not isinstance(width, types.IntegerLiteral):
        return None
    value = width.literal_value

    def codegen(context, builder, sig, args):
        # llvmlite.ir knows no string attributes: add them to the set unchecked; they
        # print inline in the function definition, which LLVM IR allows
        for attr in (f'"prefer-vector-width"="{value}"', f'"min-legal-vector-width"="{value}"'):
            set.add(builder.function.attributes, attr)
        return context.get_dummy_value()
    return types.none(width), codegen
