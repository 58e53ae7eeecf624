"""Small tensors in compiled loops: static-shape arrays as preallocated buffers.

Every array value computed in a region gets a buffer of its own, allocated once at function
entry and overwritten each time its op runs. Ops write only their own buffer (never an
input, a constant or another op's buffer), and loop state and cond results are copied into
buffers of their own, so an SSA value is never clobbered while it is still needed. Each op
is an explicit loop nest over its static shape, built from the registry's scalar templates
with the same casts as fused kernels (float32 stays float32, int32 wraps). An elementwise
value whose only use is a later elementwise op or reduction of the same shape gets no
buffer: it is computed inside its consumer's loop nest (Newton's `x - (x*x - a) / (2*x)`
is one loop).
"""
import numpy as np

from ..runtime.registry import REGISTRY, ELEMENTWISE
from ..runtime.types import TensorType
from .codegen import np_name, statement
from .fusion import SUPPORTED_DTYPES

# Bigger values run faster as fused kernels and BLAS than as naive loop nests, and their
# buffers would no longer stay in L1 across iterations.
MAX_LOOP_TENSOR_ELEMENTS = 4096

SUPPORTED_TENSOR_OPS = ("elementwise ops (with broadcasting), reduce_sum/prod/max/min/all/any, "
                        "argmax/argmin, matmul, reshape, expand_dims, squeeze, transpose, "
                        "broadcast_to, concat, getitem with ints and static slices, constants "
                        "and nested while/cond")


class NotLowerable(Exception):
    """Why a control-flow region cannot be compiled as one native function."""


def dims_text(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def check_value(v, what):
    """The shape of a numeric or bool tensor value (NotLowerable for anything else)."""
    t = v.type
    if not isinstance(t, TensorType) or t.dtype.name not in SUPPORTED_DTYPES:
        raise NotLowerable(f"{what} '%{v.name}' is {t}, not a numeric or bool tensor")
    return tuple(t.shape)


def static_shape(v, what):
    """The shape of a tensor value a compiled loop computes with: static and small."""
    shape = check_value(v, what)
    if None in shape:
        raise NotLowerable(f"{what} '%{v.name}' has shape {dims_text(shape)}, with dimensions "
                           "unknown while tracing; compiled loops compute only with tensors "
                           "of static shape (call with concrete arrays or give input_signature "
                           "fixed sizes)")
    size = int(np.prod(shape, dtype=np.int64))
    if size > MAX_LOOP_TENSOR_ELEMENTS:
        raise NotLowerable(f"{what} '%{v.name}' has shape {list(shape)} ({size} elements); "
                           f"compiled loops carry tensors of at most {MAX_LOOP_TENSOR_ELEMENTS} "
                           "elements (bigger ones run faster as fused kernels)")
    return shape


def int_text(v):
    """An int literal numba types as the int64 it is (the int64 minimum is not a literal)."""
    v = int(v)
    return f"({v + 1} - 1)" if v == np.iinfo(np.int64).min else str(v)


def literal(value):
    """A typed scalar literal, e.g. `float32(0.5)`, `int32(3)`, `True`."""
    arr = np.asarray(value)
    v = arr.item()
    if arr.dtype.kind == "b":
        return "True" if v else "False"
    if arr.dtype.kind == "f":
        return f"{arr.dtype.name}({_float_text(v)})"
    return f"{arr.dtype.name}({int_text(v)})"


def _float_text(v):
    if v != v:
        return "np.nan"
    if v in (np.inf, -np.inf):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(float(v))


def _identity(kind, dtype):
    t = np_name(dtype)
    if kind in ("reduce_sum", "reduce_prod"):
        return f"{t}({0 if kind == 'reduce_sum' else 1})"
    if kind in ("reduce_all", "reduce_any"):
        return "True" if kind == "reduce_all" else "False"
    big = kind == "reduce_min"
    if dtype.is_floating:
        return f"{t}({'np.inf' if big else '-np.inf'})"
    info = np.iinfo(dtype.np)
    return f"{t}({int_text(info.max if big else info.min)})"


def _update(kind, acc, v, t):
    """`acc` combined with element `v`: max/min propagate NaN like np.max (scalar.max)."""
    return {"reduce_sum": f"{t}({acc} + {v})", "reduce_prod": f"{t}({acc} * {v})",
            "reduce_max": f"max({acc}, {v})", "reduce_min": f"min({acc}, {v})",
            "reduce_all": f"{acc} & {v}", "reduce_any": f"{acc} | {v}"}[kind]


REDUCTION_OPS = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_all",
                 "reduce_any")


