"""`graphc saved-model show/run`: the listing, running a signature on .npy inputs (printed
or written), and one-line errors with exit status 2 for bad directories and inputs."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import graphc as gc
from graphc.cli import main


class Net(gc.Module):
    def __init__(self):
        super().__init__()
        self.w = gc.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        self.steps = gc.Variable(0, trainable=False)

    @gc.function(input_signature=[gc.TensorSpec([None, 3], name="x")])
    def __call__(self, x):
        y = gc.matmul(x, self.w)
        return {"y": y, "label": gc.argmax(y, axis=1)}

    @gc.function
    def bump(self, n):
        self.steps.assign_add(n)
        return self.steps.read_value()


X = np.array([[1, 0, 2], [0, -1, 1]], np.float32)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cli") / "net")
    net = Net()
    net.bump(gc.constant(1))
    gc.saved_model.save(net, path, signatures=net.__call__)
    return path


def _cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_show_lists_signatures_objects_functions_and_variables(exported, capsys):
    rc, out, _ = _cli(capsys, "saved-model", "show", exported)
    assert rc == 0
    assert "SavedModel: 1 objects, 2 functions, 2 variables, 1 signatures" in out
    assert "  serving_default" in out and "root.bump: 1 trace(s)" in out
    assert "root.w: float32[3,2]" in out and "root.steps: int32[] (not trainable)" in out
    assert "input  x" not in out
    rc, out, _ = _cli(capsys, "saved-model", "show", exported, "--all")
    assert "    input  x: float32[?,3]" in out
    assert "    output y: float32[?,2]" in out and "    output label: int64[?]" in out
    assert "    (n=int32[]) -> (int32[])" in out
    assert "    (x=float32[?,3]) -> (float32[?,2], int64[?])" in out


def test_run_prints_or_writes_the_outputs(exported, capsys, tmp_path):
    np.save(tmp_path / "x.npy", X)
    rc, out, _ = _cli(capsys, "saved-model", "run", exported, "--signature",
                      "serving_default", "--input", f"x={tmp_path / 'x.npy'}")
    want = X @ np.arange(6, dtype=np.float32).reshape(3, 2)
    assert rc == 0
    assert "y: float32[2,2]" in out and np.array2string(want) in out
    assert "label: int64[2]" in out
    rc, out, _ = _cli(capsys, "saved-model", "run", exported, "--signature",
                      "serving_default", "--input", f"x={tmp_path / 'x.npy'}", "--output",
                      str(tmp_path / "out"))
    assert rc == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), want)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "label.npy"), want.argmax(1))


def test_bad_directories_and_inputs_are_one_line_errors(exported, capsys, tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "bad.npy", np.ones((2, 4), np.float32))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "pickle.npy").write_bytes(pickle.dumps([1, 2]))
    os.makedirs(tmp_path / "empty")
    cases = [
        (["show", str(tmp_path / "missing")], "no such directory"),
        (["show", str(tmp_path / "empty")], "saved_model.json: file is missing"),
        (["run", exported, "--signature", "nope", "--input", f"x={tmp_path / 'x.npy'}"],
         "has no signature 'nope' (it has: serving_default)"),
        (["run", exported, "--signature", "serving_default", "--input", "x"], "NAME=FILE"),
        (["run", exported, "--signature", "serving_default", "--input",
          f"x={tmp_path / 'nofile.npy'}"], "cannot read it"),
        (["run", exported, "--signature", "serving_default", "--input",
          f"x={tmp_path / 'obj.npy'}"], "without pickle"),
        (["run", exported, "--signature", "serving_default", "--input",
          f"x={tmp_path / 'pickle.npy'}"], "without pickle"),
        (["run", exported, "--signature", "serving_default", "--input",
          f"x={tmp_path / 'bad.npy'}"], "must be TensorSpec"),
        (["run", exported, "--signature", "serving_default", "--input",
          f"y={tmp_path / 'x.npy'}"], "missing ['x'], unexpected ['y']"),
    ]
    for argv, message in cases:
        rc, out, err = _cli(capsys, "saved-model", *argv)
        assert rc == 2, argv
        assert err.count("\n") == 1 and message in err, (argv, err)
        assert err.startswith("graphc saved-model: error: ")


def test_damaged_model_is_a_one_line_error(exported, capsys, tmp_path):
    import shutil
    d = str(tmp_path / "copy")
    shutil.copytree(exported, d)
    with open(os.path.join(d, "saved_model.json"), "r+b") as f:
        f.truncate(100)
    rc, _, err = _cli(capsys, "saved-model", "show", d)
    assert rc == 2 and "saved_model.json: checksum mismatch" in err and err.count("\n") == 1


def test_help_and_the_installed_entry_point(exported):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    res = subprocess.run([sys.executable, "-m", "graphc", "saved-model", "run", "--help"],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "--signature NAME" in res.stdout
    res = subprocess.run([sys.executable, "-m", "graphc", "saved-model", "show", exported],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "serving_default" in res.stdout
