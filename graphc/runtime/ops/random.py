"""gc.random: stateful random ops that draw fresh numbers on every call of a compiled function.

A global numpy Generator feeds the ops; `set_seed` resets it so whole runs are reproducible.
An op-level `seed` gives that op its own stream (derived from the global seed and its own),
one per (op, dtype, seed) as TF's eager kernels: `uniform(seed=5)` does not advance the
stream of `normal(seed=5)`. Eager and compiled calls draw from the same streams, so a
compiled function gives what its Python gives in the same state (unlike TF, where each
tf.function has sequences of its own).
"""
import operator

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..context import composite_errors
from ..dispatch import bind, convert_like, convert_to_tensor
from ..registry import register, RANDOM
from ..tensor import Tensor
from ._rules import FLOAT, INTEGER, check_kind, tensor

_state = {"seed": None, "rng": np.random.default_rng(), "streams": {}}


def _seed_int(seed):
    """A seed as numpy's SeedSequence takes it: TF accepts negative seeds, int tensors and
    floats (truncated), so fold those into [0, 2**64)."""
    if type(seed) is float:
        seed = int(seed)
    return operator.index(seed) % 2**64


def set_seed(seed):
    """Make every later random op reproducible (like tf.random.set_seed); `None` forgets
    the global seed (unseeded ops draw fresh entropy again; op-seeded ones stay
    reproducible, as TF's)."""
    seed = None if seed is None else _seed_int(seed)
    _state["seed"] = seed
    _state["rng"] = np.random.default_rng(seed)
    _state["streams"] = {}


def _generator(seed, key):
    if seed is None:
        return _state["rng"]
    streams = _state["streams"]
    stream = streams.get((key, seed))
    if stream is None:      # setdefault: threads asking at once share one stream
        stream = streams.setdefault((key, seed), np.random.default_rng(
            [_state["seed"] or 0, seed]))
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
    z = _generator(seed, ("normal", dtype.name)).standard_normal(
        _run_shape("random.normal", shape, dims), dtype=dtype.np)
    return (z * stddev + mean).astype(dtype.np, copy=False)


def _uniform(lo, hi, *dims, shape, dtype, seed):
    u = _generator(seed, ("uniform", dtype.name)).random(
        _run_shape("random.uniform", shape, dims), dtype=dtype.np)
    return (u * (hi - lo) + lo).astype(dtype.np, copy=False)


def _uniform_int(lo, hi, *dims, shape, dtype, seed):
    lo, hi = int(lo), int(hi)
    if lo >= hi:
        raise InvalidArgumentError(f"random.uniform: an integer draw needs minval < maxval, "
                                   f"got minval={lo}, maxval={hi}")
    return _generator(seed, ("uniform_int", dtype.name)).integers(
        lo, hi, _run_shape("random.uniform", shape, dims), dtype=dtype.np)


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


def _is_default(x, value):
    """A parameter left at its Python default (no ops needed to apply it)."""
    return type(x) is float and x == value


@composite_errors("random.normal")
def normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    """Samples from N(mean, stddev^2); fresh on every call of a compiled function. `shape`
    may be a tensor known only at run time (`gc.shape(x)`). As TF's, the draw is
    `standard_normal * stddev + mean`: tensor parameters broadcast against the shape and
    gradients flow to them."""
    dtype = _dt.as_dtype(dtype)
    static, dims = _shape(shape)
    seed = None if seed is None else _seed_int(seed)
    mean, stddev = (mean if _is_default(mean, 0.0) else convert_to_tensor(mean, dtype),
                    stddev if _is_default(stddev, 1.0) else convert_to_tensor(stddev, dtype))
    z = bind("random_normal", convert_to_tensor(0.0, dtype), convert_to_tensor(1.0, dtype),
             *dims, shape=static, dtype=dtype, seed=seed)
    if type(stddev) is Tensor:
        z = z * stddev
    return z + mean if type(mean) is Tensor else z


@composite_errors("random.uniform")
def uniform(shape, minval=0.0, maxval=1.0, dtype=_dt.float32, seed=None, name=None):
    """Samples from U[minval, maxval); fresh on every call of a compiled function. `shape`
    may be a tensor known only at run time (`gc.shape(x)`). For an integer dtype (as TF)
    maxval must be given, minval and maxval are scalars and the draws are integers in
    [minval, maxval). For a float dtype the draw is, as TF's,
    `u * (maxval - minval) + minval`: tensor bounds broadcast and gradients flow to them."""
    dtype = _dt.as_dtype(dtype)
    static, dims = _shape(shape)
    seed = None if seed is None else _seed_int(seed)
    if dtype.is_integer:
        if maxval is None or type(maxval) is float and maxval == 1.0:
            raise ValueError(f"random.uniform: an integer dtype ({dtype.name}) needs maxval, "
                             "e.g. gc.random.uniform(shape, 0, 10, dtype=gc.int32)")
        if type(minval) is float and minval == 0.0:
            minval = 0
        return bind("random_uniform_int", convert_to_tensor(minval, dtype),
                    convert_to_tensor(maxval, dtype), *dims, shape=static, dtype=dtype,
                    seed=seed)
    if _is_default(minval, 0.0) and _is_default(maxval, 1.0):
        lo = hi = None
    else:
        lo, hi = convert_to_tensor(minval, dtype), convert_to_tensor(maxval, dtype)
    u = bind("random_uniform", convert_to_tensor(0.0, dtype), convert_to_tensor(1.0, dtype),
             *dims, shape=static, dtype=dtype, seed=seed)
    return u if lo is None else u * (hi - lo) + lo
