"""JSON forms of what a saved trace needs besides its graph: its signature key (the same
tuples `runtime.signature.encode` makes), its output structure, and the Python
parameters of its function (to bind a call's args and kwargs)."""
import collections
import inspect
import struct

from ..runtime import signature as sig
from ..runtime.concrete import _Slot
from .serialize import SerializeError

_NAMED = {}      # (name, fields) -> namedtuple class made on load


# -- Python values (baked-in arguments, dict keys, defaults) ------------------------------

def py_to_json(x, where):
    t = type(x)
    if x is None:
        return ["none"]
    if t is bool:
        return ["bool", x]
    if t is int:
        return ["int", str(x)]
    if t is float:
        return ["float", struct.pack("<d", x).hex()]
    if t is str:
        return ["str", x]
    if t is bytes:
        return ["bytes", x.hex()]
    if t is complex:
        return ["complex", struct.pack("<dd", x.real, x.imag).hex()]
    if t is tuple:
        return ["tuple", [py_to_json(v, where) for v in x]]
    raise SerializeError(f"{where}: Python value {x!r} of type {t.__name__} cannot be saved")


def py_from_json(d, fail):
    if not isinstance(d, list) or not d or d[0] not in _PY_READERS:
        fail(f"bad Python value entry {d!r}")
    try:
        return _PY_READERS[d[0]](d, fail)
    except (ValueError, TypeError, struct.error, IndexError):
        fail(f"bad Python value entry {d!r}")


_PY_READERS = {
    "none": lambda d, f: None,
    "bool": lambda d, f: d[1] if type(d[1]) is bool else f(f"bad bool {d!r}"),
    "int": lambda d, f: int(d[1]) if len(d[1]) < 400 else f("int too long"),
    "float": lambda d, f: struct.unpack("<d", bytes.fromhex(d[1]))[0],
    "str": lambda d, f: d[1] if type(d[1]) is str else f(f"bad str {d!r}"),
    "bytes": lambda d, f: bytes.fromhex(d[1]),
    "complex": lambda d, f: complex(*struct.unpack("<dd", bytes.fromhex(d[1]))),
    "tuple": lambda d, f: tuple(py_from_json(v, f) for v in d[1]),
}


# -- signature keys --------------------------------------------------------------------------

def key_to_json(k, where):
    tag = k[0]
    if tag == sig.TENSOR:
        return ["tensor", k[1].name, list(k[2])]
    if tag == sig.RESOURCE:
        return ["variable", k[1].name, list(k[2])]
    if tag in (sig.LIST, sig.TUPLE):
        return ["list" if tag == sig.LIST else "tuple", [key_to_json(x, where) for x in k[1]]]
    if tag == sig.DICT:
        return ["dict", [[py_to_json(n, where), key_to_json(x, where)] for n, x in k[1]]]
    if tag == sig.NAMED:
        return ["named", k[1].__name__, list(k[1]._fields),
                [key_to_json(x, where) for x in k[2]]]
    if tag == sig.PY:
        value = k[2].value if k[1] is float else k[2]
        return ["py", py_to_json(value, where)]
    raise SerializeError(
        f"{where} was traced with a Python object argument {sig.describe(k)} (keyed by "
        "identity), which a SavedModel cannot hold. Fix: pass tensors or Python numbers "
        "to the traces you save.")


def key_from_json(d, reader):
    fail = reader.fail
    if not isinstance(d, list) or not d:
        fail(f"bad signature entry {d!r}")
    tag = d[0]
    if tag in ("tensor", "variable") and len(d) == 3:
        return (sig.TENSOR if tag == "tensor" else sig.RESOURCE, reader.dtype(d[1]),
                reader.shape(d[2]))
    if tag in ("list", "tuple") and len(d) == 2 and isinstance(d[1], list):
        return (sig.LIST if tag == "list" else sig.TUPLE,
                tuple(key_from_json(x, reader) for x in d[1]))
    if tag == "dict" and len(d) == 2 and isinstance(d[1], list):
        items = []
        for item in d[1]:
            if not isinstance(item, list) or len(item) != 2:
                fail(f"bad dict signature entry {item!r}")
            items.append((py_from_json(item[0], fail), key_from_json(item[1], reader)))
        return (sig.DICT, tuple(items))
    if tag == "named" and len(d) == 4 and isinstance(d[3], list):
        cls = named_class(d[1], d[2], fail)
        return (sig.NAMED, cls, tuple(key_from_json(x, reader) for x in d[3]))
    if tag == "py" and len(d) == 2:
        v = py_from_json(d[1], fail)
        return sig.encode(v, [])
    fail(f"bad signature entry {d!r}")


