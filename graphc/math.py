"""gc.math: graphc's ops under the names TF 2.21 gives them in tf.math (only names tf.math
has), plus the tf.math-only composites (is_nan, divide_no_nan, reduce_variance, ...)."""
from . import nn as _nn
from .runtime.context import located_errors as _located
from .runtime.ops import PUBLIC as _OPS
from .runtime.ops.math_extras import MATH as _MATH
from .runtime.ops.sorting import MATH as _SORTING
from .runtime.ops.segments import MATH as _SEGMENTS

_FROM_OPS = [
    "abs", "add", "add_n", "argmax", "argmin", "ceil", "cos", "cumsum", "divide", "equal",
    "erf", "exp", "floor", "floordiv", "greater", "greater_equal", "less", "less_equal", "log",
    "log1p", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum",
    "mod", "multiply", "negative", "not_equal", "pow", "reduce_all", "reduce_any",
    "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
    "reduce_sum", "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "square", "subtract",
    "tan", "tanh", "truediv"]
globals().update({_n: _OPS[_n] for _n in _FROM_OPS})
floormod = _OPS["mod"]          # tf.math.floormod is tf.math.mod
softmax = _nn.softmax
log_softmax = _nn.log_softmax
softplus = _nn.softplus
_MATH = {**_MATH, **_SORTING, **_SEGMENTS}
globals().update({_n: _located(_f) for _n, _f in _MATH.items()})
top_k = _nn.top_k              # tf.nn.top_k is tf.math.top_k

__all__ = sorted(_FROM_OPS + ["floormod", "softmax", "log_softmax", "softplus"] + list(_MATH))
