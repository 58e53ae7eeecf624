"""Measured choices expire (kernels/adaptive.py) and parallel regions use the free cores
(kernels/cores.py, launch.py). Every timing here comes from a fake clock that advances by
a cost per variant run, so the choice logic is tested without timing anything."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cpu import adaptive, cores, groups, launch
from graphc.kernels.cpu import kernel as cpu_kernel
from graphc.kernels import cache
from graphc.kernels.stats import COUNTS

pytest.importorskip("numba")


def body(x):
    return gc.reduce_sum(gc.exp(x * 0.5) + gc.sqrt(x * x + 1.0), axis=-1)


def want(x):
    return (np.exp(x * np.float32(0.5)) + np.sqrt(x * x + np.float32(1.0))).sum(axis=-1)


X = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)


class Machine:
    """A fake clock advanced by each variant's cost when it runs, and fake free cores."""

    def __init__(self, monkeypatch, cache_dir, free=2):
        self.t = 0.0
        self.cost = {"serial": 1.0, "parallel": 0.5, "numpy": 2.0}
        self.ran = {"serial": 0, "parallel": 0, "numpy": 0}
        self.free = free
        self.mp = monkeypatch
        monkeypatch.setattr(adaptive, "clock", lambda: self.t)
        monkeypatch.setattr(cores, "free_cores", lambda: self.free)
        monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "measure")
        monkeypatch.setenv("GRAPHC_CACHE_DIR", str(cache_dir))   # no choices of other tests
        # a parallel region whatever numba's pool size on the machine running the tests
        monkeypatch.setattr(launch.numba.config, "NUMBA_NUM_THREADS",
                            max(2, launch.numba.config.NUMBA_NUM_THREADS))
        monkeypatch.setattr(launch, "enter", lambda threads: None)
        monkeypatch.setattr(cpu_kernel, "enter", lambda threads: None)
        monkeypatch.setenv("GRAPHC_NUMBA_MIN_SIZE", "0")
        monkeypatch.setattr(groups, "PAR_MIN", 0)
        monkeypatch.setattr(cpu_kernel, "_KERNELS", {})     # kernels of this test's own
        real_get = groups.get_kernel

        wrapped = set()

        def get_kernel(spec, label):
            k = real_get(spec, label)
            if id(k) not in wrapped:
                wrapped.add(id(k))
                for name in ("serial", "parallel"):
                    monkeypatch.setattr(k, name, self.costly(name, getattr(k, name)))
            return k
        monkeypatch.setattr(groups, "get_kernel", get_kernel)
        real_numpy = groups.GroupRunner.run_numpy
        monkeypatch.setattr(groups.GroupRunner, "run_numpy",
                            lambda runner, arrays: self.costly("numpy", real_numpy)(runner,
                                                                                  arrays))

    def costly(self, name, fn):
        def run(*args):
            self.ran[name] += 1
            self.t += self.cost[name]
            return fn(*args)
        return run

    def calls(self, f, n):
        for _ in range(n):
            np.testing.assert_allclose(f(X).numpy(), want(X), rtol=1e-5)


def _decision(f):
    ((_, decision),) = f.get_concrete_function(X).graph._numba_plan.groups[0] \
        .decisions.items()
    return decision


def test_first_choice_is_the_fastest_variant_and_records_its_conditions(monkeypatch, tmp_path):
    m = Machine(monkeypatch, tmp_path)
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    d = _decision(f)
    assert (d["choice"], d["variant"], d["source"]) == ("kernel", "parallel", "measured")
    assert (d["serial_s"], d["parallel_s"], d["numpy_s"]) == (1.0, 0.5, 2.0)
    assert d["free"] == 2 and d["cpus"] == cores.conditions()["cpus"]
    assert d["affinity"] == cores.conditions()["affinity"]


def test_drifting_slower_than_the_alternative_remeasures_and_flips(monkeypatch, tmp_path):
    m = Machine(monkeypatch, tmp_path)
    m.cost["parallel"] = 1e9          # never chosen: the alternative is numpy alone
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 4)
    f = gc.function(body, backend="numba")
    m.calls(f, 40)
    assert _decision(f)["choice"] == "kernel" and _decision(f)["variant"] == "serial"
    m.cost["serial"] = 1.5            # slower, but not slower than numpy (2.0): kept
    m.calls(f, 4 * adaptive.KEEP * 2)
    assert _decision(f)["choice"] == "kernel" and _decision(f)["serial_s"] == 1.0
    m.cost["serial"] = 3.0            # now slower than numpy's recorded median
    m.calls(f, 4 * adaptive.KEEP)
    d = _decision(f)
    assert d["choice"] == "numpy" and d["serial_s"] == 3.0 and d["numpy_s"] == 2.0
    before = dict(m.ran)
    m.calls(f, 10)
    assert m.ran["numpy"] == before["numpy"] + 10 and m.ran["serial"] == before["serial"]


