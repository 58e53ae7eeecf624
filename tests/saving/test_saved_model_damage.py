"""A damaged SavedModel never loads as something else: every file truncated, bit-flipped or
replaced by a pickle payload, and well-formed files with unknown ops, attributes, versions or
sizes that disagree with their declarations, all raise GraphcError naming the file, and
nothing from the directory runs."""
import glob
import os
import pickle

import numpy as np
import pytest

import graphc as gc
from graphc.errors import GraphcError
from graphc.saved_model import files


class Net(gc.Module):
    def __init__(self):
        super().__init__()
        self.w = gc.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
        self.big = gc.constant(np.linspace(0, 1, 1500))

    @gc.function(input_signature=[gc.TensorSpec([None, 4])])
    def __call__(self, x):
        return gc.matmul(x, self.w) + gc.cast(gc.reduce_sum(self.big), gc.float32)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sm") / "net")
    net = Net()
    gc.saved_model.save(net, path, signatures=net.__call__)
    return path


def _copy(src, dst):
    import shutil
    shutil.copytree(src, dst)
    return dst


def _files(path):
    return sorted(p for p in glob.glob(os.path.join(path, "**", "*"), recursive=True)
                  if os.path.isfile(p))


class _Boom:
    def __reduce__(self):
        return (os.mkdir, (os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "PICKLE_RAN"),))


