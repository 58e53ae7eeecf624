"""Shape ops: reshape, transpose, expand/squeeze, concat/stack/unstack, gather, broadcast, tile.

Shape arguments may mix Python ints and scalar int tensors (e.g. `[gc.shape(x)[0], -1]`):
the static part is kept as a template attr (None where a tensor decides), and the full
shape flows in as an int32 vector input, so static shapes stay as precise as possible.
"""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..dispatch import bind, constant, convert_like, convert_to_tensor
from ..registry import register, SHAPE, OPAQUE
from ..static_value import static_value
from ..tensor import OPS, Tensor
from ._rules import INTEGER, _dims, check_kind, same_dtype, tensor
from .reduce import static_int, static_ints, normalize_axis, normalize_axes, run_checked


def _prod(dims):
    return int(np.prod(dims, dtype=np.int64))


def _shape_arg(op, shape, allow_minus_one=False):
    """A shape argument -> (template of int|None, int32 shape tensor or None when static)."""
    known = static_value(shape) if type(shape) is Tensor and shape.ndim == 1 else None
    if known is not None:
        shape = known.tolist()      # concrete, or known while tracing: static dims
    if isinstance(shape, np.ndarray):       # tf.reshape(x, np.array([3, 2])) works too
        shape = shape.tolist()
    if type(shape) is Tensor:
        check_kind(op, shape.type, INTEGER, "shape")
        if shape.ndim != 1 or shape.shape[0] is None:
            raise ValueError(f"{op}: a shape tensor must be 1-D with a static length, "
                             f"got {shape.type}")
        return (None,) * shape.shape[0], shape
    items = [shape] if not isinstance(shape, (list, tuple)) else list(shape)
    template, parts = [], []
    for d in items:
        if type(d) is Tensor and d.is_symbolic:
            check_kind(op, d.type, INTEGER, "shape entry")
            if d.ndim != 0:
                raise ValueError(f"{op}: shape entries must be scalars, got {d.type}")
            template.append(None)
        else:
            try:
                v = static_int(op, d, "a shape entry")
            except TypeError:
                raise TypeError(f"{op}: shape must be a list of ints or an int tensor, "
                                f"got {shape!r}") from None
            if v < -1 or (v == -1 and not allow_minus_one):
                raise ValueError(f"{op}: shape {items!r} has a negative dimension")
            template.append(v)
            d = v
        parts.append(d)
    if template.count(-1) > 1:
        raise ValueError(f"{op}: at most one -1 is allowed in shape {items!r}")
    if None not in template:
        return tuple(template), None
    from .elementwise import cast
    return tuple(template), _pack(parts, cast)


def _pack(parts, cast):
    pieces = [bind("expand_dims", cast(p, _dt.int32) if type(p) is Tensor
                   else constant(p, _dt.int32), axis=0) for p in parts]
    return pieces[0] if len(pieces) == 1 else bind("concat", *pieces, axis=0)


def _check_shape_input(op, types, template):
    if len(types) == 2:
        s = types[1]
        check_kind(op, s, INTEGER, "shape")
        if s.shape != (len(template),):
            raise ValueError(f"{op}: shape tensor {s} does not match the template "
                             f"{_dims(template)}")


