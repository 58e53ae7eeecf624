"""A traced graph as one bytes payload, and the per-process cache that loads it on workers.

What a task carries is bytes (JSON of the saved-graph IR, then the raw bytes of its big
constants) plus numpy arrays: no pickled Python from the user. A worker rebuilds the graph
with the saved-model reader (checked, verified, nothing executed), compiles it for its
backend once per process, and keeps it keyed by the payload's SHA-256 digest.
"""
import hashlib
import json
import struct
import threading

import numpy as np

from ..errors import GraphcError
from ..runtime.types import ResourceType
from ..saved_model import specs
from ..saved_model.serialize import IR_VERSION, Reader, SerializeError, Writer, check_graph

_MAGIC = b"GCDASK1\0"
_HEAD = struct.Struct("<8sQ")
_WHERE = "graphc.dask payload"


def dumps(cf):
    """(payload bytes, hex digest) of ConcreteFunction `cf`. Captured constants go in the
    payload; captured variables become numbered slots whose values each call sends."""
    writer = Writer()
    variables = []

    def capture(src):
        if hasattr(src, "_resolve_in"):           # a gc.Variable: its value travels per call
            variables.append(src)
            return {"variable": str(len(variables) - 1)}
        if hasattr(src, "_np") and src._np is not None:
            return {"constant": writer.attr(np.asarray(src._np), _WHERE)}
        raise SerializeError(f"{cf.name} captures {src!r}, which graphc.dask cannot ship")

    graph = writer.graph(cf.graph, capture)
    arrays, blobs, offset = {}, [], 0
    for key, a in writer.arrays.items():
        a = np.ascontiguousarray(a, a.dtype.newbyteorder("<"))
        arrays[key] = [a.dtype.name, list(a.shape), offset, a.nbytes]
        blobs.append(a.tobytes())
        offset += a.nbytes
    head = json.dumps({"ir_version": IR_VERSION, "graph": graph, "arrays": arrays,
                       "outputs": specs.structure_to_json(cf._structure, cf.name)},
                      separators=(",", ":")).encode()
    data = _HEAD.pack(_MAGIC, len(head)) + head + b"".join(blobs)
    return data, hashlib.sha256(data).hexdigest(), variables


class Loaded:
    """A payload compiled in this process: `run(arrays, variable_values)` -> outputs."""

    def __init__(self, data, backend):
        from ..runtime.concrete import ConcreteFunction
        from ..runtime.variables import Variable
        head, body = _split(data)
        self._variables = []

        def capture(ref, type_):
            if isinstance(ref, dict) and set(ref) == {"variable"} and \
                    isinstance(type_, ResourceType) and None not in type_.shape:
                v = Variable(np.zeros(type_.shape, type_.dtype.np))
                self._variables.append(v)
                return v
            if isinstance(ref, dict) and set(ref) == {"constant"}:
                value = reader.attr(ref["constant"])
                if not isinstance(value, np.ndarray) or value.shape != type_.shape:
                    reader.fail(f"a captured constant does not match its type {type_}")
                from ..runtime.tensor import Tensor
                return Tensor._concrete(value)
            reader.fail(f"bad capture entry {ref!r}")

        reader = Reader(_WHERE, array_ref=lambda k, dt, sh: _array(head, body, k, dt, sh,
                                                                     reader.fail),
                        capture=capture)
        if not isinstance(head, dict) or head.get("ir_version") != IR_VERSION:
            reader.fail(f"IR version {head.get('ir_version')!r} is not this graphc's "
                        f"({IR_VERSION}): install the same graphc on the client and workers")
        graph = check_graph(reader.graph(head["graph"]), _WHERE)
        structure = specs.structure_from_json(head["outputs"], len(graph.outputs), reader.fail)
        self.cf = ConcreteFunction(graph, structure, ((), {}), backend)
        self.lock = threading.Lock()          # variable slots are shared by this process's calls

    def run(self, arrays, variable_values=()):
        """Flat list of output arrays for the graph's inputs `arrays`."""
        cf = self.cf
        if len(variable_values) != len(self._variables):
            raise GraphcError(f"{_WHERE}: {len(variable_values)} variable values for "
                              f"{len(self._variables)} captured variables")
        if not self._variables:
            return cf._run(list(arrays) + cf._captures)
        with self.lock:
            for v, value in zip(self._variables, variable_values):
                v.assign(value)
            return cf._run(list(arrays) + cf._captures)


def _split(data):
    if not isinstance(data, (bytes, bytearray)) or len(data) < _HEAD.size:
        raise GraphcError(f"{_WHERE}: not a graphc.dask payload")
    magic, n = _HEAD.unpack_from(data)
    if magic != _MAGIC or _HEAD.size + n > len(data):
        raise GraphcError(f"{_WHERE}: not a graphc.dask payload (bad header)")
    try:
        head = json.loads(bytes(data[_HEAD.size:_HEAD.size + n]))
    except ValueError as e:
        raise GraphcError(f"{_WHERE}: damaged JSON ({e})") from None
    return head, memoryview(data)[_HEAD.size + n:]


def _array(head, body, key, dtype, shape, fail):
    entry = head.get("arrays", {}).get(key) if isinstance(head.get("arrays"), dict) else None
    if not isinstance(entry, list) or len(entry) != 4:
        fail(f"constant {key!r} is missing")
    name, eshape, offset, nbytes = entry
    n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if name != np.dtype(dtype).name or list(shape) != eshape or nbytes != n or \
            type(offset) is not int or offset < 0 or offset + n > len(body):
        fail(f"constant {key!r} does not match its declared {np.dtype(dtype)}{list(shape)}")
    raw = np.frombuffer(body[offset:offset + n], np.dtype(dtype).newbyteorder("<"))
    return raw.astype(dtype).reshape(shape)


_CACHE = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 64


def load(data, digest, backend="auto"):
    """The Loaded function for payload `data`, compiled once per process and backend."""
    key = (digest, backend)
    got = _CACHE.get(key)
    if got is not None:
        return got
    if hashlib.sha256(data).hexdigest() != digest:
        raise GraphcError(f"{_WHERE}: payload does not match its digest (damaged in transit)")
    with _CACHE_LOCK:
        got = _CACHE.get(key)
        if got is None:
            got = Loaded(data, backend)
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = got
    return got


def cache_size():
    """How many payloads this process has loaded (tests check workers load once)."""
    return len(_CACHE)


def clear_cache():
    """Forget every loaded payload (tests use it to count loads per worker)."""
    with _CACHE_LOCK:
        _CACHE.clear()
