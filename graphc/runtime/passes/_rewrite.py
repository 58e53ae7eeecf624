"""Shared machinery for graph passes: copying a graph op by op with value substitutions.

Passes never mutate their input. They build a new operation list; Values and unchanged
Operations are shared with the input graph (nothing mutates them after tracing). When a
Value is replaced by one of a more specific type (a folded constant, a refined shape),
every later consumer is re-inferred, so the result always satisfies `verify()`.
"""
import numpy as np

from ... import dtypes as _dt
from ..graph import Graph, Operation, Value, walk
from ..registry import REGISTRY
from ..types import TensorType

# Scanning a constant for one repeated value costs a pass over it; huge ones are skipped.
_MAX_SCANNED_CONSTANT = 1 << 16

# Ops that live in a graph but own no subgraph and are still stateful: a TensorArray's
# list ops thread a flow value, so merging two of them would alias two lists.
_LIST_OP_PREFIX = "tensor_list"


def has_effects(op):
    """True when `op` is effectful (print, random, variable access, ...) or a cond/while
    whose subgraphs contain such an op: these are never removed, merged or reordered."""
    if REGISTRY[op.type].effectful:
        return True
    if not has_subgraphs(op):
        return False
    return any(REGISTRY[inner.type].effectful for _, sub in op.subgraphs() for inner in walk(sub))


def has_subgraphs(op):
    """Cheaper than `op.subgraphs()` when only asking whether there are any."""
    return any(type(v) is Graph for v in op.attrs.values())


def is_stateful(op):
    """Effects plus anything handling variables or tensor lists (by type or by name)."""
    if has_effects(op) or op.type.startswith(_LIST_OP_PREFIX):
        return True
    return any(not isinstance(v.type, TensorType) for v in op.inputs + op.outputs)


def copy_graph(src, operations, outputs, captures=None):
    """A new Graph like `src` (same inputs, names, extra attributes) with new ops/outputs."""
    g = Graph.__new__(Graph)
    g.__dict__.update(src.__dict__)
    g.operations = list(operations)
    g.outputs = list(outputs)
    g.captures = list(src.captures if captures is None else captures)
    g._capture_index = {id(s): v for v, s in g.captures}
    g._names = dict(src._names)
    g._plan = None
    return g


def constant_op(value, array, loc=None):
    """A `constant` op defining `value` (its name kept); a new Value if the type got sharper."""
    t = TensorType(_dt.from_numpy(array.dtype), array.shape)
    out = value if value.type == t else Value(value.name, t)
    return Operation("constant", value.name, [], {"value": array}, [out], loc)


class Rewriter:
    """Builds the rewritten copy of one graph level.

    `lookup(v)` gives the Value that now stands for `v`; `replace(old, new)` redirects later
    uses; `keep(op, inputs, attrs)` appends `op` (unchanged when nothing differs, else a copy
    with re-inferred output types); `finish()` returns the new Graph.
    """

    def __init__(self, graph):
        self.graph = graph
        self.ops = []
        self._subst = {}
        self._producer = {}
        self._names = dict(graph._names)
        self._taken = None

    def fresh_name(self, base):
        """A name no value or op of this graph level uses yet (for ops moved into it)."""
        if self._taken is None:
            self._taken = {v.name for v in self.graph.all_inputs}
            for op in self.graph.operations:
                self._taken.add(op.name)
                self._taken.update(v.name for v in op.outputs)
        while True:
            n = self._names.get(base, 0)
            self._names[base] = n + 1
            name = f"{base}_{n}"
            if name not in self._taken:
                self._taken.add(name)
                return name

    def lookup(self, v):
        return self._subst.get(id(v), v)

    def replace(self, old, new):
        if old is not new:
            self._subst[id(old)] = new

    def producer(self, v):
        """The already emitted op defining `v` (None for graph inputs and captures)."""
        return self._producer.get(id(v))

    def constant(self, v):
        """The numpy value of `v` when it is defined by a `constant` op, else None."""
        op = self._producer.get(id(v))
        return op.attrs["value"] if op is not None and op.type == "constant" else None

    def uniform(self, v):
        """The single scalar every element of `v` equals, for constants and fills of one
        constant (whose shapes are static); None otherwise."""
        arr = self.constant(v)
        if arr is None:
            op = self._producer.get(id(v))
            if op is None or op.type != "fill":
                return None
            arr = self.constant(op.inputs[0])
            if arr is None:
                return None
        if arr.size == 1:
            return arr.flat[0]
        if arr.size == 0 or arr.size > _MAX_SCANNED_CONSTANT:
            return None
        first = arr.flat[0]
        if not np.all(arr == first):
            return None
        if arr.dtype.kind == "f" and not np.all(np.signbit(arr) == np.signbit(first)):
            return None                 # 0.0 and -0.0 mixed: not one value
        return first

    def emit(self, op):
        self.ops.append(op)
        for v in op.outputs:
            self._producer[id(v)] = op
        return op

    def emit_constant(self, old_value, array, loc=None):
        op = constant_op(old_value, array, loc)
        self.replace(old_value, op.outputs[0])
        return self.emit(op)

    def keep(self, op, inputs=None, attrs=None):
        """Append `op` with (substituted) inputs and attrs; re-infer if anything changed."""
        inputs = [self.lookup(v) for v in op.inputs] if inputs is None else list(inputs)
        attrs = op.attrs if attrs is None else attrs
        if attrs is op.attrs and inputs == op.inputs:   # Values compare by identity
            return self.emit(op)
        attrs = _retarget_captures(attrs, inputs)
        types = REGISTRY[op.type].infer([v.type for v in inputs], **attrs)
        outs = []
        for old, t in zip(op.outputs, types):
            new = old if old.type == t else Value(old.name, t)
            self.replace(old, new)
            outs.append(new)
        return self.emit(Operation(op.type, op.name, inputs, attrs, outs, op.loc))

    def finish(self, captures=None):
        outputs = [self.lookup(v) for v in self.graph.outputs]
        g = copy_graph(self.graph, self.ops, outputs, captures)
        g._names = self._names
        return g


def _retarget_captures(attrs, inputs):
    """Subgraph captures name the outer Values fed to them (the op's trailing inputs); keep
    that bookkeeping right when those inputs were substituted."""
    out = dict(attrs)
    for k, sub in attrs.items():
        if not isinstance(sub, Graph) or not sub.captures or len(sub.captures) > len(inputs):
            continue
        feeds = inputs[len(inputs) - len(sub.captures):]
        if any(s is not f for (_, s), f in zip(sub.captures, feeds)):
            out[k] = copy_graph(sub, sub.operations, sub.outputs,
                                [(v, f) for (v, _), f in zip(sub.captures, feeds)])
    return out


def map_subgraphs(op, fn):
    """op.attrs with every subgraph replaced by fn(subgraph); op.attrs itself if none changed."""
    if not has_subgraphs(op):
        return op.attrs
    subs = op.subgraphs()
    new = {k: fn(sub) for k, sub in subs}
    if all(new[k] is sub for k, sub in subs):
        return op.attrs
    attrs = dict(op.attrs)
    attrs.update(new)
    return attrs
