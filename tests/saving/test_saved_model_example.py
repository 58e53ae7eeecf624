"""examples/export_and_serve.py trains, exports, and serves from a fresh process that never
imports it; the served predictions match the trained model (the example checks that)."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_export_and_serve_example(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, str(ROOT / "examples" / "export_and_serve.py"),
                          str(tmp_path / "exported")], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "served predictions match the trained model" in res.stdout
    correct = int(res.stdout.rsplit("; ", 1)[1].split("/")[0])
    assert correct >= 24, res.stdout       # it learned something: blobs are separable
    assert (tmp_path / "exported" / "saved_model.json").is_file()
