"""The parallel variant of a generated kernel: the serial one's machine code, run on blocks.

numba compiles a `prange` loop by outlining its body into a new function and running the
whole pipeline on it again (type inference, parfor analysis, LLVM at O3, machine code), and
a callee it links in is optimized and compiled again inside every caller: for kernels of
hundreds of lines of inlined vector math the prange variant cost more than the serial one
(layernorm 8192x512: 0.7 s serial, 2.1 s prange, cold), and even an empty prange loop costs
~0.5 s of parfor machinery. So the serial kernel takes a range of outer iterations,
`[outer_lo, outer_hi)`, and the parallel variant is a plain function that hands one worker
per thread to numba's thread pool (`numba_parallel_for`, what a prange loop calls) with a
small trampoline; each worker takes pieces of the outer range (CHUNKS per worker) from a
shared counter and calls the serial kernel's machine code on them through its address.
The address is an argument the runner passes (`serial_address`), so nothing is baked in
and both variants stay in the disk cache.
"""
import re

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.callconv import excinfo_t
from numba.extending import intrinsic

ALL = 1 << 62       # `outer_hi` for a call over the whole outer range
RANGE_TYPES = (types.int64, types.int64)      # a serial variant's outer_lo, outer_hi
ADDRESS_TYPE = types.int64                     # a parallel variant's last argument
_OUTER = re.compile(r"in RANGE0\((.*)\):\s*(#.*)?$")
# or a body that takes its outer iterations as bounds: `lo, hi = BOUNDS0(count)`
_BOUNDS = re.compile(r"= BOUNDS0\((.*)\)\s*(#.*)?$")


def _outer_count(body):
    """The expression counting the outer iterations (the RANGE0 loop or BOUNDS0), or None."""
    for line in body:
        m = _OUTER.search(line) or _BOUNDS.search(line)
        if m:
            return m.group(1)
    return None


def serial_source(name, params, body):
    """Lines of the serial kernel: `body` over outer iterations [outer_lo, outer_hi) (the
    whole range with 0, ALL), returning int64."""
    outer = _outer_count(body)
    lines = [f"def {name}({params}, outer_lo, outer_hi):"]
    for ln in body:
        if outer is not None and f"RANGE0({outer})" in ln:
            ln = ln.replace(f"RANGE0({outer})", f"range(outer_lo, imin(outer_hi, {outer}))")
        if outer is not None and f"BOUNDS0({outer})" in ln:
            ln = ln.replace(f"BOUNDS0({outer})", f"outer_lo, imin(outer_hi, {outer})")
        lines.append("    " + ln)
    if not body[-1].startswith("return "):
        lines.append("    return 0")
    return lines + [""]


def parallel_source(name, spec, body):
    """Lines of the parallel variant of `name`: `run_blocks` over its outer iterations."""
    g = spec.group
    ins = "".join(f"in{k}, " for k in range(len(g.inputs)))
    outs = "".join(f"out{k}, " for k in range(len(g.outputs)))
    dims = "".join(f"d{a}, " for a in range(spec.rank))
    params = f"{ins}{outs}{dims}".rstrip(", ")
    outer = _outer_count(body) or "1"      # every axis reduced: one block, the whole range
    return [f"def {name}_par({params}, serial):",
            f"    return run_blocks(serial, ({ins}), ({outs}), ({dims}), np.int64({outer}))",
            ""]


def _reload():
    """Registers the threading layer's symbols with LLVM (and starts its pool): before a
    parallel variant is compiled, and when one is loaded from the disk cache."""
    from numba.np.ufunc.parallel import _launch_threads
    _launch_threads()


