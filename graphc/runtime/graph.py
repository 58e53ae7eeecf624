"""The graph IR: Values (typed SSA names), Operations and Graphs, with a readable text form."""
import numpy as np


class Value:
    """One SSA value: a name unique within its graph and a static type."""

    __slots__ = ("name", "type")

    def __init__(self, name, type_):
        self.name = name
        self.type = type_

    def __repr__(self):
        return f"%{self.name}: {self.type}"


class Operation:
    """One node: `outputs = type(inputs) {attrs}`; `loc` is the user's (file, line, function)
    that made it (None for ops made by graphc itself, e.g. by a pass)."""

    __slots__ = ("type", "name", "inputs", "attrs", "outputs", "loc")

    def __init__(self, type_, name, inputs, attrs, outputs, loc=None):
        self.type = type_
        self.name = name
        self.inputs = list(inputs)
        self.attrs = dict(attrs)
        self.outputs = list(outputs)
        self.loc = loc

    def subgraphs(self):
        return [(k, v) for k, v in sorted(self.attrs.items()) if isinstance(v, Graph)]

    def __repr__(self):
        return f"<Operation {self.name}: {self.type}>"


class Graph:
    """A function body: typed inputs, an ordered list of operations (program order), outputs.

    `captures` lists inputs fed from outside the signature: for a top-level graph the
    source is the live object (a Tensor or Variable, fed by reference on every call); for a
    cond/while body it is the Value of the enclosing graph that flows in.
    """

    def __init__(self, name="graph", parent=None):
        self.name = name
        self.parent = parent
        self.inputs = []          # signature inputs (Values)
        self.captures = []        # [(Value, source)]; these Values follow `inputs`
        self.operations = []
        self.outputs = []
        self._capture_index = {}  # id(source) -> Value
        self._names = {}
        self._plan = None         # executor cache

    # -- building ----------------------------------------------------------------------
    def unique_name(self, base):
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return f"{base}_{n}"

    def add_input(self, type_, base="arg"):
        name = base if base not in self._names else self.unique_name(base)
        self._names.setdefault(base, 0)
        v = Value(name, type_)
        self.inputs.append(v)
        return v

    def add_capture(self, source, type_, base="capture"):
        key = id(source)
        v = self._capture_index.get(key)
        if v is None:
            v = Value(self.unique_name(base), type_)
            self.captures.append((v, source))
            self._capture_index[key] = v
        return v

    def add_op(self, type_, inputs, attrs, out_types, loc=None):
        name = self.unique_name(type_)
        if len(out_types) == 1:
            outs = [Value(name, out_types[0])]
        else:
            outs = [Value(f"{name}.{i}", t) for i, t in enumerate(out_types)]
        op = Operation(type_, name, inputs, attrs, outs, loc)
        self.operations.append(op)
        return op

    @property
    def all_inputs(self):
        return self.inputs + [v for v, _ in self.captures]

    # -- printing ----------------------------------------------------------------------
    def __str__(self):
        return "\n".join(self._lines(0, header=f"graph {self.name}"))

    def _lines(self, depth, header):
        pad = "  " * depth
        params = [repr(v) for v in self.inputs]
        params += [f"captured {v!r}" for v, _ in self.captures]
        lines = [f"{pad}{header}({', '.join(params)}) {{"]
        for op in self.operations:
            lines.extend(_op_lines(op, depth + 1))
        ret = ", ".join(f"%{v.name}" for v in self.outputs)
        lines.append(f"{pad}  return {ret}" if self.outputs else f"{pad}  return")
        lines.append(f"{pad}}}")
        return lines


def _fmt_attr(v):
    if isinstance(v, np.ndarray):
        if v.size <= 8:
            return np.array2string(v, separator=", ").replace("\n", "")
        return f"<{v.dtype}{list(v.shape)}>"
    if isinstance(v, (np.generic,)):
        return repr(v.item())
    if hasattr(v, "name") and type(v).__name__ == "DType":
        return v.name
    if callable(v) or hasattr(v, "write"):
        return f"<{type(v).__name__}>"
    return repr(v)


def _op_lines(op, depth):
    pad = "  " * depth
    outs = ", ".join(repr(v) for v in op.outputs)
    args = ", ".join(f"%{v.name}" for v in op.inputs)
    plain = {k: v for k, v in sorted(op.attrs.items()) if not isinstance(v, Graph)}
    attrs = ", ".join(f"{k}={_fmt_attr(v)}" for k, v in plain.items())
    lhs = f"{outs} = " if outs else ""
    line = f"{pad}{lhs}{op.type}({args})" + (f" {{{attrs}}}" if attrs else "")
    subs = op.subgraphs()
    if not subs:
        return [line]
    lines = [line + " {"]
    for key, sub in subs:
        lines.extend(sub._lines(depth + 1, header=f"{key}:"))
    lines.append(f"{pad}}}")
    return lines


def walk(graph):
    """Every operation of `graph` and of its subgraphs, depth first, in program order."""
    for op in graph.operations:
        yield op
        for _, sub in op.subgraphs():
            yield from walk(sub)
