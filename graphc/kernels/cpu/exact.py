"""Building blocks that keep compiled kernels exactly on numpy's rules, without fast-math.

- `wadd`, `wsub`, `wmul`, `wneg`, `wabs`: two's complement integer arithmetic that wraps as
  numpy's does. numba emits `add nsw`/`mul nsw` (overflow is undefined behaviour), so LLVM
  may fold `x + 1 > x` to True; these emit the plain instructions.
- `ifloordiv`, `imod`: numpy's floored integer division, raising ZeroDivisionError for a
  zero divisor, emitted in place in the operands' width.
- `to_int32`, `to_int64`: float -> int casts giving what numpy gives on x86 (INT_MIN for
  NaN, inf and out-of-range values) instead of LLVM's `fptosi` poison.
- `stack_array`: a small array on the stack (no allocation; LLVM keeps it in registers).
- `block_sum`: a float block summed in explicit SIMD lanes in a fixed order, combined
  pairwise. LLVM only vectorizes a float reduction under `reassoc`, which also lets it
  rewrite `y - (y - x)` to `x`; this vectorizes by construction.
- `cascade_push`, `cascade_total`: block sums combined as a pairwise tree (a binary
  counter of partial sums), so a long sum's rounding error grows like numpy's pairwise
  sum, with log2(blocks) levels.
Float products stay sequential, in numpy's order: regrouped, a product that overflows in
one part and underflows in another gives NaN (inf * 0) where numpy gives inf or 0.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from ..vecmath.bits import inlined

BLOCK = 1024        # elements per block of a float sum
LANES = 64          # accumulators per block (an inner loop of 64 is vectorized, not unrolled:
#                     16 lanes were unrolled and left scalar, 2.3x slower, measured)
LEVELS = 64         # cascade levels: enough for 2**64 blocks
_VECTORS = 4        # independent vector accumulators: hides the add latency (4 cycles)


def _int_args(name, *args):
    first = args[0]
    if not isinstance(first, types.Integer) or any(a != first for a in args[1:]):
        raise TypingError(f"exact.{name}: expected integer arguments of one type, got "
                          f"{', '.join(str(a) for a in args)} (cast them first)")
    return first


def _wrapping(name, emit, nargs):
    def typer(*args):
        ty = _int_args(name, *args)

        def codegen(context, builder, sig, llargs):
            return emit(builder, *llargs)
        return ty(*[ty] * nargs), codegen

    if nargs == 1:
        def call(typingctx, a):
            return typer(a)
    else:
        def call(typingctx, a, b):
            return typer(a, b)
    call.__name__ = call.__qualname__ = name
    return intrinsic(call)


def _abs(builder, a):
    neg = builder.sub(ir.Constant(a.type, 0), a)
    return builder.select(builder.icmp_signed("<", a, ir.Constant(a.type, 0)), neg, a)


wadd = _wrapping("wadd", lambda b, x, y: b.add(x, y), 2)
wsub = _wrapping("wsub", lambda b, x, y: b.sub(x, y), 2)
wmul = _wrapping("wmul", lambda b, x, y: b.mul(x, y), 2)
wneg = _wrapping("wneg", lambda b, x: b.sub(ir.Constant(x.type, 0), x), 1)
wabs = _wrapping("wabs", _abs, 1)       # abs(INT_MIN) is INT_MIN, as in numpy


def _divide(name, mod):
    """Integer `a // b` or `a % b` as numpy gives them (floored; INT_MIN // -1 wraps to
    INT_MIN, x % -1 is 0), raising ZeroDivisionError for b == 0 (compiled loops catch it
    and rerun interpreted for numpy's own result and warning). Emitted in place, in the
    operands' own width: numba's `%` on int32 computes in int64, and a constant divisor's
    magic-number multiply in 64-bit lanes made the scalar while loop's `i * i % 7` (20k
    steps, vectorized) 24 us instead of 6.6."""
    def call(typingctx, a, b):
        if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
            raise TypingError(f"exact.{name}: expected integers, got {a}, {b}")
        ty = typingctx.unify_types(a, b)

        def codegen(context, builder, sig, args):
            x = context.cast(builder, args[0], sig.args[0], ty)
            y = context.cast(builder, args[1], sig.args[1], ty)
            zero, one = ir.Constant(x.type, 0), ir.Constant(x.type, 1)
            with cgutils.if_unlikely(builder, builder.icmp_unsigned("==", y, zero)):
                context.call_conv.return_user_exc(builder, ZeroDivisionError,
                                                  ("integer division by zero",))
            if not ty.signed:
                return builder.urem(x, y) if mod else builder.udiv(x, y)
            minus_one = builder.icmp_signed("==", y, ir.Constant(x.type, -1))
            y1 = builder.select(minus_one, one, y)      # sdiv/srem by -1 can trap
            q, r = builder.sdiv(x, y1), builder.srem(x, y1)
            floor = builder.and_(builder.icmp_signed("!=", r, zero),
                                 builder.icmp_signed("<", builder.xor(r, y1), zero))
            if mod:
                return builder.select(floor, builder.add(r, y1), r)
            q = builder.select(floor, builder.sub(q, one), q)
            return builder.select(minus_one, builder.sub(zero, x), q)
        return ty(a, b), codegen

    call.__name__ = call.__qualname__ = name
    return intrinsic(call)


ifloordiv = _divide("ifloordiv", mod=False)
imod = _divide("imod", mod=True)


@njit(error_model="numpy")
def to_int32(x):
    # NaN fails both tests; numpy's x86 cast (cvttss2si) gives INT_MIN for all of these
    return np.int32(x) if -2147483649.0 < x < 2147483648.0 else np.int32(-2147483648)


@njit(error_model="numpy")
def to_int64(x):
    return (np.int64(x) if -9223372036854775808.0 <= x < 9223372036854775808.0
            else np.int64(-9223372036854775808))


@intrinsic
def stack_array(typingctx, dtype, size):
    """An uninitialized 1-d array of `size` (a literal int) elements of `dtype` on the
    stack of the calling function (its entry block: allocated once, even in a loop)."""
    if not isinstance(size, types.IntegerLiteral) or not isinstance(dtype, types.NumberClass):
        return None
    elem = dtype.instance_type
    n = size.literal_value
    aryty = types.Array(elem, 1, "C")

    def codegen(context, builder, sig, args):
        lty = context.get_data_type(elem)
        ptr = cgutils.alloca_once(builder, lty, size=n)
        ary = context.make_array(aryty)(context, builder)
        intp = context.get_value_type(types.intp)
        item = context.get_abi_sizeof(lty)
        context.populate_array(ary, data=ptr, shape=[ir.Constant(intp, n)],
                               strides=[ir.Constant(intp, item)],
                               itemsize=ir.Constant(intp, item), meminfo=None)
        return ary._getvalue()
    return aryty(dtype, size), codegen


def _block_reduce(name, opname, identity):
    """An intrinsic reducing `arr[:n]` (a contiguous 1-d float array) with `opname`:
    element i goes to lane i % (VECTORS * W) of VECTORS vectors of W = 512 / bits lanes;
    the vectors and then their halves are combined pairwise; the tail (n % lanes elements)
    is reduced in order and combined last. The order depends only on n."""
    def call(typingctx, arr, n):
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
                and isinstance(arr.dtype, types.Float) and isinstance(n, types.Integer)):
            raise TypingError(f"exact.{name}: expected a contiguous 1-d float array and a "
                              f"count, got {arr}, {n}")
        ft = arr.dtype

        def codegen(context, builder, sig, args):
            fty = ir.FloatType() if ft.bitwidth == 32 else ir.DoubleType()
            width = 512 // ft.bitwidth
            vty = ir.VectorType(fty, width)
            intp = context.get_value_type(types.intp)
            data = context.make_array(arr)(context, builder, value=args[0]).data
            count = context.cast(builder, args[1], n, types.intp)
            op = getattr(builder, opname)
            step = _VECTORS * width
            main = builder.and_(count, ir.Constant(intp, -step))
            ident = ir.Constant(fty, identity)
            accs = [cgutils.alloca_once_value(builder, ir.Constant(vty, [identity] * width))
                    for _ in range(_VECTORS)]
            with cgutils.for_range_slice(builder, ir.Constant(intp, 0), main,
                                         ir.Constant(intp, step), intp) as (i, _):
                for u, acc in enumerate(accs):
                    at = builder.gep(data, [builder.add(i, ir.Constant(intp, u * width))])
                    vec = builder.load(builder.bitcast(at, vty.as_pointer()),
                                       align=ft.bitwidth // 8)
                    builder.store(op(builder.load(acc), vec), acc)
            vals = [builder.load(acc) for acc in accs]
            while len(vals) > 1:
                vals = [op(vals[k], vals[k + 1]) for k in range(0, len(vals), 2)]
            vec, lanes = vals[0], width
            while lanes > 1:
                lanes //= 2
                lo = builder.shuffle_vector(vec, vec, ir.Constant(
                    ir.VectorType(ir.IntType(32), lanes), list(range(lanes))))
                hi = builder.shuffle_vector(vec, vec, ir.Constant(
                    ir.VectorType(ir.IntType(32), lanes), list(range(lanes, 2 * lanes))))
                vec = op(lo, hi)
            total = builder.extract_element(vec, ir.Constant(ir.IntType(32), 0))
            tail = cgutils.alloca_once_value(builder, ident)
            with cgutils.for_range_slice(builder, main, count, ir.Constant(intp, 1),
                                         intp) as (i, _):
                builder.store(op(builder.load(tail), builder.load(builder.gep(data, [i]))),
                              tail)
            return op(total, builder.load(tail))
        return ft(arr, n), codegen
    call.__name__ = call.__qualname__ = name
    return intrinsic(call)


block_sum = _block_reduce("block_sum", "fadd", 0.0)


# The helpers below reach kernels as calls with LLVM's `alwaysinline`, compiled once per
# process as IR (vecmath.bits.inlined): numba's `inline="always"` re-typed and re-inlined
# their bodies at every call site of every kernel (~50 ms of a row-sum kernel's cold compile).
@njit(error_model="numpy")
def _cascade_push(levels, count, s):
    """Add the `count`-th block sum `s`: levels[k] holds the sum of 2**k blocks when bit k
    of count is set; equal-sized neighbours are added (left + right) as in a pairwise
    tree. Returns count + 1."""
    k, c = 0, count
    while c & 1:
        s = levels[k] + s
        c >>= 1
        k += 1
    levels[k] = s
    return count + 1


cascade_push = inlined(_cascade_push, 3)


@njit(error_model="numpy")
def _cascade_total(levels, count, zero):
    """The sum of every pushed block: the partial trees, right to left (`zero` if none)."""
    total, first, k = zero, True, 0
    while count:
        if count & 1:
            total = levels[k] if first else levels[k] + total
            first = False
        count >>= 1
        k += 1
    return total


cascade_total = inlined(_cascade_total, 3)


@njit(error_model="numpy")
def _buffer_sum(arr, n, levels, zero):
    """arr[:n] (contiguous) summed as the fused loops sum a row: block_sum per BLOCK values,
    the blocks as a pairwise tree. For values a kernel already keeps in a row buffer: a
    sum over the stored row beats a second set of lanes in a costly loop (softmax's exp:
    2.26 ms instead of 2.43 ms for 4096x1024 float32 on one thread, measured)."""
    count = 0
    for c in range((n + BLOCK - 1) // BLOCK):
        lo = c * BLOCK
        count = cascade_push(levels, count, block_sum(arr[lo:], min(BLOCK, n - lo)))
    return cascade_total(levels, count, zero)


buffer_sum = inlined(_buffer_sum, 4)


def _nsz_extremum(name):
    """llvm.maximum/minimum (NaN-propagating) called with `reassoc nsz`: a row max/min
    vectorizes at full speed (0.23 ms instead of 0.52 ms for 4096x1024 float32, measured),
    and the flags change nothing but which zero comes back when a row holds both +0.0 and
    -0.0 (numpy's own choice there depends on the array's length)."""
    def call(typingctx, a, b):
        if not isinstance(a, types.Float) or a != b:
            raise TypingError(f"exact.{name}: expected two floats of one type, got {a}, {b}")

        def codegen(context, builder, sig, args):
            ty = ir.FloatType() if a.bitwidth == 32 else ir.DoubleType()
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ty, [ty, ty]), f"llvm.{name}.f{a.bitwidth}")
            return builder.call(fn, args, fastmath=("reassoc", "nsz"))
        return a(a, b), codegen
    call.__name__ = call.__qualname__ = f"row_{name}"
    return intrinsic(call)


row_maximum = _nsz_extremum("maximum")
row_minimum = _nsz_extremum("minimum")
