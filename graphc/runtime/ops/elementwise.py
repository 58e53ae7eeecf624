"""Elementwise primitives (with broadcasting) and the public functions built on them."""
import math

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..dispatch import bind, convert_like, convert_to_tensor
from ..autodiff.tape import unbroadcast
from ..context import composite_errors
from ..registry import register, ELEMENTWISE
from ..tensor import OPS as P
from ._rules import (FLOAT, NUMERIC, INTEGER, BOOL, ANY, check_kind, same_dtype,
                     broadcast_shapes, tensor)


def _quiet(fn):
    """numpy impl that gives inf/nan like TF instead of emitting RuntimeWarnings."""
    def impl(*a):
        with np.errstate(all="ignore"):
            return fn(*a)
    return impl


def _unary(name, np_fn, scalar, kind=NUMERIC, vjp=None):
    """vjp: (g, out, x) -> dx, or None for a non-differentiable op."""
    def infer(types):
        check_kind(name, types[0], kind)
        return [types[0]]
    rule = None if vjp is None else (lambda gs, outs, ins: [vjp(gs[0], outs[0], ins[0])])
    register(name, infer, np_fn, kind=ELEMENTWISE, scalar=scalar, vjp=rule, nondiff=vjp is None)


def _binary(name, np_fn, scalar, kind=NUMERIC, out=None, vjp=None):
    """vjp: (g, out, x, y) -> (dx, dy) before un-broadcasting, or None (not differentiable)."""
    """out: None (same dtype as inputs), a DType, or a callable dtype -> dtype."""
    def infer(types):
        dtype = same_dtype(name, types)
        for t in types:
            check_kind(name, t, kind)
        shape = broadcast_shapes(name, *(t.shape for t in types))
        res = dtype if out is None else (out(dtype) if callable(out) else out)
        return [tensor(res, shape)]

    def rule(gs, outs, ins):
        x, y = ins
        dx, dy = vjp(gs[0], outs[0], x, y)
        return [None if dx is None else unbroadcast(dx, x, y),
                None if dy is None else unbroadcast(dy, y, x)]
    register(name, infer, np_fn, kind=ELEMENTWISE, scalar=scalar,
             vjp=None if vjp is None else rule, nondiff=vjp is None)


def _int_division(np_fn, name):
    """numpy rule of `name` raising on an integer zero divisor, as TF does (numpy gives 0)."""
    quiet = _quiet(np_fn)

    def impl(x, y):
        if np.asarray(y).dtype.kind in "iu" and not np.all(y):
            raise InvalidArgumentError(f"{name}: integer division by zero")
        return quiet(x, y)
    return impl


def _c_power(x, y):
    """C's pow (TF's, numba's and CUDA's). numpy's power takes sqrt for a scalar exponent
    0.5, which gives -0.0 at -0.0 and nan at -inf where C's pow gives +0.0 and +inf."""
    out = np.power(x, y)
    y = np.asarray(y)
    if y.dtype.kind == "f" and y.size and np.any(y == 0.5):
        out = np.asarray(out)
        fix = (y == 0.5) & ((x == 0) | (x == -np.inf))
        if fix.any():
            out = np.where(fix, np.abs(x), out).astype(out.dtype, copy=False)
    return out


def _int_power(np_fn):
    """`np_fn` (power), raising InvalidArgumentError (as integer division by zero does,
    eagerly and on every backend) for an integer raised to a negative power, which numpy
    refuses with a bare ValueError that names no op (TF: InvalidArgumentError, 'Integers to
    negative integer powers are not allowed', whatever the base, 1 and -1 included)."""
    quiet = _quiet(np_fn)

    def impl(x, y):
        if np.asarray(y).dtype.kind in "iu" and np.any(np.asarray(y) < 0):
            raise InvalidArgumentError("pow: integers to negative integer powers are not "
                                       "allowed")
        return quiet(x, y)
    return impl


# Gradient rules use the public functions below (P), so they work eagerly and while tracing.
def _zero(g):
    return P["zeros_like"](g)