# -- reshape ---------------------------------------------------------------------------
def _reshape_problem(dims, shape):
    """Why a tensor of static `dims` cannot take `shape` (one -1 allowed), or None."""
    n = _prod(dims)
    what = f"reshape: cannot reshape a tensor of shape {_dims(dims)} ({n} elements) into " \
           f"shape {_dims(shape)}"
    if -1 in shape:
        p, m = _minus_one_terms(dims, shape)
        if p == 0 or m % p:
            return f"{what}: {m} is not a multiple of {p}"
        full = [m // p if d == -1 else d for d in shape]
        if _prod(full) != n:
            return f"{what} ({_prod(full)} elements)"
    elif _prod(shape) != n:
        return f"{what} ({_prod(shape)} elements)"
    return None


def _minus_one_terms(dims, shape):
    """TF's rule for the -1 of a reshape, as (divisor, dividend): with a 0 among the given
    sizes, zeros are left out of both products (tf.reshape(zeros([0, 3]), [0, -1]) is
    [0, 3]); otherwise the -1 is the element count over the product of the given sizes."""
    sizes = [d for d in shape if d != -1]
    if 0 in sizes:
        return _prod([d for d in sizes if d]), _prod([d for d in dims if d])
    return _prod(sizes), _prod(dims)


def _minus_one(dims, shape):
    p, m = _minus_one_terms(dims, shape)
    return m // p


def _reshape_infer(types, shape):
    x = types[0]
    _check_shape_input("reshape", types, shape)
    out = list(shape)
    known = None not in x.shape
    if -1 in out:
        i = out.index(-1)
        rest = out[:i] + out[i + 1:]
        out[i] = None
        if known and None not in rest:
            problem = _reshape_problem(x.shape, shape)
            if problem:
                raise ValueError(problem)
            out[i] = _minus_one(x.shape, shape)
    elif known and None not in out and _reshape_problem(x.shape, shape):
        raise ValueError(_reshape_problem(x.shape, shape))
    return [tensor(x.dtype, tuple(out))]


def _reshape_impl(x, *dynamic, shape):
    target = tuple(int(d) for d in dynamic[0]) if dynamic else shape
    problem = _reshape_problem(np.shape(x), target)
    if problem:       # shapes known only at run time: the same words as at trace time
        raise InvalidArgumentError(problem)
    if -1 in target:  # numpy cannot infer a -1 beside a 0: TF's rule gives its size
        target = tuple(_minus_one(np.shape(x), target) if d == -1 else d for d in target)
    return np.reshape(x, target)


def _reshape_like(g, x):
    """Gradient rules: `g` reshaped to the (possibly dynamic) shape of `x`."""
    if None not in x.shape:
        return bind("reshape", g, shape=tuple(x.shape))
    return bind("reshape", g, bind("shape", x, out_type=_dt.int32), shape=tuple(x.shape))


register("reshape", _reshape_infer, run_checked("reshape", _reshape_impl), kind=SHAPE,
         vjp=lambda gs, outs, ins, shape: [_reshape_like(gs[0], ins[0]), None])


def reshape(tensor, shape, name=None):
    """`tensor` with a new shape of the same size; one dimension may be -1 (inferred).

    `shape` may be a list of ints, an int tensor, or a list mixing ints and scalar tensors.
    """
    x = convert_to_tensor(tensor)
    template, vec = _shape_arg("reshape", shape, allow_minus_one=True)
    return bind("reshape", x, *([vec] if vec is not None else []), shape=template)


# -- transpose / expand_dims / squeeze -------------------------------------------------
def _transpose_infer(types, perm):
    x = types[0]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm {list(perm)} is not a permutation of the "
                         f"{x.ndim} axes of a tensor of shape {_dims(x.shape)}")
    return [tensor(x.dtype, tuple(x.shape[p] for p in perm))]


register("transpose", _transpose_infer, lambda x, perm: np.transpose(x, perm), kind=SHAPE,
         vjp=lambda gs, outs, ins, perm: [bind("transpose", gs[0],
                                               perm=tuple(int(i) for i in np.argsort(perm)))])


def transpose(a, perm=None, name=None):
    """Permute the axes of `a` (reversed when `perm` is None)."""
    x = convert_to_tensor(a)
    if perm is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        perm = tuple(static_ints("transpose", perm, "perm"))
        perm = tuple(p + x.ndim if -x.ndim <= p < 0 else p for p in perm)
    return bind("transpose", x, perm=perm)


def _expand_infer(types, axis):
    x = types[0]
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"expand_dims: axis {axis} is out of range for shape {_dims(x.shape)}")
    return [tensor(x.dtype, x.shape[:axis] + (1,) + x.shape[axis:])]


