"""A versioned JSON form of graphc's IR (Graph / Operation / Value), and its checked reader.

Writing turns a traced graph into plain JSON data: every op with its type, inputs, typed
outputs, user location and attributes (tagged, so that ints, exact float bits, tuples,
dtypes, arrays and nested cond/while bodies come back as the same Python values). Reading
rebuilds the Graph from that data and trusts nothing in it: unknown op types, attribute
names or tags, bad types and shapes, undefined names and array sizes that disagree with
their declared shape are `GraphcError`s naming the file, found before anything is
allocated; the result passes `verify`. Nothing is executed or unpickled.
"""
import base64
import inspect
import struct
import sys

import numpy as np

from .. import dtypes as _dt
from ..errors import GraphcError
from ..runtime.graph import Graph, Operation, Value
from ..runtime.registry import REGISTRY
from ..runtime.types import ListType, ResourceType, TensorType

IR_VERSION = 2                   # 2: gradient list ops folded into tensor_list_* (upgrade.py)
INLINE_ARRAY_BYTES = 4096        # larger constants go to the saved model's constants file
MAX_ELEMENTS = 1 << 40           # no declared array or shape may claim more than this
_STREAMS = {"stdout": lambda: sys.stdout, "stderr": lambda: sys.stderr}


class SerializeError(ValueError):
    """A graph holds something that cannot be saved (e.g. a print to an open file)."""


# -- writing -------------------------------------------------------------------------------

class Writer:
    """Serializes graphs; big arrays are handed to `arrays` (key -> ndarray) by reference."""

    def __init__(self, arrays=None):
        self.arrays = {} if arrays is None else arrays

    def graph(self, g, capture_ref=None):
        """JSON data of `g`. `capture_ref(source) -> JSON` names a top-level capture's source
        (a Variable or a concrete Tensor); subgraph captures name the enclosing Value."""
        names = set()
        out = {"name": g.name, "inputs": [self._value(v, names) for v in g.inputs]}
        caps = []
        for v, src in g.captures:
            ref = {"outer": src.name} if isinstance(src, Value) else capture_ref(src)
            caps.append({"value": self._value(v, names), "source": ref})
        out["captures"] = caps
        out["ops"] = [self._op(op, names) for op in g.operations]
        out["outputs"] = [v.name for v in g.outputs]
        return out

    def _value(self, v, names):
        names.add(v.name)
        return [v.name, type_to_json(v.type)]

    def _op(self, op, names):
        return {"type": op.type, "name": op.name, "inputs": [v.name for v in op.inputs],
                "outputs": [self._value(v, names) for v in op.outputs],
                "attrs": {k: self.attr(v, f"{op.type} ({op.name}) attribute {k!r}")
                          for k, v in sorted(op.attrs.items()) if not _process_only(op, k)},
                "loc": None if op.loc is None else [str(op.loc[0]), int(op.loc[1])]
                + ([str(op.loc[2])] if len(op.loc) > 2 and op.loc[2] else [])}

    def attr(self, v, where):
        if v is None or type(v) is bool or type(v) is str:
            return v
        if type(v) is int:
            return {"int": str(v)}
        if type(v) is float:
            return {"float": struct.pack("<d", v).hex()}
        if type(v) is tuple:
            return {"tuple": [self.attr(x, where) for x in v]}
        if type(v) is list:
            return {"list": [self.attr(x, where) for x in v]}
        if isinstance(v, _dt.DType):
            return {"dtype": v.name}
        if isinstance(v, np.ndarray):
            return self._array(v, where)
        if isinstance(v, np.generic):
            return {"scalar": self._array(np.asarray(v), where)}
        if isinstance(v, Graph):
            return {"graph": self.graph(v)}
        for name, get in _STREAMS.items():
            if v is get():
                return {"stream": name}
        raise SerializeError(f"{where} is {type(v).__name__} {v!r}, which a SavedModel cannot "
                             "hold; gc.print's output_stream can be sys.stdout or sys.stderr only")

    def _array(self, a, where):
        if _dt.from_numpy(a.dtype) is None:
            raise SerializeError(f"{where}: array of dtype {a.dtype} is not a graphc dtype")
        if not a.flags.c_contiguous:
            a = a.copy(order="C")       # (np.ascontiguousarray would make a 0-d array 1-d)
        head = {"dtype": a.dtype.name, "shape": list(a.shape)}
        if a.nbytes <= INLINE_ARRAY_BYTES:
            return {"array": dict(head, data=base64.b64encode(_le(a).tobytes()).decode())}
        key = f"c{len(self.arrays)}"
        self.arrays[key] = a
        return {"array": dict(head, ref=key)}


def _le(a):
    return a.astype(a.dtype.newbyteorder("<"), copy=False)


def type_to_json(t):
    if isinstance(t, TensorType):
        return ["tensor", t.dtype.name, list(t.shape)]
    if isinstance(t, ResourceType):
        return ["resource", t.dtype.name, list(t.shape)]
    if isinstance(t, ListType):
        return ["list", t.dtype.name,
                None if t.element_shape is None else list(t.element_shape)]
    raise SerializeError(f"value type {t!r} cannot be saved")


