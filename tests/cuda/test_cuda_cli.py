"""`graphc graph --backend cuda` shows where each op ran; without a GPU and without the
simulator it is the one-line ValueError text and exit status 2."""
import os
import subprocess
import sys

import pytest

from graphc.cli import main
from graphc.kernels.cuda import availability

SAMPLE = '''
import graphc as gc

def step(x, n):
    y = gc.reshape(x * 2.0, [-1])
    i = gc.constant(0)
    while i < n:
        y = y + 1.0
        i += 1
    return gc.matmul(gc.reshape(y, [2, 3]), gc.transpose(gc.reshape(y, [2, 3])))
'''


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "cuda_sample.py"
    path.write_text(SAMPLE)
    return path


def test_graph_backend_cuda_shows_where_each_op_runs(sample, capsys):
    code = main(["graph", f"{sample}::step", "--arg", "float32[2,3]", "--arg", "int32[]",
                 "--backend", "cuda"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    where = "numba-cuda simulator" if availability.simulator_on() else "GPU"
    report = out[out.index(f"cuda backend plan for graph step ({where})"):]
    assert "reshape 'reshape_" in report and "device view" in report
    assert "while 'while_0': device: predicate copied to the host" in report
    assert "loop body:" in report and "matmul 'matmul_0': kernel: lowering.matmul" in report
    assert "group_0 [multiply_0]: kernel: " in report         # fused groups: CUDA kernels
    assert "transpose 'transpose_0': fallback: no CUDA path for transpose" in report
    assert "fusion groups" not in out        # not the numba report


@pytest.mark.parametrize("backend, words", [("numpy", None), ("numba", "numba backend plan")])
def test_graph_backend_numpy_and_numba(sample, capsys, backend, words):
    code = main(["graph", f"{sample}::step", "--arg", "float32[2,3]", "--arg", "int32[]",
                 "--backend", backend])
    out, _ = capsys.readouterr()
    assert code == 0 and "// optimized graph" in out and "cuda backend plan" not in out
    assert (words in out) if words else ("backend plan" not in out)


def test_without_gpu_or_simulator_one_line_and_status_2(sample, capsys, monkeypatch):
    monkeypatch.setattr(availability, "simulator_on", lambda: False)
    monkeypatch.setattr(availability, "driver_error", lambda: "CUDA driver library cannot "
                        "be found")
    code = main(["graph", f"{sample}::step", "--arg", "float32[2,3]", "--arg", "int32[]",
                 "--backend", "cuda"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "graphc graph: error: backend 'cuda' found no NVIDIA CUDA driver")
    assert "NUMBA_ENABLE_CUDASIM=1" in err


@pytest.mark.skipif(availability.real_gpu(), reason="this machine has a GPU")
def test_without_simulator_in_a_fresh_process(sample):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", "graphc", "graph", f"{sample}::step", "--arg",
                        "float32[2,3]", "--arg", "int32[]", "--backend", "cuda"],
                       capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "backend 'cuda'" in r.stderr