def _expand_impl(x, axis):
    x = np.asarray(x)
    return x.reshape(x.shape[:axis] + (1,) + x.shape[axis:])   # np.expand_dims: ~2 us more


register("expand_dims", _expand_infer, _expand_impl, kind=SHAPE,
         vjp=lambda gs, outs, ins, axis: [bind("squeeze", gs[0], axis=(axis,))])


def expand_dims(input, axis, name=None):
    """Insert a size-1 axis at `axis` (in [-rank-1, rank])."""
    x = convert_to_tensor(input)
    if isinstance(axis, (list, tuple, np.ndarray)) and np.size(axis) == 1 or \
            type(axis) is Tensor and axis.ndim == 1 and axis.shape[0] == 1:
        axis = static_ints("expand_dims", axis)[0]   # TF takes a one-element axis list too
    return bind("expand_dims", x, axis=normalize_axis("expand_dims", axis, x.ndim + 1))


def _squeeze_infer(types, axis):
    x = types[0]
    for a in axis:
        if not 0 <= a < x.ndim or x.shape[a] not in (1, None):
            raise ValueError(f"squeeze: cannot squeeze axis {a} of a tensor of shape "
                             f"{_dims(x.shape)}: its size is not 1")
    return [tensor(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axis))]


def _squeeze_impl(x, axis):
    for a in axis:
        if x.shape[a] != 1:
            raise InvalidArgumentError(f"squeeze: axis {a} of shape {list(x.shape)} is not 1")
    return np.squeeze(x, axis)


register("squeeze", _squeeze_infer, _squeeze_impl, kind=SHAPE,
         vjp=lambda gs, outs, ins, axis: [_reshape_like(gs[0], ins[0])])


def squeeze(input, axis=None, name=None):
    """Remove size-1 axes: all of them when `axis` is None, else the given ones."""
    x = convert_to_tensor(input)
    if isinstance(axis, (list, tuple)) and not axis:
        axis = None                          # TF: squeeze(x, []) squeezes every size-1 axis
    if axis is None:
        if None in x.shape:
            raise ValueError(f"squeeze: shape {_dims(x.shape)} has unknown dimensions, so which "
                             "axes have size 1 is not known while tracing; pass axis=...")
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:       # as TF, an axis named twice ([0, 0] or [0, -2]) is squeezed once
        items = static_ints("squeeze", axis) if isinstance(axis, (list, tuple, np.ndarray)) \
            or type(axis) is Tensor and axis.ndim == 1 else [axis]
        axes = tuple(sorted({normalize_axis("squeeze", a, x.ndim) for a in items}))
    return bind("squeeze", x, axis=axes)


# -- concat / stack / unstack ----------------------------------------------------------
def _concat_infer(types, axis):
    dtype = same_dtype("concat", types)
    first = types[0]
    if first.ndim == 0 or not 0 <= axis < first.ndim:
        raise ValueError(f"concat: axis {axis} is out of range for shape {_dims(first.shape)}")
    out = list(first.shape)
    for t in types[1:]:
        bad = t.ndim != first.ndim or any(
            i != axis and a is not None and b is not None and a != b
            for i, (a, b) in enumerate(zip(first.shape, t.shape)))
        if bad:
            shown = ", ".join(_dims(u.shape) for u in types)
            raise ValueError(f"concat: shapes {shown} must match except along axis {axis}")
        for i, d in enumerate(t.shape):
            if i != axis and out[i] is None:
                out[i] = d
    sizes = [t.shape[axis] for t in types]
    out[axis] = None if None in sizes else sum(sizes)
    return [tensor(dtype, tuple(out))]