def named_class(name, fields, fail):
    if not (isinstance(name, str) and name.isidentifier() and isinstance(fields, list)
            and all(isinstance(f, str) and f.isidentifier() for f in fields)):
        fail(f"bad namedtuple entry {name!r} {fields!r}")
    cls = _NAMED.get((name, tuple(fields)))
    if cls is None:
        cls = _NAMED.setdefault((name, tuple(fields)), collections.namedtuple(name, fields))
    return cls


def matches(saved, key):
    """`runtime.signature.matches`, except that namedtuples match by name and fields (a
    loaded model has no class of the caller's to compare by identity)."""
    if saved[0] == sig.NAMED and key[0] == sig.NAMED:
        return (saved[1].__name__ == key[1].__name__ and saved[1]._fields == key[1]._fields
                and len(saved[2]) == len(key[2]) and all(map(matches, saved[2], key[2])))
    if saved[0] == key[0] and saved[0] in (sig.LIST, sig.TUPLE):
        return len(saved[1]) == len(key[1]) and all(map(matches, saved[1], key[1]))
    if saved[0] == key[0] == sig.DICT:
        return [k for k, _ in saved[1]] == [k for k, _ in key[1]] and \
            all(matches(a, b) for (_, a), (_, b) in zip(saved[1], key[1]))
    return sig.matches(saved, key)


def key_to_spec(k):
    """The structured input signature part a key stands for (TensorSpecs for tensors)."""
    tag = k[0]
    if tag in (sig.TENSOR, sig.RESOURCE):
        return sig.TensorSpec(k[2], k[1])
    if tag in (sig.LIST, sig.TUPLE):
        parts = [key_to_spec(x) for x in k[1]]
        return parts if tag == sig.LIST else tuple(parts)
    if tag == sig.DICT:
        return {n: key_to_spec(x) for n, x in k[1]}
    if tag == sig.NAMED:
        return k[1](*[key_to_spec(x) for x in k[2]])
    return k[2].value if k[1] is float else k[2]


# -- output structures -------------------------------------------------------------------

def structure_to_json(s, where):
    if type(s) is _Slot:
        return ["out", s.index]
    if s is None:
        return ["none"]
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return ["named", type(s).__name__, list(s._fields),
                [structure_to_json(x, where) for x in s]]
    if isinstance(s, (list, tuple)):
        return ["list" if isinstance(s, list) else "tuple",
                [structure_to_json(x, where) for x in s]]
    if isinstance(s, dict):
        return ["dict", [[py_to_json(k, where), structure_to_json(v, where)]
                         for k, v in s.items()]]
    raise SerializeError(f"{where}: output structure {s!r} cannot be saved")


def structure_from_json(d, n_outputs, fail):
    if not isinstance(d, list) or not d:
        fail(f"bad output structure {d!r}")
    tag = d[0]
    if tag == "out" and len(d) == 2 and type(d[1]) is int and 0 <= d[1] < n_outputs:
        return _Slot(d[1])
    if tag == "none":
        return None
    if tag in ("list", "tuple") and len(d) == 2 and isinstance(d[1], list):
        parts = [structure_from_json(x, n_outputs, fail) for x in d[1]]
        return parts if tag == "list" else tuple(parts)
    if tag == "dict" and len(d) == 2 and isinstance(d[1], list):
        out = {}
        for item in d[1]:
            if not isinstance(item, list) or len(item) != 2:
                fail(f"bad output structure entry {item!r}")
            out[py_from_json(item[0], fail)] = structure_from_json(item[1], n_outputs, fail)
        return out
    if tag == "named" and len(d) == 4 and isinstance(d[3], list):
        cls = named_class(d[1], d[2], fail)
        return cls(*[structure_from_json(x, n_outputs, fail) for x in d[3]])
    fail(f"bad output structure {d!r}")


# -- parameters ------------------------------------------------------------------------------

def params_to_json(params):
    out = []
    for p in params:
        item = {"name": p.name, "kind": int(p.kind)}
        if p.default is not p.empty:
            try:
                item["default"] = py_to_json(p.default, "default")
            except SerializeError:
                pass          # a default that cannot be saved: the argument must be given
        out.append(item)
    return out


def params_from_json(items, fail):
    params = []
    if not isinstance(items, list):
        fail(f"bad parameter list {items!r}")
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or \
                not item["name"].isidentifier() or item.get("kind") not in range(5):
            fail(f"bad parameter entry {item!r}")
        default = inspect.Parameter.empty
        if "default" in item:
            default = py_from_json(item["default"], fail)
        try:
            params.append(inspect.Parameter(item["name"], inspect._ParameterKind(item["kind"]),
                                            default=default))
        except ValueError as e:
            fail(f"bad parameter entry {item!r}: {e}")
    try:
        inspect.Signature(params)
    except ValueError as e:
        fail(f"bad parameter list: {e}")
    return params

