"""gc.function's arguments: the canonical list of values a call's (args, kwargs) bind to,
input_signature checks and conversions, and the helpers reduce_retracing uses on keys."""
import inspect

from ..errors import InputSignatureError
from . import signature as sig
from .tensor import Tensor


class _ParamInfo:
    """The Python signature, for turning (args, kwargs) into one canonical list of values."""

    def __init__(self, fn, skip_self):
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)]
        if skip_self and params:
            params = params[1:]
        self.params = params
        self.names = [p.name for p in params]
        kinds = {p.kind for p in params}
        simple = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        self.n_simple = len(params) if simple else -1
        self.has_var = bool(kinds & {inspect.Parameter.VAR_POSITIONAL,
                                     inspect.Parameter.VAR_KEYWORD})
        self.sig = inspect.Signature(params)
        # bind(): keywords and defaults without inspect (its bind costs ~10 us a call)
        self.n_positional = -1 if self.has_var else sum(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        self.by_keyword = {p.name: i for i, p in enumerate(params)
                           if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        self.defaults = [p.default for p in params]

    def bind(self, args, kwargs):
        """The canonical values of a call of a function without *args / **kwargs, or None
        where inspect's bind must decide (an error to report, or a signature with them)."""
        n = len(args)
        if n > self.n_positional:       # also every signature with *args or **kwargs
            return None
        values = list(args)
        values += self.defaults[n:]
        index = self.by_keyword
        for name, v in kwargs.items():
            i = index.get(name, -1)
            if i < n:                   # unknown, positional-only, or given twice
                return None
            values[i] = v
        empty = inspect.Parameter.empty
        for v in values:
            if v is empty:              # a required argument is missing
                return None
        return values

    def canonicalize(self, args, kwargs, fname):
        values = self.bind(args, kwargs)
        if values is not None:
            return values
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{fname}(): {e}") from None
        bound.apply_defaults()
        out = []
        for p in self.params:
            v = bound.arguments[p.name]
            if p.kind is p.VAR_POSITIONAL:
                v = tuple(v)
            elif p.kind is p.VAR_KEYWORD:
                v = dict(v)
            out.append(v)
        return out

    def rebuild(self, values):
        """canonical values -> (args, kwargs) to call the Python function with."""
        return rebuild_call(self.params, values)


def _check_input_signature(specs, params):
    if not isinstance(specs, (list, tuple)) or _is_named(specs):
        raise TypeError(f"input_signature must be a list or tuple with one gc.TensorSpec (or "
                        f"a nest of them) per argument, got {specs!r}; e.g. "
                        "input_signature=[gc.TensorSpec([None], gc.float32)]")
    specs = list(specs)
    for s in specs:
        _check_spec_nest(s)
    if not params.has_var and len(specs) > len(params.params):
        raise TypeError(f"input_signature has {len(specs)} specs but the function takes "
                        f"{len(params.params)} arguments")
    return specs


def _is_named(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _check_spec_nest(s):
    """A TensorSpec, or a list, tuple, dict or namedtuple of them (as TF's nests)."""
    if isinstance(s, sig.TensorSpec):
        return
    if isinstance(s, dict):
        items = s.values()
    elif isinstance(s, (list, tuple)) and s:
        items = s
    else:
        raise TypeError(f"input_signature must be a list of gc.TensorSpec (or of lists, "
                        f"tuples, dicts or namedtuples of them), got {s!r}")
    for x in items:
        _check_spec_nest(x)


def _conform_nest(fname, name, v, spec):
    """`v` checked against a nest of specs: the same structure, each leaf conformed."""
    if isinstance(spec, sig.TensorSpec):
        return _conform_leaf(fname, name, v, spec)
    if v is spec:
        return spec                     # get_concrete_function() with no arguments
    if isinstance(spec, dict):
        if not isinstance(v, dict) or set(v) != set(spec):
            raise TypeError(f"{fname}(): argument '{name}' must be a dict with keys "
                            f"{sorted(spec, key=str)} as in its input_signature, got {v!r}")
        return {k: _conform_nest(fname, f"{name}[{k!r}]", v[k], spec[k]) for k in spec}
    if not isinstance(v, (list, tuple)) or len(v) != len(spec) or _is_named(spec) and not (
            _is_named(v) and type(v).__name__ == type(spec).__name__
            and v._fields == spec._fields):       # by name: a loaded model has its own class
        kind = type(spec).__name__ if _is_named(spec) else "a list or tuple"
        raise TypeError(f"{fname}(): argument '{name}' must be {kind} of {len(spec)} items "
                        f"as in its input_signature {spec!r}, got {v!r}")
    parts = [_conform_nest(fname, f"{name}[{i}]", x, s) for i, (x, s) in enumerate(zip(v, spec))]
    return type(spec)(*parts) if _is_named(spec) else type(spec)(parts)


def _conform(values, specs, params, fname):
    """Check (and convert Python data) for a call of a function with an input_signature.

    Parameters past the signature keep their defaults (as in TF); passing them is an error.
    """
    names = params.names
    extra = values[len(specs):]
    for p, v in zip(params.params[len(specs):], extra):
        if p.default is p.empty or v is not p.default:
            raise TypeError(f"{fname}() has input_signature of {len(specs)} tensors but was called "
                            f"with {len(specs) + len(extra)} arguments (argument '{p.name}' is "
                            "not in the input_signature)")
    out = [_conform_nest(fname, name, v, spec) for name, v, spec in zip(names, values, specs)]
    return out + list(extra)


def _conform_leaf(fname, name, v, spec):
    from .dispatch import constant
    if isinstance(v, sig.TensorSpec):     # get_concrete_function(spec): it must fit, as in TF
        if v.dtype is not spec.dtype:
            raise TypeError(f"{fname}(): argument '{name}' is {v!r} but input_signature "
                            f"expects {spec!r}")
        if not spec.is_compatible_with(v):
            raise InputSignatureError(f"{fname}(): argument '{name}' is {v!r}, whose shape "
                                      f"does not match input_signature {spec!r}")
        return spec
    if type(v) is Tensor or hasattr(v, "dtype") and hasattr(v, "shape"):
        from .. import dtypes as _dt
        dtype = _dt.as_dtype(getattr(v, "dtype"))
        if dtype is not spec.dtype:
            raise TypeError(f"{fname}(): argument '{name}' has dtype {dtype.name} but "
                            f"input_signature expects {spec!r}")
        if type(v) is Tensor:
            t = v
        elif hasattr(v, "__cuda_array_interface__") or hasattr(v, "copy_to_host"):
            from .dispatch import convert_to_tensor     # a device array stays on the device:
            t = convert_to_tensor(v)                   # no host copy (dtype checked above)
        else:
            t = constant(v, spec.dtype)
    else:
        try:
            t = constant(v, spec.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{fname}(): argument '{name}'={v!r} cannot be converted for "
                            f"input_signature {spec!r}: {e}") from None
    if not spec.is_compatible_with(t):
        raise InputSignatureError(f"{fname}(): argument '{name}' has shape {list(t.shape)} "
                                  f"which does not match input_signature {spec!r}")
    return t


_F32_MAX = 3.4028234663852886e38


def _changing_scalars(old, key):
    """Positions of top-level Python float arguments whose value differs between two keys.
    Only floats: a Python int often drives Python structure (`[0] * n`, shapes, slicing)
    where a tensor would change the meaning, so ints stay keyed by value."""
    if len(old) != len(key):
        return set()
    return {i for i, (a, b) in enumerate(zip(old, key))
            if a[0] == sig.PY == b[0] and a[1] is float is b[1] and a != b}


def _as_tensors(values, positions):
    """The float arguments at `positions` as float32 tensors (TF's type for a Python float),
    except a finite value float32 cannot hold: it stays a Python value (its own trace)."""
    from .dispatch import constant
    return [constant(v) if i in positions and type(v) is float and not
            (abs(v) > _F32_MAX and v == v and abs(v) != float("inf")) else v
            for i, v in enumerate(values)]


def _generalize_all(old, key):
    if len(old) != len(key):
        return None
    parts = [sig.generalize(a, b) for a, b in zip(old, key)]
    return None if None in parts else tuple(parts)


def _identity_refs(k):
    tag = k[0]
    if tag == sig.OBJ:
        yield k[1]
    elif tag in (sig.LIST, sig.TUPLE):
        for x in k[1]:
            yield from _identity_refs(x)
    elif tag == sig.NAMED:
        for x in k[2]:
            yield from _identity_refs(x)
    elif tag == sig.DICT:
        for _, x in k[1]:
            yield from _identity_refs(x)


def _has_none_dim(k):
    tag = k[0]
    if tag in (sig.TENSOR, sig.RESOURCE):
        return None in k[2]
    if tag in (sig.LIST, sig.TUPLE):
        return any(_has_none_dim(x) for x in k[1])
    if tag == sig.NAMED:
        return any(_has_none_dim(x) for x in k[2])
    if tag == sig.DICT:
        return any(_has_none_dim(x) for _, x in k[1])
    return False


def rebuild_call(params, values):
    """Values bound to `params` (inspect.Parameter, in order) -> (args, kwargs) for a call."""
    args, kwargs = [], {}
    for p, v in zip(params, values):
        if p.kind is p.VAR_POSITIONAL:
            args.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(v)
        elif p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = v
        else:
            args.append(v)
    return args, kwargs