def _concat_vjp(gs, outs, ins, axis):
    """Each input's gradient is its slice of `g` along `axis`."""
    grads, start = [], 0
    for x in ins:
        stop = start + (x.shape[axis] if x.shape[axis] is not None else shape(x)[axis])
        grads.append(gs[0][(slice(None),) * axis + (slice(start, stop),)])
        start = stop
    return grads


register("concat", _concat_infer,
         run_checked("concat", lambda *xs, axis: np.concatenate(xs, axis)), kind=SHAPE,
         vjp=_concat_vjp)


def concat(values, axis, name=None):
    """Join tensors along an existing `axis`; other dimensions must match."""
    if not isinstance(values, (list, tuple)):
        values = [values]                    # as TF: one tensor is concat of itself
    xs = convert_like(list(values), "concat")
    if not xs:
        raise ValueError("concat: needs at least one tensor")
    rank = xs[0].ndim
    if rank == 0:
        raise ValueError("concat: cannot concatenate scalars; use gc.stack")
    return bind("concat", *xs, axis=normalize_axis("concat", axis, rank))


def stack(values, axis=0, name=None):
    """Join same-shaped tensors along a new `axis` (a composite of expand_dims and concat)."""
    values = list(values)
    if values and all(isinstance(v, (int, float, bool)) for v in values):
        # as TF, Python numbers alone are converted together: stack([1, 2.5]) is float32
        values = [constant(v, convert_to_tensor(values).dtype) for v in values]
    xs = convert_like(values, "stack")
    if not xs:      # TF: stack([]) is an empty float32 vector (other axes fail in TF too)
        if static_int("stack", axis) not in (0, -1):
            raise ValueError(f"stack: axis {axis} is out of range for stacking no tensors "
                             "(the result is a float32 vector of size 0)")
        return constant(np.zeros(0, np.float32))
    first = xs[0]
    same_dtype("stack", [x.type for x in xs])
    for x in xs[1:]:
        if x.ndim != first.ndim or any(a is not None and b is not None and a != b
                                       for a, b in zip(x.shape, first.shape)):
            raise ValueError(f"stack: all values must have the same shape, got "
                             f"{_dims(first.shape)} and {_dims(x.shape)}")
    a = normalize_axis("stack", axis, first.ndim + 1)
    parts = [bind("expand_dims", x, axis=a) for x in xs]
    return parts[0] if len(parts) == 1 else bind("concat", *parts, axis=a)


def _unstack_infer(types, axis, num):
    x = types[0]
    if not 0 <= axis < x.ndim or x.shape[axis] not in (num, None):
        raise ValueError(f"unstack: cannot split a tensor of shape {_dims(x.shape)} into "
                         f"{num} pieces along axis {axis}")
    return [tensor(x.dtype, x.shape[:axis] + x.shape[axis + 1:])] * num


def _unstack_impl(x, axis, num):
    if x.shape[axis] != num:
        raise InvalidArgumentError(f"unstack: expected {num} pieces along axis {axis}, "
                                   f"got shape {list(x.shape)}")
    parts = tuple(np.moveaxis(x, axis, 0))
    return parts[0] if num == 1 else parts


register("unstack", _unstack_infer, _unstack_impl, kind=SHAPE,
         vjp=lambda gs, outs, ins, axis, num: [stack(gs, axis)])


def unstack(value, num=None, axis=0, name=None):
    """Split `value` along `axis` into a list of tensors of one rank less."""
    x = convert_to_tensor(value)
    a = normalize_axis("unstack", axis, x.ndim)
    if num is None:
        num = x.shape[a]
        if num is None:
            raise ValueError(f"unstack: the size of axis {a} of shape {_dims(x.shape)} is "
                             "unknown while tracing; pass num=...")
    out = bind("unstack", x, axis=a, num=int(num))
    return [] if out is None else [out] if type(out) is Tensor else list(out)


# -- shape / size / broadcast_to / tile ------------------------------------------------
def _shape_infer(types, out_type):
    if not out_type.is_integer:
        raise TypeError(f"shape: out_type must be int32 or int64, got {out_type.name}")
    return [tensor(out_type, (types[0].ndim,))]