def test_a_kept_choice_backs_off_before_measuring_again(monkeypatch, tmp_path):
    m = Machine(monkeypatch, tmp_path)
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 1)
    monkeypatch.setattr(adaptive, "MARGIN", 1.0)
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    m.cost["parallel"] = 0.75         # slower than measured, still faster than serial's 1.0
    m.calls(f, 3 * adaptive.KEEP)
    assert _decision(f)["parallel_s"] == 0.5             # not measured again
    m.cost["parallel"] = 2.5          # slower than serial's record (1.0): re-measured...
    m.cost["serial"] = 3.0            # ...but serial is slower now, and numpy too
    m.cost["numpy"] = 4.0
    n0 = m.ran["numpy"]
    m.calls(f, adaptive.KEEP)
    assert m.ran["numpy"] > n0        # the re-measure ran the numpy rules
    d = _decision(f)
    assert d["variant"] == "parallel" and d["numpy_s"] == 4.0 and d["parallel_s"] == 2.5
    watch = f.get_concrete_function(X).graph._numba_plan.groups[0].watches.popitem()[1]
    assert watch.need == 2 * adaptive.KEEP     # nothing changed: wait twice as long


def test_parallel_measured_in_a_busy_spell_is_tried_again_once_it_is_over(monkeypatch,
                                                                         tmp_path):
    """Both cores free by the load signal, but another process held one while the variants
    were measured: parallel lost. When the chosen serial variant then runs faster than it
    was measured, parallel's record is suspect: measured again, and it wins."""
    m = Machine(monkeypatch, tmp_path)
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 1)
    m.cost.update(serial=2.0, parallel=4.0, numpy=6.0)       # the busy spell
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    assert _decision(f)["variant"] == "serial"
    m.calls(f, 2 * adaptive.KEEP)                            # as measured: kept
    assert _decision(f)["parallel_s"] == 4.0
    m.cost.update(serial=1.0, parallel=0.5, numpy=3.0)       # quiet again
    m.calls(f, adaptive.KEEP + 1)
    d = _decision(f)
    assert d["variant"] == "parallel" and d["parallel_s"] == 0.5 and d["serial_s"] == 1.0
    ran = dict(m.ran)
    m.calls(f, 5)
    assert m.ran["parallel"] == ran["parallel"] + 5 and m.ran["serial"] == ran["serial"]


def test_a_faster_choice_without_a_parallel_record_is_not_measured_again(monkeypatch,
                                                                        tmp_path):
    m = Machine(monkeypatch, tmp_path, free=1)       # one free core: parallel not measured
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 1)
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    assert _decision(f)["variant"] == "serial" and "parallel_s" not in _decision(f)
    numpy_runs = m.ran["numpy"]
    m.cost["serial"] = 0.5                           # faster than measured (1.0)
    m.calls(f, 3 * adaptive.KEEP)
    assert _decision(f)["serial_s"] == 1.0 and m.ran["numpy"] == numpy_runs


def test_sampling_times_about_one_call_in_sample_every(monkeypatch, tmp_path):
    m = Machine(monkeypatch, tmp_path)
    seen = []
    real = adaptive.Watch.expired
    monkeypatch.setattr(adaptive.Watch, "expired",
                        lambda w, s, free: seen.append(s) or real(w, s, free))
    f = gc.function(body, backend="numba")
    n = adaptive.SAMPLE_EVERY * 10
    m.calls(f, n)
    assert 9 <= len(seen) <= 11
    assert all(s == 0.5 for s in seen)         # the chosen variant's (parallel's) cost


def test_thread_count_follows_the_free_cores(monkeypatch, tmp_path):
    m = Machine(monkeypatch, tmp_path)
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 1000)
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    assert _decision(f)["variant"] == "parallel"
    ran = dict(m.ran)
    m.free = 1                        # another process took a core: the serial variant runs
    with_counts = COUNTS.kernel_calls
    m.calls(f, 5)
    assert (m.ran["serial"], m.ran["parallel"]) == (ran["serial"] + 5, ran["parallel"])
    assert COUNTS.kernel_calls == with_counts + 5
    m.free = 2
    m.calls(f, 5)
    assert (m.ran["serial"], m.ran["parallel"]) == (ran["serial"] + 5, ran["parallel"] + 5)


def test_other_free_cores_than_measured_with_remeasure(monkeypatch, tmp_path):
    m = Machine(monkeypatch, tmp_path)
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 1)
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    assert _decision(f)["free"] == 2
    m.free = 1
    m.calls(f, adaptive.KEEP + adaptive.CHANGED_SAMPLES)
    d = _decision(f)
    assert d["free"] == 1 and d["variant"] == "serial" and "parallel_s" not in d


def test_region_sets_numbas_thread_count_only_when_it_changes(monkeypatch, tmp_path):
    sets, free = [], [3]
    monkeypatch.setattr(cores, "free_cores", lambda: free[0])
    monkeypatch.setattr(launch.numba.config, "NUMBA_NUM_THREADS", 8)
    monkeypatch.setattr(launch.numba, "set_num_threads", sets.append)
    monkeypatch.setattr(launch, "_set", type(launch._set)())
    call = launch.parallel_or_serial(lambda v: ("parallel", v), lambda v: ("serial", v))
    assert call(1) == ("parallel", 1) and call(2) == ("parallel", 2) and sets == [3]
    free[0] = 1
    assert call(3) == ("serial", 3) and sets == [3]
    free[0] = 20                      # more free cores than numba's pool: the pool
    assert call(4) == ("parallel", 4) and sets == [3, 8]


