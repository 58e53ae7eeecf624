"""`graphc bench` leaves cuda out without a real GPU (the simulator included) and its header
says why."""
import pytest

from graphc.bench import backend_status
from graphc.cli import main
from graphc.kernels.cuda import availability


@pytest.mark.skipif(not availability.simulator_on(), reason="a real GPU: cuda is benchmarked")
def test_simulator_is_left_out_with_the_reason_in_the_header(capsys):
    why = backend_status()["cuda"]
    assert why is not None and "simulator" in why
    rc = main(["bench", "--quick", "--min-time", "0.005", "--no-peers", "--workload",
               "dispatch"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert f"cuda: left out: {why}" in out
    table = out[out.index("workload "):]
    assert " cuda " not in table


def test_no_driver_reason_names_the_fix(monkeypatch):
    monkeypatch.setattr(availability, "simulator_on", lambda: False)
    monkeypatch.setattr(availability, "driver_error", lambda: "libcuda.so not found")
    why = backend_status()["cuda"]
    assert "no NVIDIA CUDA driver" in why and "libcuda.so not found" in why


def test_cuda_bench_script_runs_and_checks_against_numpy(monkeypatch, tmp_path, capsys):
    """benchmarks/cuda_bench.py at --small sizes (its figures mean nothing here): every
    section runs, agrees with the numpy backend and lands in the JSON; the MLP section is
    left out for time (the MLP step's agreement is test_cuda_agreement's)."""
    import importlib.util
    import json
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "cuda_bench.py")
    spec = importlib.util.spec_from_file_location("cuda_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "SMALL_MLP", [])
    out = tmp_path / "cb.json"
    assert bench.main(["--small", "--min-time", "0.001", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [r["workload"] for r in data["memory_bound"]] == ["elementwise", "softmax",
                                                               "layernorm"]
    assert set(data["dispatch"]) >= {"cached_call", "empty_launch", "device_array_1"}
    assert "errors" not in data and "FAILED" not in capsys.readouterr().out


@pytest.mark.skipif(not availability.simulator_on(), reason="a real GPU: run it by hand")
def test_cuda_host_bench_runs_with_launches_stubbed(tmp_path):
    """benchmarks/cuda_host_bench.py on the simulator (a worker process of its own, whose
    first calls are checked against backend="numpy"): every case lands in the JSON,
    labelled as stubbed."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    out = tmp_path / "host.json"
    r = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "cuda_host_bench.py"),
                        "--min-time", "0.01", "--json", str(out)], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0, r.stderr
    assert "kernel launches stubbed out" in r.stdout
    report = json.loads(out.read_text())
    assert report["simulated_launches_stubbed"] is True
    assert len(report["rows"]) == 5 and all(
        v["this tree"] > 0 for v in report["rows"].values())