register("shape", _shape_infer, lambda x, out_type: np.array(x.shape, dtype=out_type.np),
         kind=SHAPE, nondiff=True)


def shape(input, out_type=_dt.int32, name=None):
    """The shape of `input` as a 1-D int tensor, computed when the graph runs (dynamic)."""
    x = convert_to_tensor(input)
    return bind("shape", x, out_type=_dt.as_dtype(out_type))


def size(input, out_type=_dt.int32, name=None):
    """The number of elements of `input` as a scalar int tensor."""
    x = convert_to_tensor(input)
    out_type = _dt.as_dtype(out_type)
    if None not in x.shape:
        return constant(_prod(x.shape), out_type)
    from .reduce import PUBLIC as R
    return R["reduce_prod"](shape(x, out_type))


def _broadcast_infer(types, shape=None):
    x = types[0]
    if shape is None:
        s = types[1]
        if s.ndim != 1 or s.shape[0] is None:
            raise ValueError(f"broadcast_to: shape tensor must be 1-D with a static length, "
                             f"got {s}")
        shape = (None,) * s.shape[0]
    _check_shape_input("broadcast_to", types, shape)
    lead = len(shape) - x.ndim
    out = list(shape)
    for i, xd in enumerate(x.shape):
        td = shape[lead + i] if lead + i >= 0 else None
        if lead < 0 or (xd not in (1, None) and td is not None and xd != td):
            raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {_dims(x.shape)}"
                             f" to shape {_dims(shape)}")
        if td is None and xd not in (1, None):
            out[lead + i] = xd
    return [tensor(x.dtype, tuple(out))]


def _broadcast_impl(x, *dynamic, shape=None):
    target = tuple(int(d) for d in dynamic[0]) if dynamic else shape
    try:
        return np.array(np.broadcast_to(x, target))   # a writable, contiguous copy
    except ValueError:
        raise InvalidArgumentError(f"broadcast_to: cannot broadcast shape {list(x.shape)} to "
                                   f"{list(target)}") from None


def _broadcast_vjp(gs, outs, ins, shape=None):
    from ..autodiff.tape import unbroadcast
    return [unbroadcast(gs[0], ins[0]), None]


register("broadcast_to", _broadcast_infer, _broadcast_impl, kind=SHAPE, vjp=_broadcast_vjp)


def broadcast_to(input, shape, name=None):
    """`input` broadcast (numpy rules, one way) to `shape` (ints, or an int tensor)."""
    x = convert_to_tensor(input)
    template, vec = _shape_arg("broadcast_to", shape)
    return bind("broadcast_to", x, *([vec] if vec is not None else []), shape=template)


def _tile_infer(types, multiples):
    x = types[0]
    if len(multiples) != x.ndim or any(m < 0 for m in multiples):
        raise ValueError(f"tile: multiples {list(multiples)} must be {x.ndim} non-negative ints "
                         f"for a tensor of shape {_dims(x.shape)}")
    return [tensor(x.dtype, tuple(None if d is None else d * m
                                  for d, m in zip(x.shape, multiples)))]


def _tile_vjp(gs, outs, ins, multiples):
    """Split every axis into (multiple, size) and sum over the multiples."""
    from .reduce import PUBLIC as R
    x = ins[0]
    if not x.ndim:
        return [gs[0]]
    split = []
    for i, m in enumerate(multiples):
        split += [m, x.shape[i] if x.shape[i] is not None else shape(x)[i]]
    return [R["reduce_sum"](reshape(gs[0], split), tuple(range(0, 2 * x.ndim, 2)))]


register("tile", _tile_infer, lambda x, multiples: np.tile(x, multiples), kind=SHAPE,
         vjp=_tile_vjp)