@intrinsic
def run_blocks(typingctx, address, inputs, outputs, ints, outer):
    """Call the serial kernel at machine-code `address` on (*inputs, *outputs, *ints, lo,
    hi) for `min(outer, threads)` blocks [lo, hi) of the outer range at once, on numba's
    thread pool with the GIL released (as a prange loop runs); returns the sum of the
    blocks' int64 results. An exception raised in a block propagates after the region."""
    if not isinstance(address, types.Integer) or not isinstance(outer, types.Integer):
        return None
    _reload()
    argtys = [*inputs, *outputs, *ints, *RANGE_TYPES]

    def codegen(context, builder, signature, args):
        context.active_code_library._reload_init.add(_reload)
        address_v, ins_v, outs_v, ints_v, outer_v = args
        values = [builder.extract_value(v, k) for v, tup in
                  ((ins_v, inputs), (outs_v, outputs), (ints_v, ints)) for k in range(len(tup))]
        i64 = ir.IntType(64)
        threads = builder.sext(builder.call(cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(32), []), "get_num_threads"), []), i64)
        nb = builder.select(builder.icmp_signed("<", outer_v, threads), outer_v, threads)
        nb = builder.select(builder.icmp_signed(">", nb, i64(0)), nb, i64(0))
        # CHUNKS pieces per worker (one piece alone), taken from a shared counter
        pieces = builder.mul(nb, i64(CHUNKS))
        pieces = builder.select(builder.icmp_signed("<", outer_v, pieces), outer_v, pieces)
        pieces = builder.select(builder.icmp_signed(">", nb, i64(1)), pieces, nb)
        # the packed arguments: address, kernel arguments, then counter, outer, pieces
        packed_t = ir.LiteralStructType([address_v.type] + [v.type for v in values] +
                                        [i64] * 3)
        packed = cgutils.alloca_once(builder, packed_t, name="kernel_args")
        for k, v in enumerate([address_v] + values + [i64(0), outer_v, pieces]):
            builder.store(v, cgutils.gep_inbounds(builder, packed, 0, k))
        blocks = builder.alloca(_BLOCK, size=nb, name="blocks")
        tramp = _trampoline(context, builder.module, packed_t, argtys)
        _parallel_for(context, builder, tramp, blocks, nb, packed, threads)
        total = cgutils.alloca_once_value(builder, i64(0))
        with cgutils.for_range(builder, nb) as loop:
            blk = builder.gep(blocks, [loop.index])
            code = builder.load(cgutils.gep_inbounds(builder, blk, 0, 3))
            exc = builder.load(cgutils.gep_inbounds(builder, blk, 0, 4))
            status = context.call_conv._get_return_status(builder, code, exc)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            part = builder.load(cgutils.gep_inbounds(builder, blk, 0, 2))
            builder.store(builder.add(builder.load(total), part), total)
        return builder.load(total)
    return types.int64(address, inputs, outputs, ints, outer), codegen


# Pieces of the outer range per worker of a parallel region. Workers take pieces from a
# shared counter as they finish the last, so one that the OS has descheduled (another
# process on its core) holds back at most the piece it is on, not a whole thread's share.
CHUNKS = 4

# one worker of a region: (unused) lo, hi, the sum of its pieces' results, the status code
# and exception of a piece that failed (the worker stops there)
_BLOCK = ir.LiteralStructType([ir.IntType(64)] * 3 + [ir.IntType(32),
                                                      ir.PointerType(excinfo_t)])
_BYTES = ir.PointerType(ir.IntType(8))


def _trampoline(context, module, packed_t, argtys):
    """`void f(char **args, intp *dims, intp *steps, void *data)`, the gufunc-style function
    numba's parallel_for calls with a run of dims[0] workers from args[0] (`steps[0]` bytes
    apart): each worker takes pieces [c * outer / pieces, (c + 1) * outer / pieces) of the
    outer range, c from the counter in `data` (after the kernel's address and arguments),
    and runs the serial kernel on each until none is left or one fails."""
    intp = context.get_value_type(types.intp)
    i64 = ir.IntType(64)
    fnty = ir.FunctionType(ir.VoidType(), [ir.PointerType(_BYTES), ir.PointerType(intp),
                                           ir.PointerType(intp), _BYTES])
    fn = ir.Function(module, fnty, name=module.get_unique_name("graphc_kernel_blocks"))
    fn.linkage = "internal"
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    args, dims, steps, data = fn.args
    base, step = builder.load(args), builder.load(steps)
    packed = builder.bitcast(data, ir.PointerType(packed_t))
    n = len(packed_t.elements)
    fields = [builder.load(cgutils.gep_inbounds(builder, packed, 0, k)) for k in range(n - 3)]
    counter = cgutils.gep_inbounds(builder, packed, 0, n - 3)
    outer = builder.load(cgutils.gep_inbounds(builder, packed, 0, n - 2))
    pieces = builder.load(cgutils.gep_inbounds(builder, packed, 0, n - 1))
    with cgutils.for_range(builder, builder.load(dims)) as loop:
        blk = builder.bitcast(builder.gep(base, [builder.mul(loop.index, step)]),
                              ir.PointerType(_BLOCK))
        res_p = cgutils.gep_inbounds(builder, blk, 0, 2)
        code_p = cgutils.gep_inbounds(builder, blk, 0, 3)
        exc_p = cgutils.gep_inbounds(builder, blk, 0, 4)
        builder.store(i64(0), res_p)
        builder.store(ir.Constant(ir.IntType(32), 0), code_p)
        builder.store(ir.Constant(exc_p.type.pointee, None), exc_p)
        take = builder.append_basic_block("take")
        run = builder.append_basic_block("run")
        done = builder.append_basic_block("done")
        builder.branch(take)
        builder.position_at_end(take)
        c = builder.atomic_rmw("add", counter, i64(1), "monotonic")
        builder.cbranch(builder.icmp_signed("<", c, pieces), run, done)
        builder.position_at_end(run)
        lo = builder.sdiv(builder.mul(c, outer), pieces)
        hi = builder.sdiv(builder.mul(builder.add(c, i64(1)), outer), pieces)
        code, exc, res = _call(context, builder, fields[0], argtys, fields[1:] + [lo, hi])
        builder.store(builder.add(builder.load(res_p), res), res_p)
        builder.store(code, code_p)
        builder.store(exc, exc_p)
        builder.cbranch(builder.icmp_signed("==", code, ir.Constant(code.type, 0)), take, done)
        builder.position_at_end(done)
    builder.ret_void()
    return fn


