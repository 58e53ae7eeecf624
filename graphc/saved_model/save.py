"""gc.saved_model.save: the object tree, every trace of every reachable gc.function as
serialized IR, the signatures, and the variable values in the checkpoint format.

Layout of the directory:
  saved_model.json          checksummed JSON (files.py): objects, functions, signatures
  variables/variables.*     gc.train.checkpoint_format: variable values and big constants
"""
import os

import numpy as np

from ..runtime import signature as sig
from ..runtime.function import Function
from ..runtime.tensor import Tensor
from ..runtime.variables import Variable
from ..train import checkpoint_format, trackable
from . import files, specs
from .serialize import IR_VERSION, SerializeError, Writer

JSON_NAME = "saved_model.json"
VARIABLES = os.path.join("variables", "variables")
CONSTANT_PREFIX = ".constant/"     # path_key escapes a leading ".": no variable path starts so
CAPTURED_PREFIX = ".captured/"


def save(obj, export_dir, signatures=None):
    """Save `obj` (a gc.Module or other trackable object) to the directory `export_dir`:
    its object tree, variables, and every trace of every gc.function reachable from it by
    attribute (functions with an input_signature are traced now if they were not yet).
    `signatures`: a gc.function with an input_signature (saved as "serving_default") or a
    dict of name -> such function (None: obj's one function with an input_signature, if it
    has exactly one, as "serving_default"); `gc.saved_model.load` runs everything without the
    source."""
    from .load import LoadedObject
    if not trackable.is_trackable(obj) or isinstance(obj, (Variable, list, tuple, dict)):
        raise TypeError(f"gc.saved_model.save: expected a gc.Module (or an optimizer or "
                        f"Checkpoint) as the object to save, got {type(obj).__name__}. Fix: "
                        "attach functions and variables to a gc.Module and save that")
    if signatures is None and isinstance(obj, LoadedObject):
        signatures = obj.signatures           # a loaded model saved again keeps its own
    elif signatures is None:
        signatures = _default_signature(obj)
    saver = _Saver(obj)
    sigs = saver.signatures(signatures)
    data = {"ir_version": IR_VERSION, "objects": saver.nodes, "functions": saver.functions,
            "signatures": sigs, "variables": saver.variable_entries}
    tensors = dict(saver.values)
    tensors.update({CONSTANT_PREFIX + k: v for k, v in saver.writer.arrays.items()})
    os.makedirs(os.path.join(export_dir, "variables"), exist_ok=True)
    checkpoint_format.write_tensors(os.path.join(export_dir, VARIABLES), tensors,
                                    meta={"graphc_saved_model": IR_VERSION})
    files.write_json(os.path.join(export_dir, JSON_NAME), data)   # last: the model is complete