def _pow_vjp(g, out, x, y):
    safe_log = P["where"](x > 0, P["log"](P["where"](x > 0, x, P["ones_like"](x))), _zero(x))
    return g * y * x ** (y - 1), g * out * safe_log


# -- arithmetic -------------------------------------------------------------------------
_binary("add", np.add, "({0} + {1})", vjp=lambda g, o, x, y: (g, g))
_binary("subtract", np.subtract, "({0} - {1})", vjp=lambda g, o, x, y: (g, -g))
_binary("multiply", np.multiply, "({0} * {1})", vjp=lambda g, o, x, y: (g * y, g * x))
_binary("divide", _quiet(np.true_divide), "({0} / {1})",
        out=lambda d: d if d.is_floating else _dt.float64,
        vjp=lambda g, o, x, y: (g / y, -g * o / y))
def _floor_divide(x, y):
    """TF's FloorDiv: floor(x / y) on floats (inf // 2 is inf and -1 // inf is -0.0, where
    numpy's floor_divide gives nan and -1), numpy's floored division on integers."""
    if np.asarray(x).dtype.kind == "f":
        return np.floor(np.true_divide(x, y))
    return np.floor_divide(x, y)


# the template is the float rule; integer outputs use the checked ifloordiv (kernels/expr.py).
# No gradient (None, not zeros), as TF's FloorDiv/Floor/Ceil/Round gradients.
_binary("floordiv", _int_division(_floor_divide, "floordiv"), "floor({0} / {1})")
_binary("mod", _int_division(np.mod, "mod"), "({0} % {1})",
        vjp=lambda g, o, x, y: (g, -g * P["floordiv"](x, y)))
_binary("pow", _int_power(_c_power), "({0} ** {1})", vjp=_pow_vjp)
_binary("maximum", np.maximum, "max({0}, {1})",
        vjp=lambda g, o, x, y: (P["where"](x >= y, g, 0), P["where"](x >= y, 0, g)))
_binary("minimum", np.minimum, "min({0}, {1})",
        vjp=lambda g, o, x, y: (P["where"](x <= y, g, 0), P["where"](x <= y, 0, g)))

_unary("negative", np.negative, "(-{0})", vjp=lambda g, o, x: -g)
_unary("abs", np.abs, "abs({0})", vjp=lambda g, o, x: g * P["sign"](x))
_unary("sign", np.sign, "sign({0})", vjp=lambda g, o, x: _zero(x))
_unary("square", np.square, "({0} * {0})", vjp=lambda g, o, x: g * 2 * x)
_unary("exp", _quiet(np.exp), "exp({0})", FLOAT, vjp=lambda g, o, x: g * o)
_unary("log", _quiet(np.log), "log({0})", FLOAT, vjp=lambda g, o, x: g / x)
_unary("log1p", _quiet(np.log1p), "log1p({0})", FLOAT, vjp=lambda g, o, x: g / (1 + x))
def _zero_where_no_grad(g, dx):
    """dx, but 0 where the incoming gradient is 0, as TF's SqrtGrad/RsqrtGrad: so
    where(x > 0, sqrt(x), 0) has gradient 0, not NaN, where x <= 0."""
    return P["where"](P["equal"](g, 0), _zero(g), dx)


_unary("sqrt", _quiet(np.sqrt), "sqrt({0})", FLOAT,
       vjp=lambda g, o, x: _zero_where_no_grad(g, g * 0.5 / o))
# TF's RsqrtGrad -0.5 * (g * y) * (y * y), not g * -0.5 * y / x (at x = -0.0 that is -inf
# where TF's is inf)
_unary("rsqrt", _quiet(lambda x: 1 / np.sqrt(x)), "(1 / sqrt({0}))", FLOAT,
       vjp=lambda g, o, x: _zero_where_no_grad(g, -0.5 * (g * o) * (o * o)))
