"""`graphc bench --contended`: CPU-hog processes start, are counted in the header and the
JSON, run only while a workload is timed, and are gone afterwards on every way out.
No timing assertions: the waits below only bound how long a broken hog may hang a test."""
import json
import os
import subprocess
import sys

import pytest

from graphc.bench import contention, runner
from graphc.cli import main

FAST = ["--quick", "--min-time", "0.005", "--no-peers", "--backend", "numpy",
        "--workload", "dispatch"]
EXPECTED_HOGS = len(contention.plan()[0])


@pytest.fixture
def hog_groups(monkeypatch):
    """Every CpuHogs entered during the test, and the pids alive while modes were timed."""
    groups, alive_while_timed = [], []
    enter = contention.CpuHogs.__enter__

    def recording_enter(self):
        groups.append(self)
        return enter(self)
    monkeypatch.setattr(contention.CpuHogs, "__enter__", recording_enter)
    sample = runner.timing.sample_interleaved

    def checking_sample(series, min_time, *rest):
        current = groups[-1].pids if groups else []
        alive_while_timed.append([p for p in current if not contention.process_gone(p)])
        return sample(series, min_time, *rest)
    monkeypatch.setattr(runner.timing, "sample_interleaved", checking_sample)
    return groups, alive_while_timed


def test_contended_run_counts_its_hogs_and_leaves_none_behind(capsys, tmp_path, hog_groups):
    groups, alive_while_timed = hog_groups
    path = tmp_path / "o.json"
    rc = main(["bench", *FAST, "--workload", "scalar_loop", "--contended",
               "--json", str(path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out.startswith("measuring numpy triad") and "graphc bench --quick --contended:" in out
    plural = "process" if EXPECTED_HOGS == 1 else "processes"
    assert f"contention: {EXPECTED_HOGS} CPU-hog {plural} " in out
    assert f"--contended: {EXPECTED_HOGS} CPU-hog {plural} while each workload" in out
    data = json.loads(path.read_text())["contention"]
    assert data["hog_processes"] == EXPECTED_HOGS
    assert data["started"] == 2 * EXPECTED_HOGS == len(data["pids"])   # two workloads
    assert len(set(data["pids"])) == len(data["pids"]) and all(p > 0 for p in data["pids"])
    assert [p for g in groups for p in g.pids] == data["pids"]
    # the triad ran with no hog; each workload's hogs all ran while its modes were timed
    assert alive_while_timed == [[]] + [g.pids for g in groups]
    assert contention.wait_gone(data["pids"], timeout_s=0) == []      # stopped, not waited on
    assert [g.ended_early for g in groups] == [[], []]
    assert "hogs ended before" not in out
    assert not contention._live


def test_hogs_are_pinned_to_every_core_but_the_first(hog_groups):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")
    cores = contention.usable_cores()
    hogs = contention.CpuHogs(contention.plan()[0], deadline_s=120)
    with hogs:
        pinned = [os.sched_getaffinity(p) for p in hogs.pids]
    assert pinned == [{c} for c in (cores[1:] or cores)]
    assert contention.wait_gone(hogs.pids, timeout_s=0) == []


def test_single_core_machine_hogs_that_core(monkeypatch):
    monkeypatch.setattr(contention, "usable_cores", lambda: [5])
    cores, note = contention.plan()
    assert cores == [5] and note.startswith("1 usable core: the single hog shares it")
    monkeypatch.setattr(contention, "usable_cores", lambda: [0, 2, 3])
    assert contention.plan() == ([2, 3], "2 of 3 usable cores hogged")


def test_ctrl_c_while_timed_stops_the_hogs(monkeypatch, hog_groups):
    groups, _ = hog_groups
    sample = runner.timing.sample_interleaved

    def interrupted(*args):
        sample(*args)
        if groups:              # a workload's timed rounds, not the triad's
            raise KeyboardInterrupt
    monkeypatch.setattr(runner.timing, "sample_interleaved", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["bench", *FAST, "--contended"])
    (group,) = groups
    assert len(group.pids) == EXPECTED_HOGS
    assert contention.wait_gone(group.pids, timeout_s=0) == []


def test_a_hog_stops_by_itself_at_its_deadline():
    hogs = contention.CpuHogs(contention.plan()[0][:1], deadline_s=0.2)
    hogs.__enter__()
    try:
        (proc,) = hogs.procs
        assert proc.wait(timeout=60) == 0       # ended on its own, not by a signal
    finally:
        hogs.stop()


def test_hogs_ending_before_the_timing_are_noted(capsys, monkeypatch):
    monkeypatch.setattr(runner, "_hog_deadline_s", lambda min_time, modes: 0.0)
    sample = runner.timing.sample_interleaved
    groups = []
    enter = contention.CpuHogs.__enter__

    def recording_enter(self):
        groups.append(self)
        return enter(self)
    monkeypatch.setattr(contention.CpuHogs, "__enter__", recording_enter)

    def waiting_sample(series, *rest):
        if groups:      # let the hogs reach their (zero) deadline before the rounds end
            assert contention.wait_gone(groups[-1].pids, timeout_s=60) == []
        return sample(series, *rest)
    monkeypatch.setattr(runner.timing, "sample_interleaved", waiting_sample)
    assert main(["bench", *FAST, "--contended"]) == 0
    out = capsys.readouterr().out
    assert (f"- dispatch: --contended: {EXPECTED_HOGS} of {EXPECTED_HOGS} CPU hogs ended "
            "before the timing did") in out


def test_a_hog_stops_by_itself_when_its_parent_dies():
    script = ("import os, sys\n"
              "from graphc.bench.contention import CpuHogs\n"
              "h = CpuHogs([-1], deadline_s=600)\n"
              "h.pinned = False\n"
              "h.__enter__()\n"
              "print(h.pids[0], flush=True)\n"
              "os._exit(0)   # no finally, no atexit: only the hog's own watch is left\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[0])
    assert contention.wait_gone([pid], timeout_s=60) == []


def test_hog_that_cannot_start_stops_the_run_with_exit_1(capsys, monkeypatch):
    monkeypatch.setattr(contention, "_HOG_SOURCE", "import sys; sys.exit('no hog here')")
    rc = main(["bench", *FAST, "--contended"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert err.startswith("graphc bench: error: --contended: a CPU-hog process did not "
                          "start (exit status 1): no hog here")
    assert not contention._live


def test_uncontended_run_starts_no_hog(capsys, hog_groups):
    groups, _ = hog_groups
    assert main(["bench", *FAST]) == 0
    assert "contention: none" in capsys.readouterr().out and groups == []