@pytest.mark.parametrize("entry", [
    {"choice": "kernel", "variant": "serial", "kernel_s": 1.0, "numpy_s": 2.0},  # old format
    {"choice": "kernel", "variant": "serial", "kernel_s": 1.0, "numpy_s": 2.0,
     "cpus": 4096, "affinity": 4096, "free": 2},                      # another machine
    {"choice": "kernel", "variant": "serial", "kernel_s": 1.0, "numpy_s": 2.0,
     "free": 1},                                                      # measured under load
])
def test_a_stored_choice_from_other_conditions_is_measured_again(monkeypatch, tmp_path, entry):
    m = Machine(monkeypatch, tmp_path)
    f = gc.function(body, backend="numba")
    m.calls(f, 1)
    ((key, klass), first), = f.get_concrete_function(X).graph._numba_plan.groups[0] \
        .decisions.items()
    if entry.get("free") == 1:
        entry = dict(entry, cpus=first["cpus"], affinity=first["affinity"])
    cache.put_choice(key, klass, entry)
    assert cache.get_choice(key, klass)["numpy_s"] == 2.0
    g = gc.function(body, backend="numba")
    m.calls(g, 1)
    d = _decision(g)
    assert d["source"] == "measured" and d["variant"] == "parallel"
    assert cache.get_choice(key, klass)["free"] == 2
    h = gc.function(body, backend="numba")     # now it matches: read from disk
    m.calls(h, 1)
    assert _decision(h)["source"] == "disk"


@pytest.mark.parametrize("bad", [{"cpus": "2"}, {"free": 0}, {"affinity": 2.0},
                                 {"free": True}, {"cpus": -1}, {"cpus": None}])
def test_damaged_condition_fields_drop_the_entry(bad):
    entry = {"choice": "kernel", "variant": "serial", "cpus": 2, "affinity": 2, "free": 1}
    assert cache._valid_entry(entry)
    assert not cache._valid_entry(dict(entry, **bad))


def test_free_cores_is_others_busy_time_read_at_most_every_interval(monkeypatch, tmp_path):
    now, busy, own, reads = [0.0], [100.0], [5.0], []
    monkeypatch.setattr(cores, "clock", lambda: now[0])
    monkeypatch.setattr(cores, "affinity", lambda: [0, 1, 2, 3])
    monkeypatch.setattr(cores, "read_busy", lambda cpus: reads.append(1) or busy[0])
    monkeypatch.setattr(cores, "own_cpu", lambda: own[0])
    signal = cores._Signal()
    assert signal.get() == 4 and len(reads) == 1        # nothing to compare with yet
    now[0], busy[0], own[0] = 0.05, 100.2, 5.05
    assert signal.get() == 4 and len(reads) == 1        # within READ_EVERY: not read
    now[0], busy[0], own[0] = 0.25, 100.5, 5.25         # we used 1 core, others 1.0
    assert signal.get() == 3 and len(reads) == 2
    now[0], busy[0], own[0] = 0.45, 101.26, 5.45        # others 2.8 cores
    assert signal.get() == 1
    now[0], busy[0], own[0] = 0.65, 101.5, 5.65         # others 0.2 cores: noise
    assert signal.get() == 4
    monkeypatch.setattr(cores, "read_busy", lambda cpus: None)   # no /proc/stat
    now[0] = 1.0
    assert signal.get() == 4


def test_free_from_rounds_and_clamps():
    assert cores.free_from(2, 0.0) == 2 and cores.free_from(2, 0.4) == 2
    assert cores.free_from(2, 0.6) == 1 and cores.free_from(2, 5.0) == 1
    assert cores.free_from(8, 2.5) == 5 and cores.free_from(1, 0.0) == 1


def test_real_signal_is_within_the_affinity_mask():
    assert 1 <= cores.free_cores() <= len(cores.affinity())
    assert cores.read_busy(cores.affinity()) is None or cores.read_busy([0]) >= 0


@pytest.mark.parametrize("value,want", [("3", 3), ("1", 1), ("", None)])
def test_graphc_threads_fixes_the_count(monkeypatch, value, want):
    monkeypatch.setenv("GRAPHC_THREADS", value)
    monkeypatch.setattr(cores, "_FIXED", [])
    monkeypatch.setattr(cores.SIGNAL, "get", lambda: 7)
    assert cores.free_cores() == (want if want is not None else 7)


@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5"])
def test_graphc_threads_that_is_not_a_count_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv("GRAPHC_THREADS", value)
    monkeypatch.setattr(cores, "_FIXED", [])
    with pytest.raises(ValueError, match="GRAPHC_THREADS"):
        cores.free_cores()