class _Saver:
    def __init__(self, root):
        self.writer = Writer()
        self.nodes, self.functions = [], []
        self.values = {}                # checkpoint key -> array
        self.variable_entries = []      # [{"key", "dtype", "shape", "trainable", "name"}]
        self._var_key = {}              # id(variable) -> key
        self._node_of = {}
        self._fn_of = {}
        self._keep = []                 # objects whose id() is a key above stay alive
        for path, o in trackable.walk(root):
            if isinstance(o, Variable) and id(o) not in self._var_key:
                self._add_variable(o, trackable.path_key(path))
        self._node(root)

    # -- objects ---------------------------------------------------------------------------
    def _add_variable(self, v, key):
        self._var_key[id(v)] = key
        self._keep.append(v)
        value = np.asarray(v.numpy())
        self.values[key] = value
        self.variable_entries.append({"key": key, "dtype": v.dtype.name,
                                      "shape": list(value.shape), "trainable": v.trainable,
                                      "name": v._given_name})

    def _node(self, o):
        n = self._node_of.get(id(o))
        if n is not None:
            return n
        n = len(self.nodes)
        self._node_of[id(o)] = n
        self._keep.append(o)
        node = {}
        self.nodes.append(node)
        if isinstance(o, Variable):
            node.update(kind="variable", key=self._var_key[id(o)])
            return n
        if isinstance(o, (list, tuple, dict)):
            node["kind"] = type(o).__name__
        else:
            node.update(kind="object", cls=f"{type(o).__module__}.{type(o).__qualname__}",
                        name=str(getattr(o, "name", "")) if hasattr(o, "_name") else "")
            node["functions"] = [[name, self._function(f, name)] for name, f in _functions(o)]
        node["children"] = [[name, self._node(c)] for name, c in trackable.children(o)]
        for name, _ in node["children"] + node.get("functions", []):
            if name in ("signatures", "_name", "_saved_class") or \
                    name.startswith("__") and name != "__call__":
                raise ValueError(f"gc.saved_model.save: attribute {name!r} of {o!r} cannot be "
                                 "saved under that name (loaded objects use it themselves); "
                                 "rename the attribute")
        return n

    # -- functions -------------------------------------------------------------------------
    def _function(self, f, attr=None):
        i = self._fn_of.get(id(f))
        if i is not None:
            return i
        name, params, input_signature, traces = _traces(f)
        where = f"gc.function {name!r}"
        entry = {"name": name, "params": specs.params_to_json(params),
                 "input_signature": None if input_signature is None else
                 [_spec_to_json(s, where) for s in input_signature],
                 "concrete": [self._concrete(key, cf, where) for key, cf in traces]}
        i = len(self.functions)
        self.functions.append(entry)
        self._fn_of[id(f)] = i
        self._keep.append(f)
        return i

    def _concrete(self, key, cf, where):
        return {"key": [specs.key_to_json(k, where) for k in key],
                "graph": self.writer.graph(cf.graph, lambda src: self._capture(src, where)),
                "outputs": specs.structure_to_json(cf._structure, where)}

    def _capture(self, src, where):
        if isinstance(src, Variable):
            key = self._var_key.get(id(src))
            if key is None:       # a variable the function uses but the tree does not hold
                key = f"{CAPTURED_PREFIX}{sum(k.startswith(CAPTURED_PREFIX) for k in self.values)}"
                self._add_variable(src, key)
            return {"variable": key}
        if type(src) is Tensor and src._np is not None:
            return {"constant": self.writer.attr(np.asarray(src._np), where)}
        raise SerializeError(f"{where} captures {src!r}, which a SavedModel cannot hold")

    # -- signatures ------------------------------------------------------------------------
    def signatures(self, signatures):
        if signatures is None:
            return {}
        if not isinstance(signatures, dict):
            signatures = {"serving_default": signatures}
        out = {}
        for name, f in signatures.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"gc.saved_model.save: signature names are non-empty "
                                 f"strings, got {name!r}")
            out[name] = self._signature(name, f)
        return out

    def _signature(self, name, f):
        from .load import SignatureFunction
        from ..runtime.concrete import ConcreteFunction
        if isinstance(f, ConcreteFunction):
            return self._concrete_signature(name, f)
        if isinstance(f, SignatureFunction):
            if f._owner.input_signature is None:     # it was saved from a ConcreteFunction
                return self._concrete_signature(name, f._cf, f.input_names)
            f = f._owner
        input_signature = f.input_signature if _is_function(f) else None
        if input_signature is None:
            raise ValueError(f"gc.saved_model.save: signature {name!r} must be a gc.function "
                             f"with an input_signature or a ConcreteFunction, got {f!r}. Fix: "
                             "@gc.function(input_signature=[gc.TensorSpec(...), ...]), or "
                             "f.get_concrete_function(gc.TensorSpec(...), ...)")
        nested = [p.name for s, p in zip(input_signature, _traces(f)[1])
                  if not isinstance(s, sig.TensorSpec)]
        if nested:
            raise ValueError(f"gc.saved_model.save: signature {name!r} takes a nest of "
                             f"TensorSpecs for {nested}; signature inputs are flat, one named "
                             "tensor each. Fix: a gc.function with one TensorSpec per argument "
                             "that calls this one")
        cf = f.get_concrete_function()
        i = self._function(f)
        _, params, _, traces = _traces(f)
        c = next(j for j, (_, c) in enumerate(traces) if c is cf)
        names = [s.name or p.name for s, p in zip(input_signature, params)]
        if len(set(names)) != len(names):
            raise ValueError(f"gc.saved_model.save: signature {name!r} has repeated input "
                             f"names {names}; give the TensorSpecs distinct name=...")
        return {"function": i, "concrete": c, "inputs": names,
                "outputs": output_names(cf._structure, name)}

    def _concrete_signature(self, name, cf, names=None):
        """A ConcreteFunction as a signature (TF's `signatures=f.get_concrete_function(spec)`):
        a trace of a gc.function the saved object holds, its tensor arguments flat specs."""
        for owner in list(self._keep):
            traces = _traces(owner)[3] if _is_function(owner) else ()
            c = next((j for j, (_, t) in enumerate(traces) if t is cf), None)
            if c is not None:
                break
        else:
            raise ValueError(f"gc.saved_model.save: signature {name!r} is {cf!r}, a trace of "
                             "no gc.function the saved object holds. Fix: get it from a "
                             "function of the object (obj.f.get_concrete_function(...))")
        if names is None:
            args, kwargs = cf.structured_input_signature
            entries = list(zip([None] * len(args), args)) + list(kwargs.items())
            fed = [(k, s) for k, s in entries if _holds_input(s)]
            nested = [k or getattr(s, "name", None) or repr(s) for k, s in fed
                      if not isinstance(s, sig.TensorSpec)]
            if nested:
                raise ValueError(f"gc.saved_model.save: signature {name!r} takes {nested}, "
                                 "which are not single TensorSpecs; signature inputs are flat, "
                                 "one named tensor each")
            names = [k or s.name for k, s in fed]
        if len(names) != len(cf.graph.inputs) or len(set(names)) != len(names) \
                or not all(names):
            raise ValueError(f"gc.saved_model.save: signature {name!r} needs one distinct name "
                             f"per tensor input, got {names}")
        return {"function": self._function(owner), "concrete": c, "inputs": list(names),
                "outputs": output_names(cf._structure, name)}


