"""gc.nn: activations, softmax and cross-entropy losses, all composites of graphc primitives
(so they trace, fuse and differentiate like any other user code). Keyword names follow TF."""
import math

import numpy as np

from . import dtypes as _dt
from .runtime.autodiff.tape import stop_gradient
from .runtime.context import composite_errors, located_errors, recording_tapes
from .runtime.dispatch import bind, constant, convert_to_tensor
from .runtime.ops import elementwise as _ew
from .runtime.ops._rules import INTEGER, NUMERIC as _NUMERIC, check_kind
from .runtime.ops.reduce import PUBLIC as _R, normalize_axis, normalize_axes
from .runtime.ops.indexing import check_class_ids, one_hot as _one_hot
from .runtime.ops.math_extras import _float
from .runtime.ops.array_extras import embedding_lookup
from .runtime.ops.sorting import top_k

_E = _ew.PUBLIC


def _with_dtype_of(v, x):
    """A tensor or Variable `v` as it is (its dtype checked by the caller's op); other data
    (Python lists, numpy arrays) converted to `x`'s dtype, as TF converts an op's inputs."""
    if type(v) is type(x) or hasattr(v, "_as_tensor"):
        return convert_to_tensor(v)
    return convert_to_tensor(v, x.dtype)


def _no_gradient_at_nan(x):
    """`x` itself, but with no gradient where it is NaN, so that relu's maximum(0, x) gives
    x the gradient only where x > 0, as TF's ReluGrad / Relu6Grad: maximum(0, x) alone
    passes it on at NaN (0 >= NaN is False; TF's MaximumGrad does the same, so maximum's
    rule stays). maximum(x, -inf) is x bit for bit, and MaximumGrad's x >= -inf is False
    only at NaN; the simplifier folds it away, so the compiled forward is maximum(0, x)
    alone. Eagerly it runs only while a tape records (gradients are built then)."""
    if not x.dtype.is_floating or not (x.is_symbolic or recording_tapes()):
        return x
    return _E["maximum"](_piecewise_linear(x), -math.inf)


def _piecewise_linear(x):
    """x, marked so that its gradient has a derivative (zeros) as TF's ReluGrad/LeakyReluGrad
    (elementwise.py's piecewise_linear); only while tracing or taping, as above."""
    if not x.dtype.is_floating or not (x.is_symbolic or recording_tapes()):
        return x
    return bind("piecewise_linear", x)


@composite_errors("relu")
def relu(features, name=None):
    """max(features, 0). Written maximum(0, x): maximum's gradient goes to its first operand
    on a tie, so x gets none at 0, as TF's ReluGrad (x > 0); none at NaN either."""
    x = convert_to_tensor(features)
    return _E["maximum"](0, _no_gradient_at_nan(x))


@composite_errors("relu6")
def relu6(features, name=None):
    """min(max(features, 0), 6), with the constants first so that, as TF's Relu6Grad, x has
    gradient only where 0 < x < 6 (ties go to the first operand; none at NaN)."""
    x = convert_to_tensor(features)
    return _E["minimum"](6, _E["maximum"](0, _no_gradient_at_nan(x)))


@composite_errors("leaky_relu")
def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, alpha * features elsewhere."""
    x = convert_to_tensor(features)
    if x.dtype.is_integer:   # as TF: integer features are computed in float32
        x = _ew.cast(x, _dt.float32)
    if isinstance(alpha, (int, float)):   # TF's alpha is a float32 attr: 0.2 is 0.2f on float64
        alpha = float(np.float32(alpha))
    x = _piecewise_linear(x)
    return _E["where"](_E["greater"](x, 0), x, _E["multiply"](x, alpha))


def elu(features, name=None):
    """exp(features) - 1 where negative, features elsewhere: as TF's Elu/EluGrad, 0 and -0.0
    and NaN take the identity branch (elu(-0.0) is -0.0; the gradient there is the incoming
    one and the second derivative 0)."""
    x = _float("elu", features)
    # exp of min(x, 0) never overflows, so the unused branch stays finite (and its gradient)
    neg = _E["subtract"](_E["exp"](_E["minimum"](x, 0.0)), 1.0)
    return _E["where"](_E["less"](x, 0.0), neg, x)


def gelu(features, approximate=False, name=None):
    """x * Phi(x): exact erf form, or the tanh approximation when `approximate=True`."""
    x = _float("gelu", features)
    if approximate:
        inner = _E["multiply"](math.sqrt(2.0 / math.pi),
                               _E["add"](x, _E["multiply"](0.044715, _E["pow"](x, 3.0))))
        return _E["multiply"](_E["multiply"](0.5, x), _E["add"](1.0, _E["tanh"](inner)))
    cdf = _E["add"](1.0, _E["erf"](_E["multiply"](x, 1.0 / math.sqrt(2.0))))
    return _E["multiply"](_E["multiply"](0.5, x), cdf)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x))."""
    return _ew.sigmoid(_float("sigmoid", x))