def _damages(raw):
    n = len(raw)
    yield "empty", b""
    for cut in sorted({1, n // 3, n // 2, n - 1}):
        if raw[cut:].strip():           # (the index's closing newline carries nothing)
            yield f"truncated to {cut}", raw[:cut]
    for pos in sorted({0, n // 7, n // 2, n - 2, n - 1}):
        for bit in (0, 5):
            flipped = bytearray(raw)
            flipped[pos] ^= 1 << bit
            yield f"bit {bit} of byte {pos} flipped", bytes(flipped)
    yield "pickle payload", pickle.dumps(_Boom())


def test_every_file_damaged_any_way_is_a_graphc_error_naming_it(saved, tmp_path):
    assert gc.saved_model.load(saved) is not None
    names = [os.path.relpath(p, saved) for p in _files(saved)]
    assert len(names) == 3, names          # saved_model.json, the index and the data file
    marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "PICKLE_RAN")
    for rel in names:
        raw = open(os.path.join(saved, rel), "rb").read()
        for what, data in _damages(raw):
            d = _copy(saved, str(tmp_path / f"c{abs(hash((rel, what)))}"))
            target = os.path.join(d, rel)
            with open(target, "wb") as f:
                f.write(data)
            with pytest.raises(GraphcError) as info:
                gc.saved_model.load(d)
            shown = str(info.value)
            named = os.path.basename(target) in shown or "variables.data" in shown
            assert named, f"{rel} {what}: {shown}"
    assert not os.path.exists(marker)


def _rewrite(saved, tmp_path, change):
    d = _copy(saved, str(tmp_path / "edited"))
    path = os.path.join(d, "saved_model.json")
    data = files.read_json(path)
    change(data)
    files.write_json(path, data)         # a valid checksum: only the checks below can catch it
    return d


def _constant(data):
    caps = data["functions"][0]["concrete"][0]["graph"]["captures"]
    return next(c["source"] for c in caps if "constant" in c["source"])


def _attrs(data):
    return next(op["attrs"] for op in _first_op(data) if op["attrs"])


def _first_op(data):
    return data["functions"][0]["concrete"][0]["graph"]["ops"]


@pytest.mark.parametrize("change,message", [
    (lambda d: _first_op(d)[0].update(type="os_system"), "unknown op type 'os_system'"),
    (lambda d: _first_op(d)[-1]["attrs"].update(evil={"int": "1"}), "unknown attribute 'evil'"),
    (lambda d: d.update(ir_version=99), "IR version 99"),
    (lambda d: d["variables"][0].update(shape=[400000, 3]), "declared"),
    (lambda d: d["variables"][0].update(dtype="float64"), "declared"),
    (lambda d: d["functions"][0]["concrete"][0]["graph"]["inputs"][0][1].__setitem__(
        2, [None, 5]), "fails verification"),
    (lambda d: d["functions"][0]["concrete"][0]["graph"]["outputs"].append("nope"),
     "not defined"),
    (lambda d: _constant(d).update(constant={"array": {
        "dtype": "float64", "shape": [10 ** 6, 10 ** 6], "data": ""}}), "needs 8000000000000"),
    (lambda d: _constant(d).update(constant={"array": {
        "dtype": "float64", "shape": [10 ** 9], "ref": "c0"}}), "declared float64\\[1000000000\\]"),
    (lambda d: _attrs(d).update({next(iter(_attrs(d))): {"pickle": "gASV"}}),
     "unknown attribute tag"),
    (lambda d: d["objects"][0]["children"].append(["x", 99]), "bad object reference"),
])
def test_well_formed_but_wrong_files_are_rejected(saved, tmp_path, change, message):
    d = _rewrite(saved, tmp_path, change)
    with pytest.raises(GraphcError, match=message) as info:
        gc.saved_model.load(d)
    assert "saved_model.json" in str(info.value)


def test_future_format_version_and_missing_files(saved, tmp_path):
    d = _copy(saved, str(tmp_path / "v"))
    path = os.path.join(d, "saved_model.json")
    raw = open(path, "rb").read()
    open(path, "wb").write(raw.replace(b"graphc-saved-model 1 ", b"graphc-saved-model 2 ", 1))
    with pytest.raises(GraphcError, match="version '2' is not supported"):
        gc.saved_model.load(d)
    os.remove(path)
    with pytest.raises(GraphcError, match="saved_model.json: file is missing"):
        gc.saved_model.load(d)
    with pytest.raises(GraphcError, match="no such directory"):
        gc.saved_model.load(str(tmp_path / "nowhere"))
    d2 = _copy(saved, str(tmp_path / "w"))
    os.remove(os.path.join(d2, "variables", "variables.index"))
    with pytest.raises(GraphcError, match="variables.index: file is missing"):
        gc.saved_model.load(d2)


def _mutations(data, rng, n):
    """`n` copies of `data`, each with one randomly chosen JSON node replaced."""
    import copy
    import json
    nodes = []

    def collect(x, path):
        nodes.append(path)
        if isinstance(x, dict):
            for k in x:
                collect(x[k], path + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                collect(v, path + (i,))
    collect(data, ())
    junk = [None, True, 0, -1, 2 ** 70, 1.5, "", "x", "float64", [], {}, [None], {"int": "7"},
            {"graph": {}}, ["tensor", "float32", [-1]], [[]], {"a": 1}]
    for _ in range(n):
        d = copy.deepcopy(data)
        path = nodes[rng.integers(1, len(nodes))]
        parent = d
        for p in path[:-1]:
            parent = parent[p]
        parent[path[-1]] = copy.deepcopy(junk[rng.integers(len(junk))])
        yield path, json.loads(json.dumps(d))


def test_random_edits_of_a_checksummed_file_never_crash_the_loader(saved, tmp_path):
    """Every edit either loads (it changed nothing that matters, e.g. a source line) or is a
    GraphcError naming the file: never another exception, never a hang."""
    rng = np.random.default_rng(0)
    data = files.read_json(os.path.join(saved, "saved_model.json"))
    d = _copy(saved, str(tmp_path / "m"))
    path = os.path.join(d, "saved_model.json")
    rejected = 0
    for where, edited in _mutations(data, rng, 300):
        files.write_json(path, edited)
        try:
            gc.saved_model.load(d, backend="numpy")
        except GraphcError as e:
            assert "saved_model.json" in str(e), (where, e)
            rejected += 1
    assert rejected > 200
