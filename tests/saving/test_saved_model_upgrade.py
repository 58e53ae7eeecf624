"""A SavedModel of IR version 1 (written by graphc before its gradient list primitives were
folded into tensor_list_*, see data/make_list_ops_v1.py) loads, runs today's ops, computes
the bits it computed then, and saves again as the current version; a damaged one is a
GraphcError naming the file."""
import os
import re
import shutil

import numpy as np
import pytest

import graphc as gc
from graphc.errors import GraphcError
from graphc.runtime.graph import walk
from graphc.saved_model import files
from graphc.saved_model.serialize import IR_VERSION

from .data_files import DATA, maker_module

V1 = os.path.join(DATA, "list_ops_v1")
OLD_OPS = {"list_grad_new", "list_grad_add", "list_grad_write", "list_grad_read",
           "list_grad_stack", "list_grad_from_tensor", "list_grad_scatter",
           "loop_stack_new", "loop_stack_push", "loop_stack_read", "loop_stack_size"}
NEW_OPS = {"tensor_list_new", "tensor_list_push_back", "tensor_list_read", "tensor_list_size",
           "tensor_list_add", "tensor_list_write", "tensor_list_read_or_zeros",
           "tensor_list_stack_or_zeros", "tensor_list_unstack", "tensor_list_scatter_add"}


def _x():
    return gc.constant(np.load(os.path.join(V1, "x.npy"), allow_pickle=False))


def _expected(backend="numpy"):
    """What graphc computed from the model when it saved it (numba: kernels forced on)."""
    return np.load(os.path.join(V1, f"expected_{backend}.npy"), allow_pickle=False)


def _run(fn, backend, numba_forced):
    if backend == "numba":
        with numba_forced.expect():
            return fn().numpy()
    return fn().numpy()


def _ops_in(loaded):
    return {op.type for _, cf in loaded.grads._traces for op in walk(cf.graph)}


def test_the_fixture_is_version_1_and_holds_every_old_list_op():
    data = files.read_json(os.path.join(V1, "saved_model.json"))
    assert data["ir_version"] == 1 < IR_VERSION
    used = set(re.findall(r"'type': '(\w+)'", repr(data["functions"])))
    assert OLD_OPS <= used


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_version_1_model_computes_the_bits_it_computed_when_saved(backend, numba_forced):
    loaded = gc.saved_model.load(V1, backend=backend)
    ops = _ops_in(loaded)
    assert not ops & OLD_OPS and NEW_OPS <= ops
    got = _run(lambda: loaded.grads(_x()), backend, numba_forced)
    want = _expected(backend)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_version_1_model_agrees_with_todays_trace_and_eager(backend, numba_forced):
    model = maker_module("make_list_ops_v1").ListGrads()
    python = model.grads.python_function
    today = _run(lambda: gc.function(python, backend=backend)(model, _x()), backend,
                 numba_forced)
    assert today.tobytes() == _expected(backend).tobytes()
    np.testing.assert_allclose(python(model, _x()).numpy(), today, rtol=1e-5)


def test_an_upgraded_model_saves_as_the_current_version(tmp_path):
    loaded = gc.saved_model.load(V1, backend="numpy")
    again = str(tmp_path / "again")
    gc.saved_model.save(loaded, again)
    assert files.read_json(os.path.join(again, "saved_model.json"))["ir_version"] == IR_VERSION
    reloaded = gc.saved_model.load(again, backend="numpy")
    assert reloaded.grads(_x()).numpy().tobytes() == _expected().tobytes()


def _edited(tmp_path, change):
    d = str(tmp_path / "edited")
    shutil.copytree(V1, d)
    path = os.path.join(d, "saved_model.json")
    data = files.read_json(path)
    change(data)
    files.write_json(path, data)         # a valid checksum: only the loader's checks can catch it
    return d


def _old_ops(data, type_):
    found = []

    def visit(graph):
        for op in graph["ops"]:
            if op["type"] == type_:
                found.append(op)
            for a in op["attrs"].values():
                if isinstance(a, dict) and set(a) == {"graph"}:
                    visit(a["graph"])
    for f in data["functions"]:
        for c in f["concrete"]:
            visit(c["graph"])
    assert found, type_
    return found


def _scalar_input(data):
    """A list_grad_from_tensor whose input is declared a scalar."""
    op = _old_ops(data, "list_grad_from_tensor")[0]
    graph_inputs = data["functions"][0]["concrete"][0]["graph"]["inputs"]
    op["inputs"] = [graph_inputs[0][0]]
    graph_inputs[0][1][2] = []


@pytest.mark.parametrize("change,message", [
    (lambda d: _old_ops(d, "loop_stack_push")[0]["inputs"].pop(), r"loop_stack_push.*1 inputs"),
    (lambda d: _old_ops(d, "list_grad_write")[0]["outputs"].append(["extra", None]),
     r"list_grad_write.*2 outputs"),
    (_scalar_input, "where a tensor of rank >= 1 belongs"),
    (lambda d: _old_ops(d, "list_grad_write")[0]["inputs"].__setitem__(2, "nowhere"),
     "value 'nowhere' of IR version 1"),
    (lambda d: _old_ops(d, "loop_stack_new")[0]["attrs"].update(
        element_shape={"tuple": [{"int": "7"}]}), "fails verification"),
    (lambda d: d.update(ir_version=0), "IR version 0 is not supported"),
    (lambda d: d.update(ir_version=True), "IR version True is not supported"),
    (lambda d: d.update(ir_version=IR_VERSION + 1), f"IR version {IR_VERSION + 1} is not"),
])
def test_a_damaged_version_1_model_is_rejected(tmp_path, change, message):
    d = _edited(tmp_path, change)
    with pytest.raises(GraphcError, match=message) as info:
        gc.saved_model.load(d)
    assert "saved_model.json" in str(info.value)


def test_a_version_2_file_with_old_op_names_is_rejected(tmp_path):
    d = _edited(tmp_path, lambda data: data.update(ir_version=IR_VERSION))
    with pytest.raises(GraphcError, match="unknown op type 'l(ist_grad|oop_stack)_"):
        gc.saved_model.load(d)