def output_names(structure, signature):
    """A signature's output names: a dict's (str) keys, else output_0, output_1, ..."""
    from ..runtime.concrete import _Slot
    if isinstance(structure, dict):
        for k, v in structure.items():
            if not isinstance(k, str) or type(v) is not _Slot:
                raise ValueError(f"gc.saved_model.save: signature {signature!r} returns a dict "
                                 f"whose entry {k!r} is not a str key with one tensor")
        return {k: v.index for k, v in structure.items()}
    flat = []

    def leaves(s):
        if type(s) is _Slot:
            flat.append(s.index)
        elif isinstance(s, (list, tuple)):
            for x in s:
                leaves(x)
        elif s is not None:
            raise ValueError(f"gc.saved_model.save: signature {signature!r} returns {s!r}; "
                             "signatures return tensors, or lists/tuples/dicts of them")
    leaves(structure)
    return {f"output_{i}": j for i, j in enumerate(flat)}


def _holds_input(v):
    from ..runtime.concrete import _holds_input as holds
    return holds(v)


def _is_function(f):
    from .load import LoadedFunction
    return isinstance(f, (Function, LoadedFunction))


def _traces(f):
    """(name, parameters, input_signature, [(key, ConcreteFunction)]) of a gc.function or a
    loaded one; a function with an input_signature is traced first if it has no trace."""
    from .load import LoadedFunction
    if isinstance(f, LoadedFunction):
        return f._name, f._params, f.input_signature, list(f._traces)
    if f.input_signature is not None and not f._concrete:
        f.get_concrete_function()
    with f._lock:
        pairs = list(zip(f._keys, f._concrete))
    return f._name, f._signature.params, f.input_signature, pairs


def _default_signature(obj):
    """What `signatures=None` exports, as tf.saved_model.save does: when exactly one
    gc.function held by `obj` itself has an input_signature (of TensorSpecs), that one as
    "serving_default"; otherwise none."""
    found = [f for _, f in _functions(obj) if isinstance(f, Function)
             and f.input_signature is not None
             and all(isinstance(s, sig.TensorSpec) for s in f.input_signature)]
    return found[0] if len(found) == 1 else None


def _functions(o):
    """(attribute name, function) for the gc.functions an object holds: methods defined on
    its class (bound to it) and functions stored in its attributes, sorted by name."""
    found = {}
    for cls in reversed(type(o).__mro__):
        for name, attr in vars(cls).items():
            if isinstance(attr, Function):
                found[name] = getattr(o, name)
    for name, attr in (vars(o).items() if hasattr(o, "__dict__") else ()):
        if _is_function(attr):
            found[name] = attr
    return sorted(found.items())


__all__ = ["save", "SerializeError"]


def _spec_to_json(s, where):
    """One input_signature entry: a TensorSpec as [shape, dtype, name]; a nest of them
    (dict, list, tuple, namedtuple) as its key."""
    if isinstance(s, sig.TensorSpec):
        return [list(s.shape), s.dtype.name, s.name]
    return {"nest": specs.key_to_json(sig.encode(s, []), where)}
