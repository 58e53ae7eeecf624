"""Traced functions covering every kernel kind the CUDA generators emit, shared by the
simulator tests and the PTX compile check (`ptx_check.py`)."""
import graphc as gc

F32, F64, I32, I64, B = gc.float32, gc.float64, gc.int32, gc.int64, gc.bool


def softmax(x):
    e = gc.exp(x - gc.reduce_max(x, axis=-1, keepdims=True))
    return e / gc.reduce_sum(e, axis=-1, keepdims=True)


def logsumexp(x):
    m = gc.reduce_max(x, axis=-1, keepdims=True)
    return gc.log(gc.reduce_sum(gc.exp(x - m), axis=-1, keepdims=True)) + m


def layernorm(x, g, b):
    mean = gc.reduce_mean(x, axis=-1, keepdims=True)
    xc = x - mean
    var = gc.reduce_mean(xc * xc, axis=-1, keepdims=True)
    return xc * gc.rsqrt(var + 1e-5) * g + b


def float_math(x, y):
    """Every float template: libdevice math, rounding, NaN-propagating max/min, pow (and
    pow with a scalar exponent 0.5: C's pow, not numpy's sqrt)."""
    return (gc.exp(x) + gc.log(gc.abs(x)) + gc.log1p(gc.abs(y)) + gc.sqrt(gc.abs(x)) +
            gc.sin(x) * gc.cos(y) + gc.tan(x) + gc.tanh(y) + gc.erf(x) + gc.floor(x) +
            gc.ceil(y) + gc.round(x) + gc.sign(x) + gc.maximum(x, y) + gc.minimum(x, y) +
            gc.pow(gc.abs(x), y) + x ** 0.5 + x / y + gc.floordiv(x, y) + gc.mod(x, y) +
            gc.where(x > y, x, -y) + gc.cast(gc.cast(x, gc.int32), x.dtype) +
            gc.cast(gc.cast(y, gc.int64), x.dtype) + gc.cast(x > 0, x.dtype))


def int_math(x, y):
    """Integer templates: wrapping + - * and negation, abs, square, max/min, compares."""
    return (x + y) * y - (-x) + gc.abs(x) + gc.square(y) + gc.maximum(x, y) - \
        gc.minimum(x, y) + gc.sign(x) + gc.cast(gc.logical_and(x > y, gc.logical_not(x < 0)),
                                               x.dtype)


def bool_logic(a, b):
    return gc.logical_or(gc.logical_and(a, b), gc.logical_not(a)) == b


def reductions(kind, dtype, axis):
    fn = {"sum": gc.reduce_sum, "prod": gc.reduce_prod, "max": gc.reduce_max,
          "min": gc.reduce_min, "all": gc.reduce_all, "any": gc.reduce_any}[kind]

    def f(x):
        if kind in ("all", "any"):
            return fn(x > 0, axis=axis)
        return fn(x * 2, axis=axis)
    f.__name__ = f"reduce_{kind}_{dtype.name}_{axis}"
    return f


FLOATS, INTS = (F32, F64), (I32, I64)
KINDS = ("sum", "prod", "max", "min", "all", "any")


def multiply_add(x, y, z):
    """x * y + z: NVVM would contract it into an fma (inf vs finite when x * y overflows)."""
    return x * y + z - gc.square(y) * x


def folded(dtype):
    """A step with gc.Variables of `dtype` whose kernels folding.py folds: a weight update
    (elementwise + assign_sub), a bias-like update (column sum, scale, assign_add), a row
    max with a kept-axes input into an assign, and a full mean (sum and divide) or sum."""
    import numpy as np
    w = gc.Variable(np.zeros((8, 16), dtype.np))
    b = gc.Variable(np.zeros(16, dtype.np))
    s = gc.Variable(np.zeros(8, dtype.np))

    def step(x, g, k):
        w.assign_sub(g * 3)
        b.assign_add(gc.reduce_sum(x, axis=0) * 2)
        s.assign(gc.reduce_max(x, axis=1) * k - 1)
        return gc.reduce_mean(x * 2) if dtype.is_floating else gc.reduce_sum(x) * 2
    step.__name__ = f"folded_{dtype.name}"
    return step, [gc.TensorSpec([8, 16], dtype), gc.TensorSpec([8, 16], dtype),
                  gc.TensorSpec([8], dtype)]


def scalar_folded(dtype):
    """folding.py's scalar merges: a rate from a 0-d int64 counter (Adam's shape) that the
    kernels of an elementwise update, a column sum's update and a row max (in its full
    chain, and in its epilogue with a kept-axes input) compute themselves; and 0-d updates
    by a constant -- the counter's, right after the first update, and another after the
    row kernel -- each written by one thread."""
    import numpy as np
    t = gc.Variable(np.int64(3))
    u = gc.Variable(np.zeros((), dtype.np))
    w = gc.Variable(np.zeros((8, 16), dtype.np))
    b = gc.Variable(np.zeros(16, dtype.np))

    def step(x, g, k):
        n = gc.cast(t + np.int64(1), dtype)
        r = gc.sqrt(1 - 0.5 ** n) / (1 - 0.25 ** n) if dtype.is_floating else n * 3 - 1
        w.assign_sub(g * r)
        t.assign_add(np.int64(1))
        b.assign_add(gc.reduce_sum(x, axis=0) * r)
        out = gc.reduce_max(x * r, axis=1) + k * r
        u.assign_sub(np.ones((), dtype.np))
        return out
    step.__name__ = f"scalars_{dtype.name}"
    return step, [gc.TensorSpec([8, 16], dtype), gc.TensorSpec([8, 16], dtype),
                  gc.TensorSpec([8], dtype)]