def softplus(features, name=None):
    """log(1 + exp(x)), computed stably as max(0, x) + log1p(exp(min(x, -x))) (min(x, -x) is
    -|x|). At x = 0 both ties go to x's own operand: max gives it 0 and min 1, so the gradient
    is sigmoid(0) = 1/2 from the smooth term, and the second derivative is TF's 1/4 there
    too (-|x| through abs would have a zero slope at 0)."""
    x = _float("softplus", features)
    return _E["add"](_E["maximum"](0.0, x),
                     _E["log1p"](_E["exp"](_E["minimum"](x, _E["negative"](x)))))


def softmax(logits, axis=-1, name=None):
    """exp(logits) normalized along `axis`, shifted by the max so it never overflows."""
    x = _float("softmax", logits)
    axis = normalize_axis("softmax", axis, x.ndim)
    # the shift changes no result, so its gradient is exactly zero: stop_gradient skips it
    e = _E["exp"](_E["subtract"](x, stop_gradient(_R["reduce_max"](x, axis, keepdims=True))))
    return _E["divide"](e, _R["reduce_sum"](e, axis, keepdims=True))


def log_softmax(logits, axis=-1, name=None):
    """logits - logsumexp(logits) along `axis`, computed stably."""
    x = _float("log_softmax", logits)
    axis = normalize_axis("log_softmax", axis, x.ndim)
    shifted = _E["subtract"](x, stop_gradient(_R["reduce_max"](x, axis, keepdims=True)))
    lse = _E["log"](_R["reduce_sum"](_E["exp"](shifted), axis, keepdims=True))
    return _E["subtract"](shifted, lse)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Per-example -log softmax(logits)[label]; `labels` are int class ids of shape
    logits.shape[:-1]."""
    op = "sparse_softmax_cross_entropy_with_logits"
    x = _float(op, logits)
    y = convert_to_tensor(labels)
    check_kind(op, y.type, INTEGER, "labels")
    from .runtime.ops.shape import shape, check_shape
    y = check_shape(y, x, f"{op}: labels of shape {{got}} must have the shape of logits "
                    "{full} without its last (class) dimension", drop=1)
    depth = x.shape[-1] if x.shape[-1] is not None else shape(x)[-1]
    y = check_class_ids(y, depth, op)
    mask = _one_hot(y, depth, on_value=True, off_value=False, dtype=_dt.bool_)
    picked = _R["reduce_sum"](_E["where"](mask, log_softmax(x), 0.0), -1)
    return _E["negative"](picked)


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    """Per-example -sum(labels * log softmax(logits)) along `axis` (labels: a distribution)."""
    op = "softmax_cross_entropy_with_logits"
    x = _float(op, logits)
    # as TF, labels of any dtype are cast to the logits' (int or bool one-hot rows included)
    y = _ew.cast(_with_dtype_of(labels, x), x.dtype)
    axis = normalize_axis(op, axis, x.ndim)
    from .runtime.ops.shape import check_shape
    y = check_shape(y, x, f"{op}: labels of shape {{got}} and logits of shape {{full}} must "
                    "have the same shape")
    return _E["negative"](_R["reduce_sum"](_E["multiply"](y, log_softmax(x, axis)), axis))


@composite_errors("sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Per-element logistic loss, TF's stable formula max(x, 0) - x * z + log1p(exp(-|x|))
    (written with TF's two `where`s on x >= 0, so the gradient at x = 0 is TF's too).
    `labels` and `logits` must have one shape (no broadcasting), as in TF."""
    op = "sigmoid_cross_entropy_with_logits"
    x = _float(op, logits)
    z = _with_dtype_of(labels, x)
    if tuple(z.shape) != tuple(x.shape) and None not in z.shape + x.shape:
        raise ValueError(f"{op}: logits and labels must have the same shape, got "
                         f"{list(x.shape)} and {list(z.shape)}")
    from .runtime.ops.shape import check_shape
    z = check_shape(z, x, f"{op}: labels of shape {{got}} and logits of shape {{full}} must "
                    "have the same shape")
    cond = _E["greater_equal"](x, 0.0)
    relu_logits = _E["where"](cond, x, 0.0)
    neg_abs = _E["where"](cond, _E["negative"](x), x)
    return _E["add"](_E["subtract"](relu_logits, _E["multiply"](x, z)),
                     _E["log1p"](_E["exp"](neg_abs)))


@composite_errors("moments")
def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of `x` over `axes`, as tf.nn.moments: the variance is the mean of
    squared_difference(x, stop_gradient(mean)); `shift` is accepted and unused, as in TF 2."""
    x = convert_to_tensor(x)
    check_kind("moments", x.type, _NUMERIC)
    ax = normalize_axes("moments", axes, x.ndim)
    mean = _R["reduce_mean"](x, ax, keepdims=True)
    dev = _E["square"](_E["subtract"](x, stop_gradient(mean)))
    variance = _R["reduce_mean"](dev, ax, keepdims=True)
    if not keepdims and ax:
        from .runtime.ops.shape import squeeze
        mean, variance = squeeze(mean, list(ax)), squeeze(variance, list(ax))
    return mean, variance


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, a scalar (floats only), as tf.nn.l2_loss."""
    x = _float("l2_loss", t)
    return _E["multiply"](_R["reduce_sum"](_E["square"](x)), 0.5)


