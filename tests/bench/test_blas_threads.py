"""`graphc bench` leaves numpy's BLAS threads as they are, says how many, and pins them on
request (`--blas-threads N`), restoring them afterwards."""
import json
import sys
import types

import numpy as np
import pytest

from graphc.bench import WORKLOADS, blas_threads
from graphc.bench.workloads import Case, Workload
from graphc.cli import main

FAST = ["--quick", "--min-time", "0.005", "--no-peers", "--backend", "numpy"]
_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@pytest.fixture
def seen_during_run(monkeypatch):
    """A workload 'probe' that records numpy's BLAS thread count while the bench runs."""
    seen = []

    def build(sizes, seed):
        seen.append(blas_threads.current())
        a = np.ones((4, 4), np.float32)
        import graphc as gc
        return Case(lambda x: gc.matmul(x, x), (gc.constant(a),), (a,))

    monkeypatch.setitem(WORKLOADS, "probe", Workload("probe", "matmul", {}, {}, build,
                                                     lambda s: "4x4 float32"))
    for k in _ENV:
        monkeypatch.delenv(k, raising=False)
    return seen


def bench(capsys, *argv):
    rc = main(["bench", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_default_leaves_blas_threads_alone_and_says_how_many(capsys, tmp_path,
                                                             seen_during_run):
    before = blas_threads.current()
    path = tmp_path / "o.json"
    rc, out, err = bench(capsys, *FAST, "--workload", "probe", "--json", str(path))
    assert rc == 0, err
    shown = "unknown" if before is None else before
    assert f"numpy BLAS threads: {shown} (numpy's default, left as it is; " \
           "--blas-threads N pins it)" in out
    assert seen_during_run and set(seen_during_run) == {before}
    machine = json.loads(path.read_text())["machine"]
    assert machine["blas_thread_count"] == before
    assert blas_threads.current() == before


def test_blas_threads_option_pins_then_restores(capsys, tmp_path, seen_during_run):
    before = blas_threads.current()
    if before is None:
        pytest.skip("numpy's BLAS here reports no thread count")
    path = tmp_path / "o.json"
    rc, out, err = bench(capsys, *FAST, "--workload", "probe", "--blas-threads", "1",
                         "--json", str(path))
    assert rc == 0, err
    assert f"numpy BLAS threads: 1 (pinned by --blas-threads; was {before})" in out
    assert set(seen_during_run) == {1}
    assert json.loads(path.read_text())["machine"]["blas_thread_count"] == 1
    assert blas_threads.current() == before


def test_blas_threads_restored_when_the_run_fails(capsys, seen_during_run, monkeypatch):
    before = blas_threads.current()
    if before is None:
        pytest.skip("numpy's BLAS here reports no thread count")
    from graphc.bench import runner

    def broken(*args, **kwargs):
        raise runner.BenchError("stop here")
    monkeypatch.setattr(runner, "run_workload", broken)
    rc, out, err = bench(capsys, *FAST, "--workload", "probe", "--blas-threads", "1")
    assert rc == 1 and "stop here" in err
    assert blas_threads.current() == before


def test_environment_variable_is_named_as_the_origin(capsys, seen_during_run, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")     # read at start-up only: no effect now
    before = blas_threads.current()
    rc, out, err = bench(capsys, *FAST, "--workload", "probe")
    assert rc == 0, err
    assert "(as set by OPENBLAS_NUM_THREADS=3; --blas-threads N pins it)" in out
    assert set(seen_during_run) == {before}


def test_blas_without_a_thread_setter_is_a_usage_error(capsys, seen_during_run,
                                                       monkeypatch):
    monkeypatch.setattr(blas_threads, "_set", lambda n: False)
    rc, out, err = bench(capsys, *FAST, "--workload", "probe", "--blas-threads", "2")
    assert rc == 2 and err.count("\n") == 1
    assert "--blas-threads 2: numpy's BLAS here offers no way to set its thread count" in err
    assert "OPENBLAS_NUM_THREADS" in err and "triad" not in out and not seen_during_run


def test_threadpoolctl_is_used_when_installed(monkeypatch):
    state = {"threads": 4}
    fake = types.ModuleType("threadpoolctl")
    fake.threadpool_info = lambda: [{"user_api": "openmp", "num_threads": 9},
                                    {"user_api": "blas", "num_threads": state["threads"]}]

    def limits(limits, user_api):
        assert user_api == "blas"
        state["threads"] = limits
    fake.threadpool_limits = limits
    monkeypatch.setitem(sys.modules, "threadpoolctl", fake)
    assert blas_threads.current() == 4
    with blas_threads.BlasThreads(2) as pinned:
        assert state["threads"] == 2 and pinned.note.startswith("2 (pinned")
    assert state["threads"] == 4
    with blas_threads.BlasThreads() as left:
        assert left.threads == 4 and state["threads"] == 4
