"""Reading SavedModels of an older IR version: their graphs' JSON is rewritten into this
version's ops before the checked reader sees it (which then verifies the result as usual).

IR version 1 had list primitives of its own for gradients; version 2 folded them into the
tensor_list_* family (issue 15). Each old op becomes tensor_list_* ops that compute the same
bits, its output keeping its name and declared type, so later ops still refer to it:

  loop_stack_new(dtype, element_shape)    -> tensor_list_new(0, ..., dynamic_size=True)
  loop_stack_push / _read / _size         -> tensor_list_push_back / _read / _size
  list_grad_new(dtype)                    -> tensor_list_new(0, dtype, None, True)  ("empty")
  list_grad_add / _read / _stack          -> tensor_list_add / _read_or_zeros / _stack_or_zeros
  list_grad_scatter(indices, g)           -> tensor_list_scatter_add(empty, indices, g)
  list_grad_write(lg, i, g)               -> tensor_list_add(lg, tensor_list_write(empty, i, g))
  list_grad_from_tensor(g)                -> tensor_list_add(empty, tensor_list_unstack(empty, g))

The last two end in an add because version 1 typed every list gradient with an unknown
element shape, and an add with an untyped list gives exactly that type.
"""
import numpy as np

from .serialize import Writer

_RENAMED = {
    "loop_stack_push": "tensor_list_push_back", "loop_stack_read": "tensor_list_read",
    "loop_stack_size": "tensor_list_size", "list_grad_add": "tensor_list_add",
    "list_grad_read": "tensor_list_read_or_zeros", "list_grad_stack": "tensor_list_stack_or_zeros",
}
_ARITY = {"loop_stack_new": 0, "loop_stack_push": 2, "loop_stack_read": 2, "loop_stack_size": 1,
          "list_grad_new": 0, "list_grad_add": 2, "list_grad_read": 3, "list_grad_stack": 2,
          "list_grad_scatter": 2, "list_grad_write": 3, "list_grad_from_tensor": 1}
_ZERO = Writer().attr(np.array(0, np.int32), "the size of an empty list")


def upgrade_functions(functions, version, fail):
    """The `functions` entry of a SavedModel of IR `version`, rewritten to the current one."""
    if version == 1:
        for f in functions:
            for c in f["concrete"]:
                _Graph1(c["graph"], fail).upgrade()
    return functions


class _Graph1:
    """One version-1 graph (and, recursively, its cond/while bodies), upgraded in place."""

    def __init__(self, graph, fail, taken=None):
        self.graph, self.fail = graph, fail
        self.taken = _names(graph, set()) if taken is None else taken
        self.types = {v[0]: v[1] for v in graph["inputs"]}
        self.types.update((c["value"][0], c["value"][1]) for c in graph["captures"])

    def upgrade(self):
        ops = []
        for op in self.graph["ops"]:
            for attr in op["attrs"].values():
                if isinstance(attr, dict) and set(attr) == {"graph"}:
                    _Graph1(attr["graph"], self.fail, self.taken).upgrade()
            ops.extend(self._op(op) if op["type"] in _ARITY else [op])
            self.types.update((o[0], o[1]) for o in op["outputs"])
        self.graph["ops"] = ops

    def _op(self, op):
        old, ins, outs = op["type"], op["inputs"], op["outputs"]
        if len(ins) != _ARITY[old] or len(outs) != 1 or not isinstance(outs[0][1], list):
            self.fail(f"op {op['name']} ({old}) of IR version 1 has {len(ins)} inputs and "
                      f"{len(outs)} outputs; the file is damaged")
        self.loc, out = op["loc"], outs[0]
        dtype = {"dtype": out[1][1]}
        if old in _RENAMED:
            return [dict(op, type=_RENAMED[old])]
        if old in ("loop_stack_new", "list_grad_new"):
            size = self._new_op("constant", [], {"value": _ZERO}, ["tensor", "int32", []])
            es = op["attrs"].get("element_shape") if old == "loop_stack_new" else None
            new = dict(op, type="tensor_list_new", inputs=[size["outputs"][0][0]],
                       attrs={"dtype": op["attrs"].get("dtype"), "element_shape": es,
                              "dynamic_size": True})
            return [size, new]
        pre = []
        empty = self._empty(pre, dtype)
        if old == "list_grad_scatter":
            return pre + [dict(op, type="tensor_list_scatter_add", inputs=[empty] + ins)]
        value = self._type(ins[-1], min_rank=0 if old == "list_grad_write" else 1)
        if old == "list_grad_write":
            written = self._new_op("tensor_list_write", [empty] + ins[1:], {},
                                   ["list", out[1][1], value[2]])
            return pre + [written, dict(op, type="tensor_list_add",
                                        inputs=[ins[0], written["outputs"][0][0]])]
        rows = self._new_op("tensor_list_unstack", [self._empty(pre, dtype)] + ins, {},
                            ["list", out[1][1], value[2][1:]])      # list_grad_from_tensor
        return pre + [rows, dict(op, type="tensor_list_add",
                                 inputs=[empty, rows["outputs"][0][0]])]

    def _type(self, name, min_rank):
        t = self.types.get(name)
        if not isinstance(t, list) or len(t) != 3 or t[0] != "tensor" or \
                not isinstance(t[2], list) or len(t[2]) < min_rank:
            self.fail(f"value {name!r} of IR version 1 is {t!r} where a tensor of rank >= "
                      f"{min_rank} belongs; the file is damaged")
        return t

    def _empty(self, pre, dtype):
        """Append an empty gradient list's ops to `pre`; returns its value's name."""
        size = self._new_op("constant", [], {"value": _ZERO}, ["tensor", "int32", []])
        new = self._new_op("tensor_list_new", [size["outputs"][0][0]],
                           {"dtype": dtype, "element_shape": None, "dynamic_size": True},
                           ["list", dtype["dtype"], None])
        pre += [size, new]
        return new["outputs"][0][0]

    def _new_op(self, type_, inputs, attrs, out_type):
        k = 0
        while f"{type_}_v1_{k}" in self.taken:
            k += 1
        name = f"{type_}_v1_{k}"
        self.taken.add(name)
        self.types[name] = out_type
        return {"type": type_, "name": name, "inputs": inputs, "outputs": [[name, out_type]],
                "attrs": attrs, "loc": self.loc}


def _names(graph, taken):
    """Every op and value name in `graph` and its bodies (new names must not clash)."""
    taken.update(v[0] for v in graph["inputs"])
    taken.update(c["value"][0] for c in graph["captures"])
    for op in graph["ops"]:
        taken.add(op["name"])
        taken.update(o[0] for o in op["outputs"])
        for attr in op["attrs"].values():
            if isinstance(attr, dict) and set(attr) == {"graph"}:
                _names(attr["graph"], taken)
    return taken
