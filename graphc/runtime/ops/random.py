"""gc.random: stateful random ops that draw fresh numbers on every call of a compiled function.

A global numpy Generator feeds the ops; `set_seed` resets it so whole runs are reproducible.
An op-level `seed` gives that op its own stream (derived from the global seed and its own).
"""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..context import composite_errors
from ..dispatch import bind, convert_like, convert_to_tensor
from ..registry import register, RANDOM
from ._rules import FLOAT, INTEGER, check_kind, tensor

_state = {"seed": None, "rng": np.random.default_rng(), "streams": {}}


def set_seed(seed):
    """Make every later random op reproducible (like tf.random.set_seed)."""
    _state["seed"] = int(seed)
    _state["rng"] = np.random.default_rng(int(seed))
    _state["streams"] = {}


def _generator(seed):
    if seed is None:
        return _state["rng"]
    streams = _state["streams"]
    stream = streams.get(seed)
    if stream is None:      # setdefault: threads asking at once share one stream
        stream = streams.setdefault(seed, np.random.default_rng([_state["seed"] or 0,
                                                                 int(seed)]))
    return stream


def _infer(name, kind=FLOAT):
    def infer(types, shape, dtype, seed):
        for t in types[:2]:
            check_kind(name, t, kind)
            if t.shape != ():
                raise ValueError(f"{name}: parameters must be scalars, got {t}")
        if kind == FLOAT and not dtype.is_floating:
            raise TypeError(f"{name}: dtype must be float32 or float64, got {dtype.name}")
        if shape is None:            # the dims come in as a 1-D int tensor, known at run time
            dims = types[2]
            check_kind(name, dims, INTEGER, "shape")
            if len(dims.shape) != 1 or dims.shape[0] is None:
                raise ValueError(f"{name}: a shape tensor must be 1-D with a static length, "
                                 f"got {dims}")
            shape = (None,) * dims.shape[0]
        return [tensor(dtype, shape)]
    return infer


def _run_shape(name, shape, dims):
    """The static shape, or the one a shape tensor gives when the graph runs."""
    if shape is not None:
        return shape
    out = tuple(int(d) for d in dims[0])
    if any(d < 0 for d in out):
        raise InvalidArgumentError(f"{name}: shape {list(out)} has a negative dimension")
    return out


def _normal(mean, stddev, *dims, shape, dtype, seed):
    z = _generator(seed).standard_normal(_run_shape("random.normal", shape, dims),
                                         dtype=dtype.np)
    return (z * stddev + mean).astype(dtype.np, copy=False)


def _uniform(lo, hi, *dims, shape, dtype, seed):
    u = _generator(seed).random(_run_shape("random.uniform", shape, dims), dtype=dtype.np)
    return (u * (hi - lo) + lo).astype(dtype.np, copy=False)


def _uniform_int(lo, hi, *dims, shape, dtype, seed):
    lo, hi = int(lo), int(hi)
    if lo >= hi:
        raise InvalidArgumentError(f"random.uniform: an integer draw needs minval < maxval, "
                                   f"got minval={lo}, maxval={hi}")
    return _generator(seed).integers(lo, hi, _run_shape("random.uniform", shape, dims),
                                     dtype=dtype.np)


register("random_normal", _infer("random.normal"), _normal, kind=RANDOM, effectful=True,
         nondiff=True)
register("random_uniform_int", _infer("random.uniform", INTEGER), _uniform_int, kind=RANDOM,
         effectful=True, nondiff=True)
register("random_uniform", _infer("random.uniform"), _uniform, kind=RANDOM, effectful=True,
         nondiff=True)


def _shape(shape):
    """(static shape, ()) or (None, (dims tensor,)) when some dims are known only at run
    time (e.g. `gc.shape(x)` of an input with None dims)."""
    from .creation import _static_shape
    s = _static_shape("random", shape)
    if s is not None:
        return s, ()
    if isinstance(shape, (list, tuple)):
        from .shape import stack
        dims = stack(convert_like(list(shape), "random"))
    else:
        dims = convert_to_tensor(shape)
    return None, (dims,)


@composite_errors("random.normal")
def normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    """Samples from N(mean, stddev^2); fresh on every call of a compiled function. `shape`
    may be a tensor known only at run time (`gc.shape(x)`)."""
    dtype = _dt.as_dtype(dtype)
    static, dims = _shape(shape)
    return bind("random_normal", convert_to_tensor(mean, dtype), convert_to_tensor(stddev, dtype),
                *dims, shape=static, dtype=dtype, seed=seed)


@composite_errors("random.uniform")
def uniform(shape, minval=0.0, maxval=1.0, dtype=_dt.float32, seed=None, name=None):
    """Samples from U[minval, maxval); fresh on every call of a compiled function. `shape`
    may be a tensor known only at run time (`gc.shape(x)`). For an integer dtype (as TF)
    maxval must be given and the draws are integers in [minval, maxval)."""
    dtype = _dt.as_dtype(dtype)
    static, dims = _shape(shape)
    if dtype.is_integer:
        if maxval is None or type(maxval) is float and maxval == 1.0:
            raise ValueError(f"random.uniform: an integer dtype ({dtype.name}) needs maxval, "
                             "e.g. gc.random.uniform(shape, 0, 10, dtype=gc.int32)")
        if type(minval) is float and minval == 0.0:
            minval = 0
        return bind("random_uniform_int", convert_to_tensor(minval, dtype),
                    convert_to_tensor(maxval, dtype), *dims, shape=static, dtype=dtype,
                    seed=seed)
    return bind("random_uniform", convert_to_tensor(minval, dtype),
                convert_to_tensor(maxval, dtype), *dims, shape=static, dtype=dtype, seed=seed)