def tile(input, multiples, name=None):
    """Repeat `input` `multiples[i]` times along each axis i (multiples may be a traced
    tensor: then the result's dims are known at run time)."""
    x = convert_to_tensor(input)
    if type(multiples) is Tensor and static_value(multiples) is not None:
        multiples = static_value(multiples).tolist()
    if type(multiples) is Tensor:
        return _tile_dynamic(x, multiples)
    m = tuple(static_int("tile", v, "a multiple") for v in multiples)
    return bind("tile", x, multiples=m)


def _tile_dynamic(x, multiples):
    """tile with multiples known only at run time (a traced tensor), as tf.tile takes them:
    x seen as [1, d0, 1, d1, ...], broadcast to [m0, d0, m1, d1, ...], reshaped to
    [m0*d0, m1*d1, ...] (the same elements in the same order as the tile op)."""
    rank = len(x.shape)
    if multiples.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"tile: multiples must be int32 or int64, got {multiples.dtype.name}")
    if tuple(multiples.shape) != (rank,):
        raise ValueError(f"tile: multiples must be a vector of length {rank} (the rank of "
                         f"the input {list(x.shape)}), got shape {list(multiples.shape)}")
    if rank == 0:
        return x
    m = OPS["cast"](multiples, _dt.int32)
    dims = shape(x)
    ones = constant(np.ones(rank, np.int32))
    inner = reshape(stack([ones, dims], axis=1), [-1])          # 1, d0, 1, d1, ...
    wide = reshape(stack([m, dims], axis=1), [-1])              # m0, d0, m1, d1, ...
    return reshape(broadcast_to(reshape(x, inner), wide), m * dims)


# -- check_shape: a shape equality that only the run time can decide --------------------------
def _check_shape_infer(types, message, drop, lead=0):
    x, s = types
    check_kind("check_shape", s, INTEGER, "shape")
    if s.ndim != 1 or s.shape[0] is None or s.shape[0] - drop - lead != x.ndim:
        raise ValueError(f"check_shape: shape vector {s} does not fit {x} (dropping {drop})")
    return [x]


def _check_shape_impl(x, dims, message, drop, lead=0):
    full = [int(d) for d in dims]
    if list(np.shape(x)) != full[lead:len(full) - drop]:
        raise InvalidArgumentError(message.format(got=_dims(np.shape(x)), full=_dims(full)))
    return x


register("check_shape", _check_shape_infer, _check_shape_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, message, drop, lead=0: [gs[0], None])


def check_shape(x, like, message, drop=0, lead=0):
    """`x`, which must have the shape of `like` without its first `lead` and last `drop`
    dims: a ValueError with `message` ({got}: x's shape, {full}: like's) where the static
    shapes already differ; where None dims leave it open, the check_shape op, which raises
    InvalidArgumentError with the same words when the graph runs; else `x` as it is."""
    rank = len(like.shape) - drop - lead
    want = tuple(like.shape)[lead:lead + rank]
    if rank < 0 or len(x.shape) != rank or any(
            a is not None and b is not None and a != b for a, b in zip(x.shape, want)):
        raise ValueError(message.format(got=_dims(x.shape), full=_dims(like.shape)))
    if None not in x.shape and None not in want:
        return x
    extra = {"lead": int(lead)} if lead else {}      # graphs without it read as lead=0
    return bind("check_shape", x, shape(like), message=message, drop=int(drop), **extra)


PUBLIC = dict(reshape=reshape, transpose=transpose, expand_dims=expand_dims, squeeze=squeeze,
              concat=concat, stack=stack, unstack=unstack,
              shape=shape, size=size, broadcast_to=broadcast_to, tile=tile)

from . import indexing, selection, shape_extras  # noqa: E402  (getitem, gather, one_hot,
#                               boolean_mask, split, pad, reverse: built on the ops above)
PUBLIC.update(indexing.PUBLIC)
PUBLIC.update(selection.PUBLIC)
PUBLIC.update(shape_extras.PUBLIC)
