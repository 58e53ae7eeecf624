"""gc.saved_model.load: rebuild the object tree, its Variables and callable functions from a
SavedModel directory, checking every file first. Nothing from the directory is executed or
unpickled: graphs are data, rebuilt op by op from the registry and verified."""
import os

import numpy as np

from ..errors import GraphcError, NotFoundError
from ..runtime import context, signature as sig
from ..runtime.concrete import ConcreteFunction
from ..runtime.dispatch import convert_to_tensor
from ..runtime.function import _ParamInfo, _conform, _tracing_or_taping
from ..runtime.function_args import rebuild_call
from ..runtime.module import Module
from ..runtime.tensor import Tensor
from ..runtime.types import ResourceType
from ..runtime.variables import Variable
from ..train import checkpoint_format
from . import files, specs
from .save import CONSTANT_PREFIX, JSON_NAME, VARIABLES
from .serialize import IR_VERSION, Reader, check_graph
from .upgrade import upgrade_functions


class LoadedObject(Module):
    """An object of a loaded SavedModel: the saved attributes (sub-objects, Variables,
    lists, dicts, functions); `.variables` and `.trainable_variables` work as on gc.Module."""

    def __init__(self, name, saved_class):
        super().__init__(name if name and name.isidentifier() else None)
        self._saved_class = saved_class
        self.signatures = {}

    def __call__(self, *args, **kwargs):
        fn = vars(self).get("__call__")      # Python looks dunders up on the class
        if fn is None:
            raise TypeError(f"{self!r} is not callable: the saved object had no "
                            "gc.function __call__")
        return fn(*args, **kwargs)

    def __repr__(self):
        return f"<loaded {self._saved_class} '{self.name}'>"


def load(export_dir, backend="auto"):
    """Load a model written by `gc.saved_model.save`; its functions run on `backend`."""
    from ..runtime.backends import check_backend, get_backend
    check_backend(backend)
    if backend != "auto":
        get_backend(backend)    # an unavailable backend (cuda without a GPU) is the ValueError
        # gc.function gives, naming what is missing, not "malformed SavedModel" later on
    if not os.path.isdir(export_dir):
        raise NotFoundError(f"{export_dir}: no such directory; give the directory "
                          "gc.saved_model.save wrote")
    path = os.path.join(export_dir, JSON_NAME)
    data = files.read_json(path)
    try:
        return _Loader(export_dir, path, data, backend).root
    except GraphcError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError) as e:
        # a checksummed file the checks above did not foresee: still damage, never a crash
        raise GraphcError(f"{path}: malformed SavedModel ({type(e).__name__}: {e})") from None


