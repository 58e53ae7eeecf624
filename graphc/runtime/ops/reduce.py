"""Reductions (sum, max, ... over axes), arg-reductions and cumulative sums and products.

Primitives keep the input dtype exactly (TF semantics: an int32 sum stays int32);
`reduce_mean` and `reduce_logsumexp` are composites, so they get gradients and fusion free.
"""
import numbers

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..dispatch import bind, constant, convert_to_tensor
from ..registry import register, REDUCE, OPAQUE
from ..static_value import static_value
from ..tensor import Tensor
from ._rules import ANY, NUMERIC, BOOL, check_kind, tensor


def static_int(op, value, what="axis"):
    """A Python int from an int, numpy int or scalar int tensor whose value is known now:
    concrete, or known while tracing (gc.constant, static shapes and pure ops of them).
    Else TypeError; for a tensor known only when the graph runs, one that says so."""
    if type(value) is Tensor and value.dtype.is_integer and value.ndim == 0:
        known = static_value(value)
        if known is not None:
            return int(known)
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if type(value) is Tensor and value.is_symbolic and value.dtype.is_integer:
        raise TypeError(
            f"{op}: {what} must be known while tracing, but {value!r} is computed only when "
            f"the graph runs (from a function argument or another run-time value). Fix: "
            f"pass a Python int, or pass the {what} to the gc.function as a Python int "
            f"(not a tensor) so that it becomes part of the signature (one trace per value).")
    raise TypeError(f"{op}: {what} must be a Python int, got {value!r}")


def static_ints(op, value, what="axis"):
    """A list of Python ints from a list/tuple of ints or scalar tensors, a 1-D int array, or
    a 1-D int tensor whose value is known now (see static_int); else TypeError."""
    if type(value) is Tensor and value.ndim == 1 and value.dtype.is_integer:
        known = static_value(value)
        if known is None:
            static_int(op, value, what)        # raises: known only when the graph runs
        return [int(v) for v in known]
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a list of ints or a 1-D int tensor, "
                        f"got {value!r}")
    return [static_int(op, v, f"{what} entry") for v in value]


def normalize_axis(op, axis, ndim):
    """One axis in [0, ndim); negative axes count from the end."""
    a = static_int(op, axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{op}: axis {a} is out of range for a tensor of rank {ndim} "
                         f"(valid axes are {-ndim}..{ndim - 1})")
    return a % ndim


