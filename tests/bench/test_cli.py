"""`graphc bench` in-process: the JSON schema, the table, the agreement check, option errors."""
import json
import sys

import numpy as np
import pytest

import graphc as gc
from graphc.bench import WORKLOADS, backend_status
from graphc.bench.workloads import Case, Workload
from graphc.cli import main

FAST = ["--quick", "--min-time", "0.005", "--no-peers"]
AVAILABLE = [b for b, why in backend_status().items() if why is None]


def bench(capsys, *argv):
    rc = main(["bench", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_quick_dispatch_writes_table_and_json(capsys, tmp_path):
    path = tmp_path / "out.json"
    rc, out, err = bench(capsys, "--quick", "--min-time", "0.01", "--workload", "dispatch",
                         "--json", str(path))
    assert rc == 0, err
    assert "[1/1] dispatch (scalars float32):" in out
    assert "numpy triad" in out and f"{gc.__version__}" in out
    table = out[out.index("workload "):]
    for mode in ["eager"] + AVAILABLE:
        assert f" {mode} " in table
    data = json.loads(path.read_text())
    assert set(data) == {"machine", "quick", "min_time_s", "backends", "triad_gbps",
                         "triad_elements", "peers", "workloads", "contention",
                         "device_copy_gbps"}
    assert data["contention"] is None and "contention: none (--contended adds" in out
    assert data["device_copy_gbps"] is None and "device-to-device copy" not in out
    assert data["quick"] is True and data["min_time_s"] == 0.01
    assert data["backends"] == ["eager"] + AVAILABLE
    assert data["triad_gbps"] > 0 and data["machine"]["cores"] >= 1
    for key in ("date", "cpu", "python", "numpy", "numba", "graphc"):
        assert data["machine"][key]
    (w,) = data["workloads"]
    assert w["name"] == "dispatch" and w["skipped"] is None and w["bytes_moved"] is None
    modes = [r["mode"] for r in w["results"]]
    assert modes[:1 + len(AVAILABLE)] == ["eager"] + AVAILABLE
    eager = w["results"][0]
    assert eager["speedup"] == 1.0
    for r in w["results"]:
        assert set(r) == {"mode", "kind", "first_call_s", "median_s", "calls", "repeats",
                          "speedup", "gbps"}
        assert r["median_s"] > 0 and r["first_call_s"] > 0 and r["repeats"] >= 3
        assert r["calls"] >= r["repeats"] and r["gbps"] is None
        assert r["speedup"] == pytest.approx(eager["median_s"] / r["median_s"])
    assert {r["kind"] for r in w["results"]} <= {"eager", "graphc", "peer"}


def test_memory_bound_workload_reports_gbps(capsys, tmp_path, monkeypatch):
    small = Workload("tiny_chain", "chain", {"n": 64}, {"n": 64},
                     WORKLOADS["elementwise"].build, lambda s: f"{s['n']} float32",
                     bytes_moved=lambda s: 8 * s["n"])
    monkeypatch.setitem(WORKLOADS, "tiny_chain", small)
    path = tmp_path / "out.json"
    rc, out, err = bench(capsys, *FAST, "--workload", "tiny_chain", "--backend", "numpy",
                         "--json", str(path))
    assert rc == 0, err
    (w,) = json.loads(path.read_text())["workloads"]
    assert w["bytes_moved"] == 512
    for r in w["results"]:
        assert r["gbps"] == pytest.approx(512 / r["median_s"] / 1e9)


def _drifting_workload(monkeypatch):
    """x + (number of Python calls so far): eager and the traced graph see different counts."""
    calls = [0]

    def drift(x):
        calls[0] += 1
        return x + float(calls[0])

    def build(sizes, seed):
        a = np.arange(4, dtype=np.float32)
        return Case(drift, (gc.constant(a),), (a,))

    monkeypatch.setitem(WORKLOADS, "drift", Workload("drift", "impure", {}, {}, build,
                                                     lambda s: "4 float32"))


def test_disagreement_with_eager_stops_with_exit_1(capsys, monkeypatch):
    _drifting_workload(monkeypatch)
    rc, out, err = bench(capsys, *FAST, "--workload", "drift", "--backend", "numpy")
    assert rc == 1
    assert "workload 'drift': mode 'numpy' disagrees with eager" in err
    assert "at index (" in err and "4 of 4 elements" in err and "graphc bug" in err
    assert "Traceback" not in err and "workload  " not in out   # no table printed
    progress = out[out.index("[1/1] drift"):].splitlines()[0]
    assert " numpy " not in progress and " eager " not in progress   # checked before timing


def test_mode_that_raises_stops_with_exit_1(capsys, monkeypatch):
    def python_only(x):
        return gc.constant(x.numpy() + 1.0)     # numpy() of a symbolic tensor fails

    def build(sizes, seed):
        return Case(python_only, (gc.constant(np.float32(2.0)),), (np.float32(2.0),))

    monkeypatch.setitem(WORKLOADS, "pyonly", Workload("pyonly", "x", {}, {}, build,
                                                      lambda s: "scalar"))
    rc, out, err = bench(capsys, *FAST, "--workload", "pyonly", "--backend", "numpy")
    assert rc == 1
    assert "workload 'pyonly' failed in mode 'numpy': OperatorNotAllowedInGraphError" in err


def test_skipped_workload_is_reported(capsys, tmp_path, monkeypatch):
    skip = Workload("needs_x", "x", {}, {}, WORKLOADS["dispatch"].build, lambda s: "s",
                    requires=lambda: "needs feature X")
    monkeypatch.setitem(WORKLOADS, "needs_x", skip)
    path = tmp_path / "o.json"
    rc, out, err = bench(capsys, *FAST, "--workload", "needs_x", "--json", str(path))
    assert rc == 0, err
    assert "skipped: needs feature X" in out and "- needs_x skipped: needs feature X" in out
    (w,) = json.loads(path.read_text())["workloads"]
    assert w["skipped"] == "needs feature X" and w["results"] == []


@pytest.mark.parametrize("argv, message", [
    (["--workload", "nope"], "unknown workload 'nope'; choose from elementwise, softmax"),
    (["--workload", "dispatch,nope"], "unknown workload 'nope'"),
    (["--backend", "tpu"], "unknown backend 'tpu'; choose from numpy, numba, cuda"),
    (["--min-time", "0"], "--min-time must be a positive number of seconds, got 0.0"),
    (["--blas-threads", "0"], "--blas-threads must be at least 1, got 0"),
    (["--json", "/no/such/dir/x.json"], "--json /no/such/dir/x.json: directory /no/such/dir "
                                        "does not exist"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, message):
    rc, out, err = bench(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("graphc bench: error: ")
    assert message in err
    assert "triad" not in out          # nothing was run


def test_unavailable_backend_exits_2_naming_the_reason(capsys):
    missing = [b for b, why in backend_status().items() if why]
    if not missing:
        pytest.skip("every backend is available here")
    rc, out, err = bench(capsys, "--backend", missing[0])
    assert rc == 2 and err.startswith(f"graphc bench: error: --backend {missing[0]}: ")
    assert backend_status()[missing[0]] in err


def test_plot_without_matplotlib_exits_2_before_running(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # makes `import matplotlib` fail
    rc, out, err = bench(capsys, *FAST, "--workload", "dispatch", "--plot", "x.png")
    assert rc == 2
    assert "--plot needs matplotlib, which is not installed" in err
    assert "pip install matplotlib" in err and err.count("\n") == 1
    assert "triad" not in out


def test_plot_with_matplotlib_writes_png(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "speedups.png"
    rc, out, err = bench(capsys, *FAST, "--workload", "dispatch", "--plot", str(path))
    assert rc == 0, err
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_list_names_every_workload(capsys):
    rc, out, err = bench(capsys, "--list")
    assert rc == 0
    assert [line.split()[0] for line in out.splitlines()] == list(WORKLOADS)


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for option in ("--workload", "--backend", "--quick", "--json", "--plot", "--min-time",
                   "--contended", "--blas-threads"):
        assert option in out