def _parallel_for(context, builder, tramp, blocks, nb, packed, threads):
    """numba_parallel_for(tramp, [blocks], [nb], [sizeof block], packed, 0, 1, threads),
    with the GIL released around it as numba's own parallel gufunc wrapper does."""
    intp = context.get_value_type(types.intp)
    fnty = ir.FunctionType(ir.VoidType(), [_BYTES] * 5 + [intp] * 3)
    parallel_for = cgutils.get_or_insert_function(builder.module, fnty, "numba_parallel_for")
    arg = cgutils.alloca_once(builder, _BYTES)
    builder.store(builder.bitcast(blocks, _BYTES), arg)
    dim = cgutils.alloca_once_value(builder, nb)
    step = cgutils.alloca_once_value(builder, intp(context.get_abi_sizeof(_BLOCK)))
    pyapi = context.get_python_api(builder)
    gil = pyapi.gil_ensure()
    saved = pyapi.save_thread()
    builder.call(parallel_for, [builder.bitcast(tramp, _BYTES), builder.bitcast(arg, _BYTES),
                                builder.bitcast(dim, _BYTES), builder.bitcast(step, _BYTES),
                                builder.bitcast(packed, _BYTES), intp(0), intp(1), threads])
    pyapi.restore_thread(saved)
    pyapi.gil_release(gil)


def _call(context, builder, address, argtys, values):
    """numba's CPUCallConv.call_function through a function pointer: (status code, exception
    info, int64 result)."""
    cc = context.call_conv
    fnty = cc.get_function_type(types.int64, argtys)
    fn = builder.inttoptr(address, fnty.as_pointer())
    retty = cc.get_return_type(types.int64).pointee
    retval = cgutils.alloca_once(builder, retty)
    builder.store(cgutils.get_null_value(retty), retval)
    excinfo = cgutils.alloca_once(builder, ir.PointerType(excinfo_t), name="excinfo")
    builder.store(cgutils.get_null_value(ir.PointerType(excinfo_t)), excinfo)
    packed = list(cc._get_arg_packer(argtys).as_arguments(builder, values))
    code = builder.call(fn, [retval, excinfo] + packed)
    res = context.get_returned_value(builder, types.int64, builder.load(retval))
    return code, builder.load(excinfo), res


def arg_types(args):
    """The numba types of a kernel call's arguments, as numba's typeof gives them (its
    Python path: dtype, rank, layout, read-only), without importing numpy.ma into a call."""
    from numba.np.numpy_support import from_dtype, map_layout
    return tuple(types.Array(from_dtype(a.dtype), a.ndim, map_layout(a),
                             readonly=not a.flags.writeable)
                 if isinstance(a, np.ndarray) else types.int64 for a in args)


def serial_address(dispatcher, signature):
    """The machine-code address of `dispatcher` (a serial kernel) compiled for `signature`
    (numba types, ending with outer_lo, outer_hi), compiling it first if needed."""
    cres = dispatcher.overloads.get(signature)
    if cres is None:
        dispatcher.compile(signature)
        cres = dispatcher.overloads[signature]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