@composite_errors("silu")
def silu(features, beta=1.0):
    """features * sigmoid(beta * features) (floats), as tf.nn.silu / tf.nn.swish. The
    sigmoid is written exp(-softplus(-u)): the same value, and a gradient that stays exact
    where sigmoid's own (o / (1 + exp(-u)) underflows) would lose it, as TF's custom one."""
    x = _float("silu", features)
    one = isinstance(beta, (int, float)) and beta == 1.0
    u = x if one else _E["multiply"](x, beta)
    return _E["multiply"](x, _E["exp"](_E["negative"](softplus(_E["negative"](u)))))


swish = silu


@composite_errors("bias_add")
def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel axis: the last one (data_format None or 'N...C'), or
    axis 1 ('NC...'), as tf.nn.bias_add. `bias` is 1-D with the channel count; `value` has
    rank >= 2 and `bias`'s dtype."""
    op = "bias_add"
    v = convert_to_tensor(value)
    b = _with_dtype_of(bias, v)
    if data_format is not None and not (isinstance(data_format, str) and (
            data_format.startswith("NC") or data_format.startswith("N")
            and data_format.endswith("C"))):
        raise ValueError(f"{op}: data_format must be of the form 'N...C' or 'NC...', got "
                         f"{data_format!r}")
    if v.ndim < 2:
        raise ValueError(f"{op}: value must be at least 2-D, got shape {list(v.shape)}")
    if b.ndim != 1:
        raise ValueError(f"{op}: bias must be 1-D, got shape {list(b.shape)}")
    channels_first = data_format is not None and data_format.startswith("NC")
    c = 1 if channels_first else v.ndim - 1
    if None not in (v.shape[c], b.shape[0]) and v.shape[c] != b.shape[0]:
        raise ValueError(f"{op}: bias of size {b.shape[0]} must have one value per channel "
                         f"(axis {c} of value's shape {list(v.shape)})")
    if channels_first:
        from .runtime.ops.shape import reshape
        b = reshape(b, [-1] + [1] * (v.ndim - 2))
    out = _E["add"](v, b)
    from .runtime.ops.shape import check_shape
    return check_shape(out, v, f"{op}: bias would broadcast value of shape {{full}} to {{got}}")


@composite_errors("dropout")
def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zero each element of `x` with probability `rate` and scale the rest by 1 / (1 - rate),
    as tf.nn.dropout: the mask is a gc.random.uniform op (fresh on every call of a compiled
    function), shaped `noise_shape` (None entries: x's dims) and broadcast to x. A Python
    rate 0 returns `x` itself. The gradient flows through the kept elements, scaled."""
    from .runtime.ops.random import uniform
    from .runtime.ops.shape import shape as _shape
    op = "dropout"
    is_number = isinstance(rate, (int, float)) and not isinstance(rate, bool)
    if is_number and not 0 <= rate < 1:
        raise ValueError(f"{op}: rate must be a scalar tensor or a float in [0, 1), "
                         f"got rate={rate}")
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise ValueError(f"{op}: x must be a floating point tensor, as it is scaled; got "
                         f"dtype {x.dtype.name}")
    if is_number and rate == 0:
        return x
    if is_number:
        kept = _E["multiply"](x, convert_to_tensor(1.0 / (1.0 - rate), x.dtype))
    else:
        r = convert_to_tensor(rate)
        if r.ndim != 0:
            raise ValueError(f"{op}: rate must be a scalar, got shape {list(r.shape)}")
        if r.dtype is not x.dtype:
            if not r.dtype.is_floating:
                raise ValueError(f"{op}: rate of dtype {r.dtype.name} must be a float, as x "
                                 f"({x.dtype.name})")
            raise ValueError(f"{op}: rate's dtype {r.dtype.name} must be x's "
                             f"({x.dtype.name})")
        rate = r
        kept = _E["divide"](x, _E["subtract"](constant(1, x.dtype), r))
    if noise_shape is None:
        noise = list(x.shape) if None not in x.shape else _shape(x)
    else:
        items = list(noise_shape)
        noise = [(x.shape[i] if x.shape[i] is not None else _shape(x)[i])
                 if d is None and i < x.ndim else d for i, d in enumerate(items)]
    keep = _E["greater_equal"](uniform(noise, dtype=x.dtype, seed=seed), rate)
    return _E["where"](keep, kept, 0.0)


__all__ = ["relu", "relu6", "leaky_relu", "elu", "gelu", "sigmoid", "softplus", "softmax",
           "log_softmax", "sparse_softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits", "moments",
           "l2_loss", "silu", "swish", "bias_add", "dropout", "embedding_lookup", "top_k"]

# errors of these functions' own checks name the user's line while tracing, as ops' do
globals().update({_n: located_errors(globals()[_n]) for _n in __all__})