class _Loader:
    def __init__(self, export_dir, path, data, backend):
        self.path, self.backend = path, backend
        self.reader = Reader(path, array_ref=self._constant, capture=self._capture)
        fail = self.reader.fail
        if not isinstance(data, dict) or set(data) != {"ir_version", "objects", "functions",
                                                       "signatures", "variables"}:
            fail("top-level fields are not those of a graphc SavedModel")
        version = data["ir_version"]
        if type(version) is not int or not 1 <= version <= IR_VERSION:
            fail(f"IR version {version!r} is not supported (this graphc reads versions 1 to "
                 f"{IR_VERSION})")
        functions = upgrade_functions(data["functions"], version, fail)
        prefix = os.path.join(export_dir, VARIABLES)
        try:
            self.index = checkpoint_format.read_index(prefix)
        except FileNotFoundError:
            raise GraphcError(f"{checkpoint_format.index_path(prefix)}: file is missing; the "
                              "SavedModel is incomplete") from None
        self.prefix = prefix
        self.variables = self._variables(data["variables"])
        self.functions = [self._function(f, i) for i, f in
                          enumerate(self.reader._list(functions, "functions"))]
        self.nodes = self.reader._list(data["objects"], "objects")
        if not self.nodes:
            fail("the object list is empty")
        self._built = {}
        self.root = self._object(0, ())
        if not isinstance(self.root, LoadedObject):
            fail("the root object is not an object")
        self.root.signatures = self._signatures(data["signatures"])

    # -- tensors -----------------------------------------------------------------------------
    def _entry(self, key, dtype, shape):
        e = self.index.entries.get(key)
        if e is None:
            self.reader.fail(f"tensor {key!r} is not in {self.index.path}")
        if e.dtype != np.dtype(dtype).newbyteorder("<") or tuple(e.shape) != tuple(shape):
            self.reader.fail(f"tensor {key!r} is {e.dtype}{list(e.shape)} in "
                             f"{self.index.path} but declared {np.dtype(dtype)}{list(shape)}")
        return checkpoint_format.read_tensor(self.prefix, key, self.index).astype(dtype)

    def _constant(self, key, dtype, shape):
        return self._entry(CONSTANT_PREFIX + key, dtype, shape)

    def _variables(self, entries):
        out = {}
        for e in self.reader._list(entries, "variables"):
            d = self.reader._dict(e, ("key", "dtype", "shape", "trainable", "name"), "variable")
            key = self.reader._str(d["key"], "variable key")
            dtype = self.reader.dtype(d["dtype"])
            shape = self.reader.shape(d["shape"], allow_none=False)
            if key in out or type(d["trainable"]) is not bool or not isinstance(d["name"], str):
                self.reader.fail(f"bad variable entry {key!r}")
            value = self._entry(key, dtype.np, shape)
            out[key] = Variable(value, trainable=d["trainable"], name=d["name"] or None)
        return out

    def _capture(self, ref, type_):
        if isinstance(ref, dict) and set(ref) == {"variable"}:
            v = self.variables.get(ref["variable"])
            if v is None or not isinstance(type_, ResourceType) or \
                    type_ != v._graph_type():
                self.reader.fail(f"a graph captures variable {ref['variable']!r} as {type_}, "
                                 "which the saved variables do not hold")
            return v
        if isinstance(ref, dict) and set(ref) == {"constant"}:
            value = self.reader.attr(ref["constant"])
            if not isinstance(value, np.ndarray) or getattr(type_, "shape", None) != \
                    value.shape or type_.kind != "tensor" or type_.dtype.np != value.dtype:
                self.reader.fail(f"a captured constant does not match its type {type_}")
            return Tensor._concrete(value)
        self.reader.fail(f"bad capture entry {ref!r}")

    # -- functions ---------------------------------------------------------------------------
    def _function(self, f, i):
        r = self.reader
        d = r._dict(f, ("name", "params", "input_signature", "concrete"), "function")
        name = r._str(d["name"], "function name")
        params = specs.params_from_json(d["params"], r.fail)
        specs_in = None
        if d["input_signature"] is not None:
            specs_in = []
            for s in r._list(d["input_signature"], "input_signature"):
                if isinstance(s, dict) and list(s) == ["nest"]:   # a nest of specs
                    specs_in.append(specs.key_to_spec(specs.key_from_json(s["nest"], r)))
                    continue
                if not isinstance(s, list) or len(s) != 3 or not (s[2] is None or
                                                                  isinstance(s[2], str)):
                    r.fail(f"bad input_signature entry {s!r}")
                specs_in.append(sig.TensorSpec(r.shape(s[0]), r.dtype(s[1]), s[2]))
        traces = []
        for c in r._list(d["concrete"], "concrete functions"):
            c = r._dict(c, ("key", "graph", "outputs"), "concrete function")
            key = tuple(specs.key_from_json(k, r) for k in r._list(c["key"], "key"))
            graph = check_graph(r.graph(c["graph"]), self.path)
            structure = specs.structure_from_json(c["outputs"], len(graph.outputs), r.fail)
            args, kwargs = rebuild_call(params, [specs.key_to_spec(k) for k in key])
            cf = ConcreteFunction(graph, structure, (tuple(args), kwargs), self.backend)
            traces.append((key, cf))
        return LoadedFunction(name, params, specs_in, traces)

    # -- objects -----------------------------------------------------------------------------
    def _object(self, n, stack):
        r = self.reader
        if type(n) is not int or not 0 <= n < len(self.nodes):
            r.fail(f"bad object reference {n!r}")
        if n in self._built:
            return self._built[n]
        if n in stack:
            r.fail("the object tree has a cycle through an immutable tuple")
        node = r._dict(self.nodes[n], None, "object")
        kind = node.get("kind")
        if kind == "variable":
            v = self.variables.get(node.get("key"))
            if v is None or set(node) != {"kind", "key"}:
                r.fail(f"object {n} names an unknown variable {node.get('key')!r}")
            self._built[n] = v
            return v
        children = [(self._child_name(c), c[1]) for c in r._list(node.get("children"),
                                                                  "children")]
        if kind == "tuple":
            out = tuple(self._object(c, stack + (n,)) for _, c in children)
        elif kind == "list":
            out = self._built[n] = []
            out.extend(self._object(c, stack + (n,)) for _, c in children)
        elif kind == "dict":
            out = self._built[n] = {}
            out.update((name, self._object(c, stack + (n,))) for name, c in children)
        elif kind == "object":
            if set(node) != {"kind", "cls", "name", "functions", "children"}:
                r.fail(f"object {n} has fields {sorted(node)}")
            out = self._built[n] = LoadedObject(node["name"], r._str(node["cls"], "class"))
            for name, c in children:
                setattr(out, name, self._object(c, stack + (n,)))
            for item in r._list(node["functions"], "functions"):
                name = self._child_name(item)
                if type(item[1]) is not int or not 0 <= item[1] < len(self.functions):
                    r.fail(f"object {n} names function {item[1]!r}, which is not saved")
                setattr(out, name, self.functions[item[1]])
        else:
            r.fail(f"object {n} has unknown kind {kind!r}")
        self._built[n] = out
        return out

    def _child_name(self, item):
        # no dunders but __call__ (they would rebind the object's class or dict), and not
        # the loaded object's own fields
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str) \
                or not item[0] or item[0] in ("signatures", "_name", "_saved_class") \
                or item[0].startswith("__") and item[0] != "__call__":
            self.reader.fail(f"bad child entry {item!r}")
        return item[0]

    def _signatures(self, sigs):
        r = self.reader
        out = {}
        for name, s in r._dict(sigs, None, "signatures").items():
            d = r._dict(s, ("function", "concrete", "inputs", "outputs"), "signature")
            f = d["function"]
            if type(f) is not int or not 0 <= f < len(self.functions):
                r.fail(f"signature {name!r} names function {f!r}, which is not saved")
            traces = self.functions[f]._traces
            c = d["concrete"]
            if type(c) is not int or not 0 <= c < len(traces):
                r.fail(f"signature {name!r} names trace {c!r}, which is not saved")
            cf = traces[c][1]
            inputs = [r._str(x, "signature input") for x in r._list(d["inputs"], "inputs")]
            outputs = r._dict(d["outputs"], None, "signature outputs")
            if len(inputs) != len(cf.graph.inputs) or any(
                    type(i) is not int or not 0 <= i < len(cf.graph.outputs)
                    for i in outputs.values()):
                r.fail(f"signature {name!r} does not match its function's inputs/outputs")
            out[name] = SignatureFunction(name, self.functions[f], cf, inputs, outputs)
        return out