# -- reading -------------------------------------------------------------------------------

class Reader:
    """Rebuilds graphs from JSON data written by `Writer`, checking everything.

    `where` names the file in every error; `array_ref(key, dtype, shape)` returns a stored
    constant (the caller checks it against the declared dtype and shape before reading);
    `capture(ref, type) -> source` resolves a top-level capture."""

    def __init__(self, where, array_ref=None, capture=None):
        self.where = where
        self.array_ref = array_ref
        self.capture = capture

    def fail(self, msg):
        raise GraphcError(f"{self.where}: {msg}")

    def graph(self, data, parent=None, outer=None):
        d = self._dict(data, ("name", "inputs", "captures", "ops", "outputs"), "graph")
        g = Graph(self._str(d["name"], "graph name"), parent)
        env = {}
        for item in self._list(d["inputs"], "graph inputs"):
            g.inputs.append(self._new_value(item, env))
        for item in self._list(d["captures"], "graph captures"):
            c = self._dict(item, ("value", "source"), "capture")
            v = self._new_value(c["value"], env)
            src = c["source"]
            if parent is not None:
                name = self._dict(src, ("outer",), "subgraph capture")["outer"]
                if not isinstance(name, str) or name not in outer:
                    self.fail(f"graph {g.name!r}: capture %{v.name} names an undefined outer "
                              f"value {name!r}")
                src = outer[name]
            elif self.capture is None:
                self.fail(f"graph {g.name!r} has captures but none are allowed here")
            else:
                src = self.capture(src, v.type)
            g.captures.append((v, src))
            g._capture_index[id(src)] = v
        for item in self._list(d["ops"], "graph ops"):
            g.operations.append(self._op(item, g, env))
        outs = []
        for name in self._list(d["outputs"], "graph outputs"):
            if not isinstance(name, str) or name not in env:
                self.fail(f"graph {g.name!r}: output {name!r} is not defined")
            outs.append(env[name])
        g.outputs = outs
        for name in env:
            base = name.split(".")[0].rsplit("_", 1)
            if len(base) == 2 and base[1].isdigit():      # keep unique_name unique after load
                g._names[base[0]] = max(g._names.get(base[0], 0), int(base[1]) + 1)
            g._names.setdefault(name, 0)
        return g

    def _new_value(self, item, env):
        pair = self._list(item, "value")
        if len(pair) != 2:
            self.fail(f"value entry {item!r} is not [name, type]")
        name = self._str(pair[0], "value name")
        if name in env:
            self.fail(f"value %{name} is defined twice")
        v = Value(name, self.type(pair[1]))
        env[name] = v
        return v

    def _op(self, item, g, env):
        d = self._dict(item, ("type", "name", "inputs", "outputs", "attrs", "loc"), "op")
        type_ = self._str(d["type"], "op type")
        opdef = REGISTRY.get(type_)
        if opdef is None:
            self.fail(f"unknown op type {type_!r} (this graphc has no such op; the model was "
                      "saved by another graphc version, or the file is damaged)")
        name = self._str(d["name"], "op name")
        inputs = []
        for n in self._list(d["inputs"], f"op {name} inputs"):
            if not isinstance(n, str) or n not in env:
                self.fail(f"op {name} ({type_}) uses undefined value {n!r}")
            inputs.append(env[n])
        raw = self._dict(d["attrs"], None, f"op {name} attrs")
        allowed, required = attr_names(type_)
        for k in raw:
            if k not in allowed:
                self.fail(f"op {name} ({type_}) has unknown attribute {k!r}")
        for k in required:
            if k not in raw:
                self.fail(f"op {name} ({type_}) lacks attribute {k!r}")
        attrs = {k: self.attr(v, g, env) for k, v in raw.items()}
        loc = d["loc"]
        if loc is not None:
            loc = self._list(loc, "op loc")
            if not (2 <= len(loc) <= 3 and isinstance(loc[0], str) and type(loc[1]) is int
                    and all(isinstance(x, str) for x in loc[2:])):
                self.fail(f"op {name}: bad location {loc!r}")
            loc = tuple(loc)
        outs = [self._new_value(o, env) for o in self._list(d["outputs"], "op outputs")]
        return Operation(type_, name, inputs, attrs, outs, loc)

    def attr(self, v, g=None, env=None):
        if v is None or type(v) in (bool, str):
            return v
        if not isinstance(v, dict) or len(v) != 1:
            self.fail(f"bad attribute value {_short(v)}")
        (tag, x), = v.items()
        if tag == "int":
            if not isinstance(x, str) or not x.lstrip("-").isdigit() or len(x) > 40:
                self.fail(f"bad int attribute {_short(x)}")
            return int(x)
        if tag == "float":
            if not isinstance(x, str) or len(x) != 16:
                self.fail(f"bad float attribute {_short(x)}")
            try:
                return struct.unpack("<d", bytes.fromhex(x))[0]
            except ValueError:
                self.fail(f"bad float attribute {_short(x)}")
        if tag in ("tuple", "list"):
            items = [self.attr(e, g, env) for e in self._list(x, tag)]
            return tuple(items) if tag == "tuple" else items
        if tag == "dtype":
            return self.dtype(x)
        if tag == "array":
            return self.array(x)
        if tag == "scalar":
            a = self.array(x)
            if a.shape != ():
                self.fail("a scalar attribute has a non-scalar shape")
            return a[()]
        if tag == "graph" and g is not None:
            return self.graph(x, parent=g, outer=env)
        if tag == "stream" and x in _STREAMS:
            return _STREAMS[x]()
        self.fail(f"unknown attribute tag {tag!r}")

    def array(self, x):
        d = self._dict(x, None, "array")
        dtype = self.dtype(d.get("dtype")).np
        shape = self.shape(d.get("shape"), allow_none=False)
        n = int(np.prod(shape, dtype=object)) if shape else 1
        if set(d) == {"dtype", "shape", "data"}:
            raw = d["data"]
            if not isinstance(raw, str) or len(raw) > 4 * (n * dtype.itemsize + 3) // 3 + 4:
                self.fail(f"array data is larger than its declared {dtype}{list(shape)}")
            try:
                buf = base64.b64decode(raw, validate=True)
            except ValueError:
                self.fail("array data is not valid base64")
            if len(buf) != n * dtype.itemsize:
                self.fail(f"array data has {len(buf)} bytes but {dtype}{list(shape)} needs "
                          f"{n * dtype.itemsize}")
            return np.frombuffer(buf, dtype.newbyteorder("<")).astype(dtype).reshape(shape)
        if set(d) == {"dtype", "shape", "ref"} and self.array_ref is not None:
            a = self.array_ref(self._str(d["ref"], "array ref"), dtype, shape)
            return a
        self.fail(f"bad array entry with fields {sorted(d)}")

    def type(self, t):
        t = self._list(t, "type")
        if len(t) != 3 or t[0] not in ("tensor", "resource", "list"):
            self.fail(f"bad value type {_short(t)}")
        dtype = self.dtype(t[1])
        if t[0] == "list":
            return ListType(dtype, None if t[2] is None else self.shape(t[2]))
        cls = TensorType if t[0] == "tensor" else ResourceType
        return cls(dtype, self.shape(t[2]))

    def dtype(self, name):
        if not isinstance(name, str) or name not in _dt._BY_NAME:
            self.fail(f"unknown dtype {_short(name)}")
        return _dt._BY_NAME[name]

    def shape(self, s, allow_none=True):
        s = self._list(s, "shape")
        if len(s) > 64:
            self.fail(f"shape of rank {len(s)} is too large")
        total = 1
        for d in s:
            if d is None and allow_none:
                continue
            if type(d) is not int or d < 0:
                self.fail(f"bad dimension {d!r} in shape {_short(s)}")
            total *= d
        if total > MAX_ELEMENTS:
            self.fail(f"shape {_short(s)} declares {total} elements, more than graphc allows")
        return tuple(s)

    def _dict(self, x, keys, what):
        if not isinstance(x, dict) or (keys is not None and set(x) != set(keys)):
            self.fail(f"bad {what} entry {_short(x)}")
        return x

    def _list(self, x, what):
        if not isinstance(x, list):
            self.fail(f"bad {what} entry {_short(x)} (expected a list)")
        return x

    def _str(self, x, what):
        if not isinstance(x, str) or not x or len(x) > 1000:
            self.fail(f"bad {what} {_short(x)}")
        return x


