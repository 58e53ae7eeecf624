"""gc.nn: activations, softmax and cross-entropy losses, all composites of graphc primitives
(so they trace, fuse and differentiate like any other user code). Keyword names follow TF."""
import math

import numpy as np

from . import dtypes as _dt
from .runtime.autodiff.tape import stop_gradient
from .runtime.context import composite_errors, located_errors
from .runtime.dispatch import convert_to_tensor
from .runtime.ops import elementwise as _ew
from .runtime.ops._rules import FLOAT, INTEGER, check_kind
from .runtime.ops.reduce import PUBLIC as _R, normalize_axis
from .runtime.ops.indexing import check_class_ids, one_hot as _one_hot

_E = _ew.PUBLIC


def _float(op, x):
    x = convert_to_tensor(x)
    check_kind(op, x.type, FLOAT)
    return x


@composite_errors("relu")
def relu(features, name=None):
    """max(features, 0). Written maximum(0, x): maximum's gradient goes to its first operand
    on a tie, so x gets none at 0, as TF's ReluGrad (x > 0)."""
    x = convert_to_tensor(features)
    return _E["maximum"](0, x)


@composite_errors("relu6")
def relu6(features, name=None):
    """min(max(features, 0), 6), with the constants first so that, as TF's Relu6Grad, x has
    gradient only where 0 < x < 6 (ties go to the first operand)."""
    x = convert_to_tensor(features)
    return _E["minimum"](6, _E["maximum"](0, x))


@composite_errors("leaky_relu")
def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, alpha * features elsewhere."""
    x = convert_to_tensor(features)
    if x.dtype.is_integer:   # as TF: integer features are computed in float32
        x = _ew.cast(x, _dt.float32)
    if isinstance(alpha, (int, float)):   # TF's alpha is a float32 attr: 0.2 is 0.2f on float64
        alpha = float(np.float32(alpha))
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
    y = convert_to_tensor(labels) if type(labels) is type(x) or hasattr(labels, "_as_tensor") \
        else convert_to_tensor(labels, x.dtype)
    y = _ew.cast(y, x.dtype)
    axis = normalize_axis(op, axis, x.ndim)
    from .runtime.ops.shape import check_shape
    y = check_shape(y, x, f"{op}: labels of shape {{got}} and logits of shape {{full}} must "
                    "have the same shape")
    return _E["negative"](_R["reduce_sum"](_E["multiply"](y, log_softmax(x, axis)), axis))


__all__ = ["relu", "relu6", "leaky_relu", "elu", "gelu", "sigmoid", "softplus", "softmax",
           "log_softmax", "sparse_softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits"]

# errors of these functions' own checks name the user's line while tracing, as ops' do
globals().update({_n: located_errors(globals()[_n]) for _n in __all__})
