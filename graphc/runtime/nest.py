"""Flatten and rebuild nests (lists, tuples, namedtuples, dicts) of values."""


def is_nest(x):
    return isinstance(x, (list, tuple, dict))


def flatten(x):
    """Leaves of `x` in a fixed order (dicts by sorted key)."""
    out = []
    _flatten(x, out)
    return out


def _flatten(x, out):
    if isinstance(x, dict):
        for k in sorted(x, key=repr):
            _flatten(x[k], out)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _flatten(v, out)
    else:
        out.append(x)


def pack_as(structure, leaves):
    """Rebuild `structure` with its leaves replaced, in flatten order, by `leaves`."""
    it = iter(leaves)
    result = _pack(structure, it)
    return result


def _pack(s, it):
    if isinstance(s, dict):
        vals = {k: _pack(s[k], it) for k in sorted(s, key=repr)}
        return {k: vals[k] for k in s}
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*[_pack(v, it) for v in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_pack(v, it) for v in s)
    return next(it)


def paths(x, prefix=""):
    """A readable path for each leaf, in flatten order: `[0]`, `['a']`, `.field`."""
    if isinstance(x, dict):
        return [p for k in sorted(x, key=repr) for p in paths(x[k], f"{prefix}[{k!r}]")]
    if isinstance(x, (list, tuple)):
        return [p for i, v in enumerate(x) for p in paths(v, f"{prefix}[{i}]")]
    return [prefix]


def same_structure(a, b):
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b) and \
            all(same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and \
            len(a) == len(b) and all(map(same_structure, a, b))
    return True