class LoadedFunction:
    """A loaded gc.function: calls pick the saved trace whose signature matches; a call no
    trace matches raises ValueError listing the saved signatures (nothing can be traced)."""

    def __init__(self, name, params, input_signature, traces):
        self._name = name
        self._params = params
        self.input_signature = input_signature
        self._traces = traces                    # [(key, ConcreteFunction)]
        self._info = _ParamInfo.__new__(_ParamInfo)
        _ParamInfo.__init__(self._info, _signature_stub(params), skip_self=False)
        self._cache = {key: cf for key, cf in traces}

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._info.n_simple:
            values = self._info.canonicalize(args, kwargs, self._name)
        else:
            values = args                        # plain positional call: nothing to bind
        if self.input_signature is not None:
            values = _conform(values, self.input_signature, self._info, self._name)
        if context._busy[0] and _tracing_or_taping():
            from .replay import replay
            key, leaves = _symbolic_key(values)
            return replay(self._match(key), leaves)
        leaves = []
        key = tuple([sig.encode(v, leaves) for v in values])
        cf = self._cache.get(key) or self._match(key)
        return cf._call_leaves(leaves)

    def _match(self, key):
        for saved, cf in self._traces:
            if len(saved) == len(key) and all(map(specs.matches, saved, key)):
                return cf
        shown = "; ".join(f"({', '.join(sig.describe(k) for k in saved)})"
                          for saved, _ in self._traces) or "none"
        raise ValueError(f"loaded function {self._name!r} has no saved trace for arguments "
                         f"({', '.join(sig.describe(k) for k in key)}); its saved signatures: "
                         f"{shown}. A loaded function cannot trace new signatures: call it "
                         "with arguments matching one of these, or trace that signature "
                         "before saving.")

    def concrete_functions(self):
        return [cf for _, cf in self._traces]

    def get_concrete_function(self, *args, **kwargs):
        if not args and not kwargs and self.input_signature is not None:
            args = tuple(self.input_signature)
        values = self._info.canonicalize(args, kwargs, self._name)
        key = tuple(sig.encode(v, []) for v in values)
        return self._cache.get(key) or self._match(key)

    @property
    def tracing_count(self):
        return len(self._traces)

    def __repr__(self):
        return f"<loaded gc.function {self._name} (saved traces: {len(self._traces)})>"