_unary("sin", np.sin, "sin({0})", FLOAT, vjp=lambda g, o, x: g * P["cos"](x))
_unary("cos", np.cos, "cos({0})", FLOAT, vjp=lambda g, o, x: -g * P["sin"](x))
_unary("tan", _quiet(np.tan), "tan({0})", FLOAT, vjp=lambda g, o, x: g * (1 + o * o))
_unary("tanh", np.tanh, "tanh({0})", FLOAT, vjp=lambda g, o, x: g * (1 - o * o))
_unary("floor", np.floor, "floor({0})", FLOAT)
_unary("ceil", np.ceil, "ceil({0})", FLOAT)
_unary("round", np.round, "rint({0})", FLOAT)
_unary("stop_gradient", lambda x: x, "{0}", kind=ANY)   # identity; no vjp: blocks gradients

# relu's family (maximum/minimum/where of x against constants) has a first derivative that
# depends on x only through comparisons, so its own derivative would be None. TF's
# ReluGrad/Relu6Grad/LeakyReluGrad have gradients (ReluGradGrad: the same op for the incoming
# gradient, zeros for the features): "piecewise_linear" marks relu's features and its
# gradient is "piecewise_linear_grad"(g, x), both identities on their first input (removed
# by the simplifier), whose gradient gives x zeros (marked again: every order is zeros, as
# TF's).
_unary("piecewise_linear", lambda x: x, "{0}", FLOAT,
       vjp=lambda g, o, x: bind("piecewise_linear_grad", g, x))
_binary("piecewise_linear_grad", lambda g, x: g, "({0} if True else {1})", FLOAT,
        vjp=lambda g, o, dx, x: (bind("piecewise_linear_grad", g, x),
                                 bind("piecewise_linear_grad", P["zeros_like"](x), x)))


_erf_ufunc = []


def _erf(x):
    """numpy has no erf: compile math.erf into a ufunc once, on first use."""
    if not _erf_ufunc:
        import numba
        _erf_ufunc.append(numba.vectorize(["float32(float32)", "float64(float64)"])(
            lambda v: math.erf(v)))
    return _erf_ufunc[0](x)


_unary("erf", _erf, "erf({0})", FLOAT,
       vjp=lambda g, o, x: g * (2 / math.sqrt(math.pi)) * P["exp"](-(x * x)))

# -- comparison and logic ---------------------------------------------------------------
for _name, _fn, _sym in [("equal", np.equal, "=="), ("not_equal", np.not_equal, "!="),
                         ("less", np.less, "<"), ("less_equal", np.less_equal, "<="),
                         ("greater", np.greater, ">"), ("greater_equal", np.greater_equal, ">=")]:
    _binary(_name, _fn, f"({{0}} {_sym} {{1}})", kind=ANY if _sym in "==!=" else NUMERIC,
            out=_dt.bool_)
_binary("logical_and", np.logical_and, "({0} and {1})", kind=BOOL)
_binary("logical_or", np.logical_or, "({0} or {1})", kind=BOOL)
_unary("logical_not", np.logical_not, "(not {0})", BOOL)
_binary("logical_xor", np.logical_xor, "({0} != {1})", kind=BOOL)
# on integers `&`, `|`, `^`, `~` are bitwise, as TF's operators (tf.bitwise.*)
_binary("bitwise_and", np.bitwise_and, "({0} & {1})", kind=INTEGER)
_binary("bitwise_or", np.bitwise_or, "({0} | {1})", kind=INTEGER)
_binary("bitwise_xor", np.bitwise_xor, "({0} ^ {1})", kind=INTEGER)
_unary("invert", np.invert, "(~{0})", INTEGER)


def _where_infer(types):
    c, x, y = types
    check_kind("where", c, BOOL, "condition")
    dtype = same_dtype("where", [x, y])
    return [tensor(dtype, broadcast_shapes("where", c.shape, x.shape, y.shape))]


def _where_vjp(gs, outs, ins):
    c, x, y = ins
    g = gs[0]
    # a scalar 0 (not zeros_like) keeps fused kernels from reading a materialized zero array
    return [None, unbroadcast(P["where"](c, g, 0), x, c, y),
            unbroadcast(P["where"](c, 0, g), y, c, x)]


register("where", _where_infer, np.where, kind=ELEMENTWISE, scalar="({1} if {0} else {2})",
         vjp=_where_vjp)