def normalize_axes(op, axis, ndim):
    """axis=None|int|list|tuple -> sorted tuple of distinct axes in [0, ndim)."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is Tensor and axis.ndim == 1 or isinstance(axis, (list, tuple, np.ndarray)):
        items = static_ints(op, axis)
    else:
        items = [axis]
    axes = [normalize_axis(op, a, ndim) for a in items]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {axis!r} names the same axis twice")
    return tuple(sorted(axes))


def run_checked(op, fn):
    """A numpy impl whose shape errors (possible only with run-time dims) become
    InvalidArgumentError naming the op, on every path that runs it."""
    def impl(*args, **attrs):
        try:
            return fn(*args, **attrs)
        except InvalidArgumentError:
            raise
        except (ValueError, IndexError) as e:
            raise InvalidArgumentError(f"{op} failed at run time: {e}") from None
    impl.__name__ = getattr(fn, "__name__", op)
    return impl


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _check_axes(op, t, axis):
    if not all(isinstance(a, int) and 0 <= a < t.ndim for a in axis):
        raise ValueError(f"{op}: axes {axis} are out of range for {t}")


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


_REDUCERS = {
    # ufunc.reduce directly: np.sum & co. add ~2 us of Python dispatch per call
    "reduce_sum": (NUMERIC, lambda x, a, k: np.add.reduce(x, axis=a, keepdims=k,
                                                          dtype=x.dtype)),
    "reduce_prod": (NUMERIC, lambda x, a, k: np.multiply.reduce(x, axis=a, keepdims=k,
                                                                dtype=x.dtype)),
    # `initial` makes empty reductions give the identity (-inf / INT_MIN), as TF does
    "reduce_max": (NUMERIC, lambda x, a, k: np.maximum.reduce(x, axis=a, keepdims=k,
                                                              initial=_lowest(x.dtype))),
    "reduce_min": (NUMERIC, lambda x, a, k: np.minimum.reduce(x, axis=a, keepdims=k,
                                                              initial=_highest(x.dtype))),
    "reduce_all": (BOOL, lambda x, a, k: np.logical_and.reduce(x, axis=a, keepdims=k)),
    "reduce_any": (BOOL, lambda x, a, k: np.logical_or.reduce(x, axis=a, keepdims=k)),
}


# -- gradient rules (public ops, so they run eagerly and emit graph nodes while tracing) --
def _expand_reduced(g, x, axis, keepdims):
    """`g` (a reduction's gradient) with the reduced axes back as size 1, where needed:
    leading axes come back by broadcasting alone."""
    if not keepdims and tuple(axis) != tuple(range(len(axis))):
        for a in axis:
            g = bind("expand_dims", g, axis=a)
    return g


def _like_input(g, x):
    """`g` broadcast to the (possibly dynamic) shape of `x`."""
    if None not in x.shape:
        return bind("broadcast_to", g, shape=tuple(x.shape))
    return bind("broadcast_to", g, bind("shape", x, out_type=_dt.int32), shape=tuple(x.shape))


def _sum_vjp(gs, outs, ins, axis, keepdims):
    return [_like_input(_expand_reduced(gs[0], ins[0], axis, keepdims), ins[0])]


def _extremum_vjp(gs, outs, ins, axis, keepdims):
    """Ties share the gradient equally, as in TF."""
    from .elementwise import PUBLIC as E
    x = ins[0]
    y = _expand_reduced(outs[0], x, axis, keepdims)
    hit = E["cast"](E["equal"](x, y), x.dtype)
    share = E["divide"](_expand_reduced(gs[0], x, axis, keepdims),
                        PUBLIC["reduce_sum"](hit, axis, keepdims=True))
    return [E["multiply"](hit, share)]


def _prod_vjp(gs, outs, ins, axis, keepdims):
    """d prod / d x_i = the product of the others, never divided out (so zeros, inf and NaN
    elsewhere in the row count as TF counts them: [1, nan, 3] gives [nan, 3, nan]). TF's
    _ProdGrad: the reduced axes packed into one (row-major), exclusive cumprods from both
    ends multiplied; its second derivative is cumprod's (TF's div_no_nan rule)."""
    from .elementwise import PUBLIC as E
    from .shape import shape as _shape, reshape, transpose, _reshape_like
    x = ins[0]
    g = _expand_reduced(gs[0], x, axis, keepdims)
    if not axis:
        return [g]
    axes, n = tuple(axis), x.ndim
    perm = None
    if axes != tuple(range(axes[0], axes[-1] + 1)):       # not adjacent: move them first
        perm = axes + tuple(i for i in range(n) if i not in axes)
        x = transpose(x, perm)
        axes = tuple(range(len(axes)))
    lo, hi = axes[0], axes[-1] + 1
    packed = x
    if hi - lo > 1:
        dims = list(x.shape)
        if None in dims[:lo] + dims[hi:]:
            s = _shape(x)
            dims = [s[i] for i in range(n)]
        packed = reshape(x, dims[:lo] + [-1] + dims[hi:])
    left = cumprod(packed, lo, exclusive=True)
    right = cumprod(packed, lo, exclusive=True, reverse=True)
    others = E["multiply"](left, right)
    if packed is not x:
        others = _reshape_like(others, x)
    if perm is not None:
        others = transpose(others, [perm.index(i) for i in range(n)])
    return [E["multiply"](g, others)]


_REDUCE_VJP = {"reduce_sum": _sum_vjp, "reduce_prod": _prod_vjp,
               "reduce_max": _extremum_vjp, "reduce_min": _extremum_vjp}


def _register_reduce(name, kind, fn):
    def infer(types, axis, keepdims):
        t = types[0]
        check_kind(name, t, kind)
        _check_axes(name, t, axis)
        return [tensor(t.dtype, _reduced_shape(t.shape, axis, keepdims))]

    def impl(x, axis, keepdims):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, axis, keepdims))
    register(name, infer, impl, kind=REDUCE, vjp=_REDUCE_VJP.get(name),
             nondiff=name not in _REDUCE_VJP)


for _name, (_kind, _fn) in _REDUCERS.items():
    _register_reduce(_name, _kind, _fn)


def _public_reduce(name):
    def fn(input_tensor, axis=None, keepdims=False, name=None):
        x = convert_to_tensor(input_tensor)
        return bind(fn.__name__, x, axis=normalize_axes(fn.__name__, axis, x.ndim),
                    keepdims=bool(keepdims))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"`{name}` of `input_tensor` over `axis` (None: all axes; int or tuple), "
                  "keeping reduced axes as size 1 when `keepdims`. The dtype is kept.")
    return fn


PUBLIC = {n: _public_reduce(n) for n in _REDUCERS}


def _count(x, axes):
    """Number of elements reduced over `axes`, as a scalar of x's dtype (dynamic if needed)."""
    dims = [x.shape[a] for a in axes]
    if None not in dims:
        return constant(int(np.prod(dims, dtype=np.int64)), x.dtype) if x.dtype.is_integer \
            else constant(float(np.prod(dims, dtype=np.int64)), x.dtype)
    from .shape import shape as _shape
    from .indexing import gather
    from .elementwise import cast
    n = PUBLIC["reduce_prod"](gather(_shape(x), constant(list(axes), _dt.int32)))
    return cast(n, x.dtype)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis`. On integers it is the integer mean truncated toward zero, as in TF."""
    from .elementwise import PUBLIC as E
    x = convert_to_tensor(input_tensor)
    check_kind("reduce_mean", x.type, NUMERIC)
    axes = normalize_axes("reduce_mean", axis, x.ndim)
    if x.dtype is _dt.int32:
        # TF sums int32 without overflow (reduce_mean([2**30] * 3) is 2**30): sum in int64
        from .elementwise import cast
        return cast(reduce_mean(cast(x, _dt.int64), axes, keepdims), _dt.int32)
    total = PUBLIC["reduce_sum"](x, axes, keepdims)
    n = _count(x, axes)
    if x.dtype.is_floating:
        return E["divide"](total, n)
    # an empty reduction's total is 0: divide by max(n, 1) to give 0, not a division error
    n = E["maximum"](n, constant(1, n.dtype))
    return E["multiply"](E["sign"](total), E["floordiv"](E["abs"](total), n))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, computed stably by shifting by the maximum.

    Rows that are all -inf give -inf (the shift is dropped where the max is not finite).
    """
    from .elementwise import PUBLIC as E
    x = convert_to_tensor(input_tensor)
    check_kind("reduce_logsumexp", x.type, "float")
    axes = normalize_axes("reduce_logsumexp", axis, x.ndim)
    from ..autodiff.tape import stop_gradient   # the shift cancels out: its gradient is zero
    raw_max = stop_gradient(PUBLIC["reduce_max"](x, axes, keepdims=True))
    finite = E["less"](E["abs"](raw_max), np.inf)
    shift = E["where"](finite, raw_max, 0.0)
    total = PUBLIC["reduce_sum"](E["exp"](E["subtract"](x, shift)), axes, keepdims=True)
    out = E["add"](E["log"](total), shift)
    if keepdims:
        return out
    from .shape import squeeze
    return squeeze(out, axes) if axes else out


PUBLIC.update(reduce_mean=reduce_mean, reduce_logsumexp=reduce_logsumexp)


# -- arg-reductions and cumsum ---------------------------------------------------------
def _arg_register(name, np_fn, nan_as):
    def infer(types, axis, output_type):
        t = types[0]
        check_kind(name, t, ANY)          # bools too, as TF (argmax([False, True]) is 1)
        _check_axes(name, t, (axis,))
        if t.shape[axis] == 0:
            raise ValueError(f"{name}: cannot take {name} over axis {axis} of size 0 ({t})")
        if not output_type.is_integer:
            raise TypeError(f"{name}: output_type must be int32 or int64, got {output_type.name}")
        return [tensor(output_type, t.shape[:axis] + t.shape[axis + 1:])]

    def impl(x, axis, output_type):
        if x.dtype.kind == "f":
            # TF never picks a NaN (argmax([1, nan, 3]) is 2, argmax([nan, nan]) is 0);
            # numpy picks the first NaN
            x = np.where(np.isnan(x), x.dtype.type(nan_as), x)
        return np.asarray(np_fn(x, axis=axis)).astype(output_type.np, copy=False)
    register(name, infer, impl, kind=OPAQUE, nondiff=True)


_arg_register("argmax", np.argmax, -np.inf)
_arg_register("argmin", np.argmin, np.inf)


def _public_arg(name):
    def fn(input, axis=None, output_type=_dt.int64, name=None):
        x = convert_to_tensor(input)
        a = normalize_axis(fn.__name__, 0 if axis is None else axis, x.ndim)
        return bind(fn.__name__, x, axis=a, output_type=_dt.as_dtype(output_type))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Index of the {name[3:]}imum along `axis` (default 0), as int64 like TF."
    return fn


PUBLIC.update(argmax=_public_arg("argmax"), argmin=_public_arg("argmin"))


def _cum_register(name, np_fn, identity, vjp):
    def infer(types, axis, exclusive, reverse):
        t = types[0]
        check_kind(name, t, NUMERIC)
        _check_axes(name, t, (axis,))
        return [t]

    def impl(x, axis, exclusive, reverse):
        y = np.flip(x, axis) if reverse else x
        with np.errstate(all="ignore"):
            out = np_fn(y, axis=axis, dtype=x.dtype)
        if exclusive and out.shape[axis]:
            first = np.full_like(np.take(out, [0], axis=axis), identity)
            out = np.concatenate([first, np.take(out, np.arange(out.shape[axis] - 1),
                                                 axis=axis)], axis)
        return np.flip(out, axis) if reverse else out
    register(name, infer, impl, kind=OPAQUE, vjp=vjp)


def _cumprod_vjp(gs, outs, ins, axis, exclusive, reverse):
    """TF's _CumprodGrad: cumsum(cumprod(x) * g) the other way, div_no_nan by x (so 0 where x
    is 0, as TF, though the true derivative there need not be)."""
    from .elementwise import PUBLIC as E
    from .math_extras import divide_no_nan
    out = bind("cumsum", E["multiply"](outs[0], gs[0]), axis=axis, exclusive=exclusive,
               reverse=not reverse)
    return [divide_no_nan(out, ins[0])]


_cum_register("cumsum", np.cumsum, 0,
              lambda gs, outs, ins, axis, exclusive, reverse: [bind(
                  "cumsum", gs[0], axis=axis, exclusive=exclusive, reverse=not reverse)])
_cum_register("cumprod", np.cumprod, 1, _cumprod_vjp)


# -- sum_to_shape: undoing a broadcast whose axes are known only at run time ------------------
def _sum_to_infer(types, shape):
    return [tensor(types[0].dtype, tuple(shape))]


def _sum_to_impl(g, dims, shape):
    """`g` summed over the axes numpy broadcasting added or stretched to reach it from
    `dims` (a run-time shape), as TF's BroadcastGradientArgs + Sum."""
    target = tuple(int(d) for d in dims)
    lead = g.ndim - len(target)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(target)
                                      if d == 1 and g.shape[lead + i] != 1)
    if not axes:
        return g
    return np.sum(g, axis=axes, dtype=g.dtype, keepdims=True).reshape(target)


register("sum_to_shape", _sum_to_infer, _sum_to_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, shape: [_like_input(gs[0], ins[0]), None])


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sum along `axis` (TF's `exclusive` and `reverse` options supported)."""
    x = convert_to_tensor(x)
    return bind("cumsum", x, axis=normalize_axis("cumsum", axis, x.ndim),
                exclusive=bool(exclusive), reverse=bool(reverse))


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running product along `axis`, as tf.math.cumprod (`exclusive` starts from 1)."""
    x = convert_to_tensor(x)
    return bind("cumprod", x, axis=normalize_axis("cumprod", axis, x.ndim),
                exclusive=bool(exclusive), reverse=bool(reverse))


PUBLIC["cumsum"] = cumsum