def _signature_stub(params):
    import inspect

    def stub(*args, **kwargs):
        pass
    stub.__signature__ = inspect.Signature(params)
    return stub


def _symbolic_key(values):
    """Key and leaves of a call made while tracing or taping: tensors may be symbolic."""
    leaves = []

    def enc(x):
        if type(x) is Tensor:
            leaves.append(x)
            return (sig.TENSOR, x.dtype, tuple(x.shape))
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            return (sig.LIST if type(x) is list else sig.TUPLE, tuple(enc(v) for v in x))
        if isinstance(x, dict):
            return (sig.DICT, tuple((k, enc(x[k])) for k in sorted(x, key=sig._sort_key)))
        if isinstance(x, tuple):
            return (sig.NAMED, type(x), tuple(enc(v) for v in x))
        if isinstance(x, np.ndarray) or isinstance(x, np.generic):
            return enc(convert_to_tensor(x))
        return sig.encode(x, leaves)
    return tuple(enc(v) for v in values), leaves


class SignatureFunction:
    """`loaded.signatures[name]`: called with tensors by name (or position, in input order),
    returns a dict of outputs."""

    def __init__(self, name, owner, cf, inputs, outputs):
        self.name = name
        self._owner = owner
        self._cf = cf
        self.input_names = inputs
        self.output_names = outputs          # output name -> graph output index
        self.input_specs = {n: sig.TensorSpec(v.type.shape, v.type.dtype)
                            for n, v in zip(inputs, cf.graph.inputs)}

    @property
    def structured_input_signature(self):
        """((), {input name: TensorSpec}): signatures take their inputs by name (as TF's)."""
        return (), {n: sig.TensorSpec(s.shape, s.dtype, name=n)
                    for n, s in self.input_specs.items()}

    @property
    def structured_outputs(self):
        """{output name: TensorSpec} of the dict a call returns (as TF's)."""
        outs = self._cf.graph.outputs
        return {k: sig.TensorSpec(outs[i].type.shape, outs[i].type.dtype, name=k)
                for k, i in self.output_names.items()}

    def __call__(self, *args, **inputs):
        if args:        # positionally, in input order, as TF's signature functions allow
            if len(args) > len(self.input_names):
                raise TypeError(f"signature {self.name!r} takes {len(self.input_names)} "
                                f"inputs ({', '.join(self.input_names)}), got {len(args)} "
                                "positional arguments")
            twice = [n for n in self.input_names[:len(args)] if n in inputs]
            if twice:
                raise TypeError(f"signature {self.name!r} got input(s) {twice} both by "
                                "position and by name")
            inputs = {**dict(zip(self.input_names, args)), **inputs}
        missing = [n for n in self.input_names if n not in inputs]
        extra = [n for n in inputs if n not in self.input_specs]
        if missing or extra:
            raise TypeError(f"signature {self.name!r} takes inputs {self.input_names}; "
                            f"missing {missing}, unexpected {extra}")
        tensors = []
        for n in self.input_names:
            spec = self.input_specs[n]
            x = inputs[n]
            t = x if type(x) is Tensor else convert_to_tensor(x, spec.dtype)
            if not spec.is_compatible_with(t):
                raise ValueError(f"signature {self.name!r}: input {n!r} must be {spec!r}, got "
                                 f"{t.dtype.name}{list(t.shape)}")
            tensors.append(t)
        if context._busy[0] and _tracing_or_taping():     # inside a trace or under a tape
            from .replay import replay_flat
            outs = replay_flat(self._cf, tensors)
            return {k: outs[i] for k, i in self.output_names.items()}
        outs = self._cf._run([t._np for t in tensors] + self._cf._captures)
        return {k: Tensor._concrete(outs[i]) for k, i in self.output_names.items()}

    def __repr__(self):
        return f"<signature {self.name} inputs={self.input_names} outputs=" \
               f"{list(self.output_names)}>"