def is_elementwise(op):
    opdef = REGISTRY.get(op.type)
    return (opdef is not None and opdef.kind == ELEMENTWISE and bool(opdef.scalar)
            and not opdef.effectful)


class TensorLowering:
    """Mixin for the loop emitter: the ops on array values.

    Needs `emit`, `fresh`, `allocs` (lines run once at function entry), `consts` (module
    lines), `arrays` (name -> shape, for every name bound to an array), `deferred` (name ->
    (op, argument names, location) for values computed where they are used) and `deferrable` (ids of
    the values that may be)."""

    def plan_deferred(self, g):
        """Mark the tensor values of `g` that are computed inside their only consumer."""
        uses = {}
        for op in g.operations:
            for k, v in enumerate(op.inputs):
                uses.setdefault(id(v), []).append((op, k))
        for v in g.outputs:
            uses.setdefault(id(v), []).append((None, None))
        for op in g.operations:
            v = op.outputs[0] if len(op.outputs) == 1 else None
            if v is None or not is_elementwise(op) or v.type.shape == ():
                continue
            found = uses.get(id(v), [])
            if len(found) != 1 or found[0][0] is None:
                continue
            user, k = found[0]
            if user.type in REDUCTION_OPS or (
                    is_elementwise(user) and user.outputs[0].type.shape == v.type.shape
                    and REGISTRY[user.type].scalar.count("{%d}" % k) == 1):
                self.deferrable.add(id(v))

    # -- buffers, loop nests, element references -------------------------------------------
    def buffer(self, v, base="b"):
        """A new buffer for value `v`, allocated at function entry."""
        name = self.fresh(base)
        shape = tuple(v.type.shape)
        self.allocs.append(f"{name} = np.empty({shape!r}, np.{np_name(v.type.dtype)})")
        self.arrays[name] = shape
        self.buffers.append(name)
        return name

    def nest(self, shape, depth):
        """Emit `for` loops over `shape`; returns (index names, depth inside them)."""
        idx = []
        for d in shape:
            i = self.fresh("i")
            self.emit(depth, f"for {i} in range({d}):")
            idx.append(i)
            depth += 1
        return idx, depth

    def at(self, name, idx, shape, depth=None):
        """Element of scalar-or-array `name` at index `idx` of a result of `shape`; a
        deferred value is computed here, in lines emitted at `depth` (inside the loop nest)."""
        if name not in self.arrays:
            return name
        own = self.arrays[name]
        off = len(shape) - len(own)
        parts = ["0" if d == 1 and shape[off + j] != 1 else idx[off + j]
                 for j, d in enumerate(own)]
        if name not in self.deferred:
            return f"{name}[{', '.join(parts)}]"
        op, args, loc = self.deferred[name]
        expr = statement(op, [self.at(a, parts, own, depth) for a in args])
        tmp = self.fresh("e")
        self.emit(depth, f"{tmp} = {expr}  # {op.type} {loc}")
        return tmp

    def copy(self, dst, src, shape, depth, note):
        idx, d = self.nest(shape, depth)
        self.emit(d, f"{dst}[{', '.join(idx)}] = {self.at(src, idx, shape)}  # {note}")

    def operand(self, v, env, what):
        name = env[id(v)]
        if name in self.arrays:
            static_shape(v, what)
        else:
            check_value(v, what)
        return name

    def result(self, op, env, loc):
        """A buffer for op's (single, non-scalar) result, registered in env."""
        out = op.outputs[0]
        static_shape(out, f"{op.type} {loc}: result")
        env[id(out)] = buf = self.buffer(out)
        return buf, tuple(out.type.shape)

    # -- ops --------------------------------------------------------------------------------
    def elementwise(self, op, env, depth, loc):
        args = [self.operand(v, env, f"{op.type} {loc}: input") for v in op.inputs]
        out = op.outputs[0]
        if id(out) in self.deferrable:
            static_shape(out, f"{op.type} {loc}: result")
            env[id(out)] = name = self.fresh("e")
            self.arrays[name] = tuple(out.type.shape)
            self.deferred[name] = (op, args, loc)
            return
        buf, shape = self.result(op, env, loc)
        idx, d = self.nest(shape, depth)
        expr = statement(op, [self.at(a, idx, shape, d) for a in args])
        self.emit(d, f"{buf}[{', '.join(idx)}] = {expr}  # {op.type} {loc}")

    def tensor_constant(self, op, env, loc):
        out = op.outputs[0]
        shape = static_shape(out, f"constant {loc}")
        flat = np.asarray(op.attrs["value"]).ravel()
        if flat.dtype.kind == "f":
            items = [_float_text(v) for v in flat.tolist()]
        elif flat.dtype.kind == "b":
            items = [str(bool(v)) for v in flat.tolist()]
        else:
            items = [int_text(v) for v in flat.tolist()]
        name = self.fresh("K")
        self.consts.append(f"{name} = np.array([{', '.join(items)}], "
                           f"dtype=np.{np_name(out.type.dtype)}).reshape({shape!r})"
                           f"  # constant {loc}")
        self.arrays[name] = shape
        env[id(out)] = name

    def reduction(self, op, env, depth, loc):
        x = op.inputs[0]
        src = self.operand(x, env, f"{op.type} {loc}: input")
        out = op.outputs[0]
        if src not in self.arrays:          # over no axes of a scalar: the value itself
            env[id(out)] = src
            return
        axes, keep = set(op.attrs["axis"]), op.attrs["keepdims"]
        xshape = self.arrays[src]
        t = np_name(out.type.dtype)
        ident = _identity(op.type, out.type.dtype)
        if out.type.shape == ():
            env[id(out)] = acc = self.fresh("t")
            self.emit(depth, f"{acc} = {ident}  # {op.type} {loc}")
        else:
            buf, oshape = self.result(op, env, loc)
            oidx, d = self.nest(oshape, depth)
            self.emit(d, f"{buf}[{', '.join(oidx)}] = {ident}  # {op.type} {loc}: identity")
        idx, d = self.nest(xshape, depth)
        if out.type.shape != ():
            kept = [("0" if a in axes else i) for a, i in enumerate(idx) if keep or a not in axes]
            acc = f"{buf}[{', '.join(kept)}]"
        elem = self.at(src, idx, xshape, d)
        self.emit(d, f"{acc} = {_update(op.type, acc, elem, t)}  # {op.type} {loc}")

    def argreduce(self, op, env, depth, loc):
        src = self.operand(op.inputs[0], env, f"{op.type} {loc}: input")
        axis = op.attrs["axis"]
        xshape = self.arrays[src]
        out = op.outputs[0]
        t = np_name(out.type.dtype)
        cmp = ">" if op.type == "argmax" else "<"
        if out.type.shape == ():
            env[id(out)] = res = self.fresh("t")
            oidx, d = [], depth
        else:
            buf, oshape = self.result(op, env, loc)
            oidx, d = self.nest(oshape, depth)
            res = f"{buf}[{', '.join(oidx)}]"
        best, pos, k = self.fresh("m"), self.fresh("p"), self.fresh("k")

        def elem(i):
            return f"{src}[{', '.join(oidx[:axis] + [i] + oidx[axis:])}]"
        self.emit(d, f"{best} = {elem('0')}  # {op.type} {loc}")
        self.emit(d, f"{pos} = 0")
        self.emit(d, f"for {k} in range(1, {xshape[axis]}):")
        # the first NaN wins, as in np.argmax
        self.emit(d + 1, f"if {elem(k)} {cmp} {best} or ({elem(k)} != {elem(k)} and "
                  f"{best} == {best}):")
        self.emit(d + 2, f"{best} = {elem(k)}")
        self.emit(d + 2, f"{pos} = {k}")
        self.emit(d, f"{res} = {t}({pos})")

    def matmul(self, op, env, depth, loc):
        a, b = (self.operand(v, env, f"matmul {loc}: operand") for v in op.inputs)
        ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
        ashape, bshape = self.arrays[a], self.arrays[b]
        inner = ashape[-2] if ta else ashape[-1]
        buf, shape = self.result(op, env, loc)
        t = np_name(op.outputs[0].type.dtype)
        idx, d = self.nest(shape, depth)
        batch, i, j = idx[:-2], idx[-2], idx[-1]
        acc, k = self.fresh("t"), self.fresh("k")

        def elem(name, own, rows, cols):
            off = len(batch) - (len(own) - 2)
            parts = ["0" if dim == 1 and shape[off + n] != 1 else batch[off + n]
                     for n, dim in enumerate(own[:-2])]
            return f"{name}[{', '.join(parts + [rows, cols])}]"
        lhs = elem(a, ashape, *((k, i) if ta else (i, k)))
        rhs = elem(b, bshape, *((j, k) if tb else (k, j)))
        self.emit(d, f"{acc} = {t}(0)  # matmul {loc}")
        self.emit(d, f"for {k} in range({inner}):")
        self.emit(d + 1, f"{acc} = {t}({acc} + {lhs} * {rhs})")
        self.emit(d, f"{buf}[{', '.join(idx)}] = {acc}")

    def relayout(self, op, env, depth, loc):
        """reshape, expand_dims, squeeze: the same elements in C order, a flat copy."""
        if len(op.inputs) > 1:
            raise NotLowerable(f"{op.type} {loc} takes its shape from a tensor computed at run "
                               "time")
        src = self.operand(op.inputs[0], env, f"{op.type} {loc}: input")
        buf, shape = self.result(op, env, loc)
        size = int(np.prod(shape, dtype=np.int64))
        if src not in self.arrays:
            self.copy(buf, src, shape, depth, f"{op.type} {loc}")
            return
        flat_in, flat_out, k = self.fresh("f"), self.fresh("f"), self.fresh("i")
        self.emit(depth, f"{flat_in} = {src}.reshape(({size},))  # {op.type} {loc}")
        self.emit(depth, f"{flat_out} = {buf}.reshape(({size},))")
        self.emit(depth, f"for {k} in range({size}):")
        self.emit(depth + 1, f"{flat_out}[{k}] = {flat_in}[{k}]")

    def transpose(self, op, env, depth, loc):
        src = self.operand(op.inputs[0], env, f"transpose {loc}: input")
        perm = op.attrs["perm"]
        buf, shape = self.result(op, env, loc)
        idx, d = self.nest(shape, depth)
        src_idx = [idx[list(perm).index(a)] for a in range(len(perm))]
        self.emit(d, f"{buf}[{', '.join(idx)}] = {src}[{', '.join(src_idx)}]  # transpose {loc}")

    def broadcast_to(self, op, env, depth, loc):
        if len(op.inputs) > 1:
            raise NotLowerable(f"broadcast_to {loc} takes its shape from a tensor computed at "
                               "run time")
        src = self.operand(op.inputs[0], env, f"broadcast_to {loc}: input")
        buf, shape = self.result(op, env, loc)
        self.copy(buf, src, shape, depth, f"broadcast_to {loc}")

    def concat(self, op, env, depth, loc):
        names = [self.operand(v, env, f"concat {loc}: input") for v in op.inputs]
        axis = op.attrs["axis"]
        buf, _ = self.result(op, env, loc)
        start = 0
        for name in names:
            own = self.arrays[name]
            idx, d = self.nest(own, depth)
            dst = list(idx)
            dst[axis] = f"{start} + {idx[axis]}" if start else idx[axis]
            self.emit(d, f"{buf}[{', '.join(dst)}] = {name}[{', '.join(idx)}]  # concat {loc}")
            start += own[axis]

    def getitem(self, op, env, depth, loc):
        """x[...] with ints (static or loop counters), static slices and None."""
        arr = env[id(op.inputs[0])]
        if arr not in self.arrays:
            raise NotLowerable(f"getitem {loc} indexes a scalar")
        src_shape = self.arrays[arr]
        parts, out_axis = [], 0     # per source axis: index expression or (start, step, out axis)
        for item in op.attrs["index"]:
            kind, axis = item[0], len(parts)
            if kind == "new":
                out_axis += 1
            elif kind == "int":
                parts.append(self._index(op, env, depth, loc, arr, axis, item[1]))
            elif kind == "slice" and not any(isinstance(c, str) for c in item[1:]):
                parts.append(self._slice(op, loc, src_shape[axis], axis, item[1:], out_axis))
                out_axis += 1
            else:
                raise NotLowerable(f"getitem {loc} uses an index tensor or slice bounds computed "
                                   f"at run time (index {item}); only ints, loop counters and "
                                   "static slices are compiled")
        for axis in range(len(parts), len(src_shape)):
            parts.append(self._slice(op, loc, src_shape[axis], axis, (None, None, None),
                                     out_axis))
            out_axis += 1
        out = op.outputs[0]
        if out.type.shape == ():
            check_value(out, f"getitem {loc}: result")
            env[id(out)] = name = self.fresh()
            self.emit(depth, f"{name} = {arr}[{', '.join(parts)}]  # getitem {loc}")
            return
        buf, shape = self.result(op, env, loc)
        idx, d = self.nest(shape, depth)
        src_idx = [p if isinstance(p, str) else
                   _affine(p[0], p[1], idx[p[2]]) for p in parts]
        self.emit(d, f"{buf}[{', '.join(idx)}] = {arr}[{', '.join(src_idx)}]  # getitem {loc}")

    def _index(self, op, env, depth, loc, arr, axis, v):
        if isinstance(v, str):
            iv = op.inputs[int(v[1:])]
            if iv.type.shape != ():
                raise NotLowerable(f"getitem {loc}: index '%{iv.name}' is not a scalar")
            expr = env[id(iv)]
        elif self.arrays[arr][axis] is not None:
            return str(int(v) % self.arrays[arr][axis])   # in range: checked while tracing
        else:
            expr = str(int(v))
        k = self.fresh("k")
        self.emit(depth, f"{k} = {expr}")
        self.emit(depth, f"if {k} < -{arr}.shape[{axis}] or {k} >= {arr}.shape[{axis}]:")
        self.emit(depth + 1, f"raise IndexError('index out of range in getitem {op.name}')")
        return k

    @staticmethod
    def _slice(op, loc, dim, axis, comps, out_axis):
        if dim is None:
            raise NotLowerable(f"getitem {loc} slices axis {axis}, whose size is unknown while "
                               "tracing")
        start, _, step = slice(*comps).indices(dim)
        return (start, step, out_axis)


def _affine(start, step, i):
    scaled = i if step == 1 else f"{step} * {i}"
    return scaled if start == 0 else f"{start} + {scaled}"


# op type -> TensorLowering method name, for ops that are not elementwise
TENSOR_OPS = {"matmul": "matmul", "reshape": "relayout", "expand_dims": "relayout",
              "squeeze": "relayout", "transpose": "transpose", "broadcast_to": "broadcast_to",
              "concat": "concat", "argmax": "argreduce", "argmin": "argreduce",
              **{k: "reduction" for k in REDUCTION_OPS}}