def _cast_infer(types, dtype):
    if types[0].kind != "tensor":
        raise TypeError(f"cast: input must be a tensor, got {types[0]}")
    return [tensor(dtype, types[0].shape)]


register("cast", _cast_infer, lambda x, dtype: np.asarray(x).astype(dtype.np),
         kind=ELEMENTWISE, scalar="{dtype}({0})",
         vjp=lambda gs, outs, ins, dtype: [P["cast"](gs[0], ins[0].dtype)
                                           if ins[0].dtype.is_floating else None])


# -- public functions -------------------------------------------------------------------
def _public_binary(name):
    def fn(x, y, name=None):
        a, b = convert_like([x, y], fn.__name__)
        return bind(fn.__name__, a, b)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}` of two tensors, with numpy broadcasting."
    return fn


def _public_unary(name):
    def fn(x, name=None):
        return bind(fn.__name__, convert_to_tensor(x))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}`."
    return fn


_BINARY = ["add", "subtract", "multiply", "divide", "floordiv", "mod", "pow", "maximum",
           "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor"]
_UNARY = ["negative", "abs", "sign", "square", "exp", "log", "log1p", "sqrt", "rsqrt", "sin",
          "cos", "tan", "tanh", "floor", "ceil", "round", "erf", "logical_not", "invert"]
PUBLIC = {n: _public_binary(n) for n in _BINARY}
PUBLIC.update({n: _public_unary(n) for n in _UNARY})


def where(condition, x=None, y=None, name=None):
    """Elementwise select: `x` where `condition` is true, else `y` (all three broadcast).
    With `condition` alone, the int64 indices [num_true, rank] of its true (nonzero)
    elements, as tf.where: a first dim known only when the graph runs."""
    if x is None and y is None:
        return bind("where_indices", convert_to_tensor(condition))
    if x is None or y is None:
        raise ValueError("where: x and y must both be given or both be None")
    c = convert_to_tensor(condition)
    a, b = convert_like([x, y], "where")
    return bind("where", c, a, b)


def cast(x, dtype, name=None):
    """`x` converted elementwise to `dtype` (float -> int truncates toward zero, as in TF)."""
    dtype = _dt.as_dtype(dtype)
    x = convert_to_tensor(x)
    if x.dtype is dtype:
        return x
    return bind("cast", x, dtype=dtype)


@composite_errors("sigmoid")
def sigmoid(x, name=None):
    """1 / (1 + exp(-x)), a composite of primitives."""
    x = convert_to_tensor(x)
    if x.dtype.is_floating:
        # Far below 0 exp(-x) is inf and this composite's gradient inf * 0 = NaN, where TF's
        # SigmoidGrad y * (1 - y) is 0: there x reaches exp through stop_gradient (the same
        # value, no gradient). Above the bound the two gradients agree up to rounding.
        from ..autodiff.tape import stop_gradient
        low = 1.0 - float(np.log(np.finfo(x.dtype.np).max))
        x = where(PUBLIC["less"](x, low), stop_gradient(x), x)
    return PUBLIC["divide"](1.0, PUBLIC["add"](1.0, PUBLIC["exp"](PUBLIC["negative"](x))))


@composite_errors("clip_by_value")
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """max(min(t, hi), lo) elementwise, in TF's order (so lo > hi gives lo). As TF, the
    bounds may not broadcast `t` larger."""
    t = convert_to_tensor(t)
    out = PUBLIC["maximum"](PUBLIC["minimum"](t, clip_value_max), clip_value_min)
    from .shape import check_shape
    return check_shape(out, t, "clip_by_value: the clip bounds would broadcast t of shape "
                       "{full} to {got}; bounds must broadcast to t's own shape")


def round(x, name=None):  # noqa: A001 - TF's name
    """Round half to even. Integers are returned unchanged, as tf.math.round does."""
    x = convert_to_tensor(x)
    if x.dtype.is_integer:
        return x
    return bind("round", x)


PUBLIC.update(where=where, cast=cast, sigmoid=sigmoid, clip_by_value=clip_by_value,
              round=round)
PUBLIC["truediv"] = PUBLIC["divide"]   # TF's name for `/` (ints give float64)