def _process_only(op, key):
    """A summary op's `writer`: a token for a writer of this process (the one default while
    tracing), never saved -- a loaded function logs to its caller's default writer."""
    return key == "writer" and op.type.startswith("summary_")


def _short(x):
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


_ATTRS = {}


def attr_names(type_):
    """(allowed, required) attribute names of an op: its `infer` rule's keyword parameters
    (or, when that takes **attrs, its numpy rule's keyword-only ones)."""
    got = _ATTRS.get(type_)
    if got is None:
        opdef = REGISTRY[type_]
        params = list(inspect.signature(opdef.infer).parameters.values())[1:]
        if any(p.kind is p.VAR_KEYWORD for p in params):
            params = [p for p in inspect.signature(opdef.numpy).parameters.values()
                      if p.kind is p.KEYWORD_ONLY]
        params = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        got = ({p.name for p in params}, {p.name for p in params if p.default is p.empty})
        _ATTRS[type_] = got
    return got


def check_graph(g, where):
    """`verify(g)` with its failure (or the type rule's) as a GraphcError naming the file."""
    from ..runtime.verify import verify
    try:
        verify(g)
    except Exception as e:  # noqa: BLE001 - any failure of a loaded graph is damage
        raise GraphcError(f"{where}: graph {g.name!r} fails verification: "
                          f"{type(e).__name__}: {e}") from None
    return g
