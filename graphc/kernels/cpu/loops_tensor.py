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

from ...runtime.registry import REGISTRY, ELEMENTWISE
from ...runtime.types import TensorType
from ..expr import identity, int_op, np_name, statement
from ..fusion import SUPPORTED_DTYPES

# Bigger values run faster as fused kernels and BLAS than as naive loop nests, and their
# buffers would no longer stay in L1 across iterations.
MAX_LOOP_TENSOR_ELEMENTS = 4096

SUPPORTED_TENSOR_OPS = ("elementwise ops (with broadcasting), reduce_sum/prod/max/min/all/any, "
                        "argmax/argmin, cumsum/cumprod, matmul, reshape, expand_dims, squeeze, "
                        "transpose, broadcast_to, concat, unstack, tile, gather, getitem with "
                        "ints, static slices and an index tensor, constants and nested "
                        "while/cond")


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
    ident = identity(kind, dtype)
    return ident if kind in ("reduce_all", "reduce_any") else f"{np_name(dtype)}({ident})"


def _arith(kind, a, b, t):
    """`a + b` or `a * b` (kind: add, multiply) in numpy type `t`; integers wrap."""
    if t.startswith("int"):
        return int_op(kind, a, b, t)
    return f"{t}({a} {'+' if kind == 'add' else '*'} {b})"


def _update(kind, acc, v, t):
    """`acc` combined with element `v`: max/min propagate NaN like np.max (scalar.max)."""
    return {"reduce_sum": _arith("add", acc, v, t), "reduce_prod": _arith("multiply", acc, v, t),
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
    lines), `arrays` (name -> shape, for every name bound to an array), `buffers` (the
    buffer names, in order), `deferred` (name -> (op, argument names, location) for values
    computed where they are used) and `deferrable` (ids of the values that may be)."""

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
        """Emit `for` loops over `shape` (none for a size-1 dim: its index is 0); returns
        (index expressions, depth inside the loops)."""
        idx = []
        for d in shape:
            if d == 1:
                idx.append("0")
                continue
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
        # a NaN never wins, as in TF (the numpy rule reads NaN as -inf for argmax, +inf for
        # argmin): the strict compare keeps the first of equal values
        floating = op.inputs[0].type.dtype.is_floating
        worst = f"{np_name(op.inputs[0].type.dtype)}({'-' if cmp == '>' else ''}np.inf)"
        v = self.fresh("v")
        self.emit(d, f"{best} = {elem('0')}  # {op.type} {loc}")
        if floating:
            self.emit(d, f"{best} = {best} if {best} == {best} else {worst}")
        self.emit(d, f"{pos} = 0")
        self.emit(d, f"for {k} in range(1, {xshape[axis]}):")
        self.emit(d + 1, f"{v} = {elem(k)}")
        self.emit(d + 1, f"if {v} {cmp} {best}:")
        self.emit(d + 2, f"{best} = {v}")
        self.emit(d + 2, f"{pos} = {k}")
        self.emit(d, f"{res} = {t}({pos})")

    def cumulative(self, op, env, depth, loc):
        """cumsum and cumprod: a running sum / product along `axis`."""
        src = self.operand(op.inputs[0], env, f"{op.type} {loc}: input")
        axis, exclusive, reverse = (op.attrs[k] for k in ("axis", "exclusive", "reverse"))
        buf, shape = self.result(op, env, loc)
        t = np_name(op.outputs[0].type.dtype)
        idx, d = self.nest(shape[:axis] + shape[axis + 1:], depth)
        acc, k = self.fresh("t"), self.fresh("k")
        at = ", ".join(idx[:axis] + [k] + idx[axis:])
        start, kind = (0, "add") if op.type == "cumsum" else (1, "multiply")
        self.emit(d, f"{acc} = {t}({start})  # {op.type} {loc}")
        n = shape[axis]
        self.emit(d, f"for {k} in " + (f"range({n} - 1, -1, -1):" if reverse else f"range({n}):"))
        add = f"{acc} = {_arith(kind, acc, f'{src}[{at}]', t)}"
        store = f"{buf}[{at}] = {acc}"
        for line in ((store, add) if exclusive else (add, store)):
            self.emit(d + 1, line)

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
        self.emit(d + 1, f"{acc} = {_arith('add', acc, _arith('multiply', lhs, rhs, t), t)}")
        self.emit(d, f"{buf}[{', '.join(idx)}] = {acc}")


# op type -> emitter method name (here or in loops_shape.ShapeLowering), for ops that are
# not elementwise; getitem, constant, while and cond are dispatched by the emitter itself
TENSOR_OPS = {"matmul": "matmul", "argmax": "argreduce", "argmin": "argreduce",
              "cumsum": "cumulative", "cumprod": "cumulative",
              **{k: "reduction" for k in REDUCTION_OPS},
              "reshape": "relayout", "expand_dims": "relayout", "squeeze": "relayout",
              "transpose": "transpose", "broadcast_to": "broadcast_to", "concat": "concat",
              "unstack": "unstack", "tile": "tile", "gather": "gather"}
