"""Ops whose result shape is known only at run time (a graph traced with None dims), on
the device: `broadcast_to` (the seed of a reduction's gradient, zeros_like/ones_like/fill
with a run-time shape, the gradients' broadcasts) and `sum_to_shape` when it has axes to
sum (an unbroadcast found at run time). Shapes are host metadata (the `shape` ops' small
vectors); the data stays on the device.

broadcast_to: one grid-stride kernel, the output's dims and the input's element strides
(0 along broadcast dims) passed as run-time arguments, after merging adjacent dims that
broadcast alike (so ranks up to MAX_RANK after merging); a 1-element input is a fill.
sum_to_shape: the fused-group reduction kernels (lowering.GroupKernel) of a one-op
`reduce_sum(keepdims=True)` group built per (dtype, rank, axes), then a view to the target.
What the device cannot take (a non-contiguous input, a bad shape, more dims) returns None:
the caller runs the numpy rule, which also raises the located error for bad shapes.
"""
import threading

from numba import cuda

from . import codegen, device
from .launch import Launcher

MAX_RANK = 4        # dims after merging; more run the numpy rule on the host


def _broadcast(src, out, d1, d2, d3, s0, s1, s2, s3):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        r = t
        i3 = r % d3
        r //= d3
        i2 = r % d2
        r //= d2
        i1 = r % d1
        i0 = r // d1
        out[t] = src[i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3]


def _fill(src, out):
    v = src[0]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[t] = v


# compiled to PTX in tests/cuda (arguments: two 1-d arrays, then int64s)
KERNEL_SOURCES = {"broadcast": _broadcast, "fill": _fill}
_KERNELS = {name: cuda.jit(fn) for name, fn in KERNEL_SOURCES.items()}
_LAUNCHERS = {}         # (kernel name, blocks, threads, dtype char) -> Launcher
_LOCK = threading.Lock()


def _launch(name, arrays, ints, n):
    threads = min(codegen.THREADS, n)
    blocks = 1 if device.SIMULATED else codegen.blocks_for(n, threads)
    key = (name, blocks, threads, arrays[0].dtype.char)
    run = _LAUNCHERS.get(key)
    if run is None:
        with _LOCK:
            run = _LAUNCHERS.setdefault(key, Launcher(_KERNELS[name], blocks, threads))
    run(arrays, ints, flat=True)


def merged_dims(in_shape, out_shape):
    """(dims, element strides of the input) of a broadcast of a C-contiguous `in_shape` to
    `out_shape`, adjacent dims merged where both broadcast or both do not (size-1 output
    dims dropped); None when `in_shape` does not broadcast to `out_shape`."""
    lead = len(out_shape) - len(in_shape)
    if lead < 0:
        return None
    full = (1,) * lead + tuple(in_shape)
    strides, s = [0] * len(full), 1
    for i in range(len(full) - 1, -1, -1):
        strides[i] = s
        s *= full[i]
    dims, out_strides = [], []
    for d_in, d_out, st in zip(full, out_shape, strides):
        if d_in != d_out and d_in != 1:
            return None
        if d_out == 1:
            continue
        st = 0 if d_in == 1 else st
        if dims and (out_strides[-1] == 0) == (st == 0) and (
                st == 0 or out_strides[-1] == st * d_out):
            dims[-1] *= d_out
            out_strides[-1] = st
        else:
            dims.append(d_out)
            out_strides.append(st)
    return dims, out_strides


def broadcast(x, target, alloc):
    """Device array `x` broadcast to shape `target` (a new array from `alloc(0, shape,
    dtype)`), or None when the device cannot (the caller runs the numpy rule)."""
    target = tuple(int(d) for d in target)
    if not x.is_c_contiguous():
        return None
    m = merged_dims(x.shape, target)
    if m is None or len(m[0]) > MAX_RANK:
        return None
    dims, strides = m
    out = alloc(0, target, x.dtype)
    n = out.size
    if n == 0:
        return out
    if x.size == 1:
        _launch("fill", [x, out], (), n)
        return out
    pad = MAX_RANK - len(dims)
    dims, strides = [1] * pad + dims, [0] * pad + strides
    _launch("broadcast", [x, out], (*dims[1:], *strides), n)
    return out


# -- sum_to_shape ---------------------------------------------------------------------------

