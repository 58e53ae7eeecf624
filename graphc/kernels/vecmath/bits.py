"""Bit-level and single-instruction building blocks for the vectorizable math in `vecmath`.

Each helper is a numba `@intrinsic` that emits a few plain LLVM instructions (bitcast, shifts,
`select`, `llvm.rint`/`llvm.fmuladd`/...), never a libm call, so LLVM's loop vectorizer can turn a
loop that calls them into SIMD code. All are generic over float32/float64 (the integer width
follows the float width); a non-float argument is a typing error naming the helper.
"""
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


@intrinsic
def pow2i(typingctx, n):
    """2**n for an integral-valued float n with min_exponent <= n <= max_exponent (normal range).

    Builds the exponent field directly: fptosi to i32, add the bias, shift into place, bitcast.
    """
    ft = _float_arg("pow2i", n)

    def codegen(context, builder, sig, args):
        ity, mbits, bias = _LAYOUT[ft.bitwidth]
        k = builder.fptosi(args[0], _I32)          # i32 even for f64: AVX2 has f64->i32 only
        k = builder.add(k, ir.Constant(_I32, bias))
        if ity.width != 32:
            k = builder.sext(k, ity)
        bits = builder.shl(k, ir.Constant(ity, mbits))
        return builder.bitcast(bits, _float_ir(ft))
    return ft(ft), codegen


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