_SUMS = {}          # (dtype name, rank, axes) -> GroupKernel
SUM_DTYPES = ("float32", "float64", "int32", "int64")


def sum_axes(shape, target):
    """The axes `sum_to_shape` sums `shape` over to reach `target` (its numpy rule's), or
    None when the rule would not give `target` (a mismatch: the rule decides)."""
    lead = len(shape) - len(target)
    if lead < 0:
        return None
    for i, d in enumerate(target):
        if d != 1 and shape[lead + i] != d:
            return None
    return tuple(range(lead)) + tuple(lead + i for i, d in enumerate(target)
                                      if d == 1 and shape[lead + i] != 1)


def sum_to(x, target, axes, alloc):
    """(`x` summed over `axes` (keepdims) seen as `target`, the summed array it views), or
    None when the device cannot (another dtype). An empty `x` runs the numpy rule inside
    the group kernel (its result uploaded)."""
    if x.dtype.name not in SUM_DTYPES:
        return None
    r = _sum_kernel(x.dtype.name, x.ndim, axes)([x], alloc=alloc)[0]
    v = device.view(r, target)
    return None if v is None else (v, r)


def _sum_kernel(dtype, rank, axes):
    key = (dtype, rank, axes)
    k = _SUMS.get(key)
    if k is None:
        with _LOCK:
            k = _SUMS.get(key)
            if k is None:
                k = _SUMS[key] = _build_sum(dtype, rank, axes)
    return k


def _build_sum(dtype, rank, axes):
    """A GroupKernel for one `reduce_sum(x, axis=axes, keepdims=True)` of a rank-`rank`
    `dtype` input of unknown dims, built as fuse() would group it in a traced graph."""
    from ... import dtypes as _dt
    from ...runtime.graph import Graph
    from ...runtime.types import TensorType
    from ..fusion import fuse
    from .lowering import lower_group
    dt = _dt.as_dtype(dtype)
    g = Graph("sum_to_shape")
    x = g.add_input(TensorType(dt, (None,) * rank), "x")
    out_shape = tuple(1 if a in axes else None for a in range(rank))
    op = g.add_op("reduce_sum", [x], {"axis": tuple(axes), "keepdims": True},
                  [TensorType(dt, out_shape)])
    g.outputs = list(op.outputs)
    (kind, group), = fuse(g)
    assert kind == "group", kind
    return lower_group(group)


# -- the plan's steps (backend.Plan: "mixed" steps, given the Env) --------------------------

def _target(env, ins, op):
    """The run-time shape: the op's shape vector (host metadata), else its static attr."""
    if len(ins) > 1:
        return tuple(int(d) for d in env.host(ins[1]))
    return tuple(op.attrs["shape"])


def broadcast_step(plan, op, rec):
    """broadcast_to: a kernel on the device copy of its input (a constant's is uploaded once
    per plan); the numpy rule on the host where the kernel cannot take it."""
    from .records import STATS

    def run(env, ins, outs):
        r = broadcast(env.device(ins[0]), _target(env, ins, op), env.allocator(outs))
        if r is None:
            rec.path, rec.why = "fallback", ("last run: a non-contiguous input, a shape it "
                                             "cannot take, or more than "
                                             f"{MAX_RANK} dims after merging")
            return plan._fallback(env, plan.rule(op), ins, outs, op)
        rec.path, rec.why = "kernel", "shaped.broadcast (run-time shape: no host copy)"
        STATS.add("kernels")
        env.put(outs[0], r)
    return run


def sum_to_shape_step(plan, op, rec):
    """sum_to_shape: its input itself when there is nothing to sum, else a reduction
    kernel and a view; the numpy rule on the host for what the device cannot take."""
    from .records import STATS

    def run(env, ins, outs):
        x = env.any(ins[0])
        target = _target(env, ins, op)
        if device.is_device(x):
            axes = sum_axes(tuple(x.shape), target)
            if axes == ():
                STATS.add("device_ops")
                return env.put(outs[0], x)      # nothing to sum: x itself, no copy
            r = None if axes is None else sum_to(x, target, axes, env.allocator(outs))
            if r is not None:
                STATS.add("kernels")
                return env.put_view(outs[0], *r)
        rec.why = "last run: its input was on the host, or a shape the rule decides"
        plan._fallback(env, plan.rule(op), ins, outs, op)
    return run
