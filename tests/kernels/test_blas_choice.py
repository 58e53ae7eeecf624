"""How a big product runs (kernels/blas_choice.py): plain, on fewer BLAS threads, or split,
by the median of recent batch means. Timings come from a fake clock or are handed to the
choice directly, so the logic is tested without timing anything."""
import numpy as np
import pytest

from graphc.kernels.cpu import blas, blas_choice, blas_split

WAYS = ("plain", "fewer", "split")


def drive(choice, cost, calls):
    """Run `calls` calls through `choice`, each taking cost(way, call number) seconds;
    the ways in the order they ran."""
    ran = []
    for i in range(calls):
        way = choice.pick()
        ran.append(way)
        choice.record(way, cost(way, i))
    return ran


def steady(**costs):
    return lambda way, i: costs[way]


def test_ways_are_first_timed_single_threaded_first_unless_the_cores_are_known_free(
        monkeypatch):
    from graphc.kernels.cpu import cores
    monkeypatch.setattr(blas, "can_lower", lambda: True)
    monkeypatch.setattr(blas_split, "possible", lambda *a: True)
    for known, free, first in ((False, 2, "fewer"), (True, 1, "fewer"), (True, 2, "plain"),
                               (True, 4, "plain")):
        monkeypatch.setattr(cores, "load_known", lambda: known)
        monkeypatch.setattr(cores, "free_cores", lambda: free)
        ways = blas_choice.ways_for(np.float32, 128, 256, 2, 2)
        assert ways[0] == first and sorted(ways) == ["fewer", "plain", "split"], (known, free)
        assert blas_choice.Choice(ways).pick() == first
        assert blas_choice.ways_for(np.float32, 128, 256, 1, 2) == ["plain", "split"]


def test_load_known_only_after_a_measured_interval(monkeypatch):
    from graphc.kernels.cpu import cores
    now = [100.0]
    busy = iter([50.0, 50.1, 50.2])
    monkeypatch.setattr(cores, "clock", lambda: now[0])
    monkeypatch.setattr(cores, "read_busy", lambda cpus: next(busy))
    monkeypatch.setattr(cores, "own_cpu", lambda: 1.0)
    monkeypatch.setattr(cores, "fixed", lambda: None)
    monkeypatch.setattr(cores, "SIGNAL", cores._Signal())
    assert not cores.load_known()             # one read: no interval measured yet
    now[0] += cores.READ_EVERY / 2
    assert not cores.load_known()             # too soon for a second read
    now[0] += cores.READ_EVERY
    assert cores.load_known() and cores.free_cores() >= 1
    monkeypatch.setattr(cores, "SIGNAL", cores._Signal())
    monkeypatch.setattr(cores, "fixed", lambda: 2)                 # GRAPHC_THREADS
    assert cores.load_known()


def test_every_way_is_timed_once_uncounted_then_the_lowest_median_wins():
    c = blas_choice.Choice(WAYS)
    first = {w: 100.0 for w in WAYS}            # a first run compiles: not a sample
    ran = drive(c, lambda w, i: first.pop(w, None) or {"plain": 1.0, "fewer": 2.0,
                                                        "split": 1.5}[w], 40)
    assert ran[:3 * (blas_choice.BATCH + 1)] == sum(
        ([w] * (blas_choice.BATCH + 1) for w in WAYS), [])
    assert c.medians() == {"plain": 1.0, "fewer": 2.0, "split": 1.5}
    assert c.best == "plain" and ran[-1] == "plain"


def test_a_frequent_tail_loses_to_a_steady_slower_way():
    """Beside a busy-loop process the two-thread call is fast nine times in ten and waits
    20x longer the tenth: its median per call is lower, its mean (what a loop pays) not."""
    c = blas_choice.Choice(("plain", "fewer"))
    cost = lambda w, i: (20.0 if i % 10 == 0 else 1.0) if w == "plain" else 2.0  # noqa: E731
    drive(c, cost, 400)
    assert c.best == "fewer"
    assert c.medians()["plain"] > c.medians()["fewer"]


def test_a_rare_outlier_does_not_flip_the_choice():
    c = blas_choice.Choice(("plain", "fewer"))
    drive(c, steady(plain=1.0, fewer=1.5), 100)
    assert c.best == "plain"
    ran = drive(c, lambda w, i: 200.0 if i == 0 else {"plain": 1.0, "fewer": 1.5}[w], 100)
    assert ran[0] == "plain" and c.best == "plain"      # one slow batch among KEEP


def test_probes_back_off_while_the_choice_holds_and_a_change_resets_them():
    c = blas_choice.Choice(("plain", "fewer"))
    drive(c, steady(plain=1.0, fewer=3.0), 400 * blas_choice.BATCH)
    assert c.best == "plain"
    assert c.every == blas_choice.PROBE_EVERY * blas_choice.MAX_BACKOFF    # backed off
    ran = drive(c, steady(plain=1.0, fewer=3.0), 1024 * blas_choice.BATCH)
    probes = ran.count("fewer") / blas_choice.BATCH
    assert probes <= 1024 / (blas_choice.PROBE_EVERY * blas_choice.MAX_BACKOFF) + 1
    # the machine gets busy: plain now costs 5, fewer still 3 -- the choice follows as
    # soon as most of plain's kept batches are slow ones, and probes often again
    for batches in range(1, blas_choice.KEEP + 1):
        drive(c, steady(plain=5.0, fewer=3.0), blas_choice.BATCH)
        if c.best == "fewer":
            break
    assert c.best == "fewer" and batches <= blas_choice.KEEP // 2 + 2  # (+1: alignment)
    assert c.every == blas_choice.PROBE_EVERY
    ran = drive(c, steady(plain=5.0, fewer=3.0), 80 * blas_choice.BATCH)
    probes = ran[blas_choice.BATCH:].count("plain") / blas_choice.BATCH  # (the batch in flight)
    assert 1 <= probes <= 3


def test_a_way_a_hundred_times_slower_costs_a_few_percent_of_the_time():
    """Two BLAS threads at load 6: 120 ms a call against 1.5 ms on one. Its probes end
    after one call, and come only once the chosen way has run 1/PROBE_SHARE times as long."""
    c = blas_choice.Choice(("fewer", "plain"))          # ways_for's order: one thread first
    spent = {"plain": 0.0, "fewer": 0.0}

    def cost(way, i):
        t = {"plain": 120.0, "fewer": 1.5}[way]
        spent[way] += t
        return t
    first = drive(c, cost, 3 * blas_choice.BATCH)       # every way timed once
    assert first.count("plain") == 2                    # its first run, and one sample
    spent.update(plain=0.0, fewer=0.0)
    ran = drive(c, cost, 20000)
    assert c.best == "fewer"
    assert spent["plain"] <= 2 * blas_choice.PROBE_SHARE * sum(spent.values())
    assert 1 <= ran.count("plain") <= 10                # ~8 probes, one call each


def test_when_the_load_goes_the_faster_way_is_back_within_a_few_batches_of_a_probe():
    """A hog makes plain slow and fewer wins; once it stops, plain's kept batches are all
    slow ones, but a fast probe is repeated at once until its median shows it."""
    c = blas_choice.Choice(("plain", "fewer"))
    drive(c, steady(plain=1.0, fewer=2.0), 40 * blas_choice.BATCH)
    drive(c, steady(plain=9.0, fewer=2.2), 400 * blas_choice.BATCH)    # the hog
    assert c.best == "fewer" and c.every > blas_choice.PROBE_EVERY
    ran = []                                                             # it stops
    while "plain" not in ran:
        ran += drive(c, steady(plain=1.0, fewer=2.0), blas_choice.BATCH)
    limit = max(blas_choice.PROBE_EVERY * blas_choice.MAX_BACKOFF, c.due / 2.0 /
                blas_choice.BATCH) + 2
    assert len(ran) <= limit * blas_choice.BATCH                         # the next probe
    need = blas_choice.KEEP // 2 + 1        # fast batches for plain's median to be fast
    ran = drive(c, steady(plain=1.0, fewer=2.0), need * blas_choice.BATCH)  # (+1: alignment)
    assert ran == ["plain"] * len(ran) and c.best == "plain"    # no fewer batch between


def test_a_call_from_another_threads_batch_is_not_a_sample():
    c = blas_choice.Choice(("plain", "fewer"))
    c.record("plain", 1.0)                              # the warm-up
    c.pick()                                            # a batch of plain begins
    c.record("fewer", 9.0)                              # fewer's first: warm-up
    c.record("fewer", 9.0)                              # not the running batch
    assert not c.means["fewer"] and c.left == blas_choice.BATCH


class FakeLoad:
    """blas_choice's clock, advanced by a cost per way when a product runs (the real
    product runs too, so results are checked)."""

    def __init__(self, monkeypatch, **cost):
        self.t, self.cost, self.ran = 0.0, cost, []
        monkeypatch.setattr(blas_choice, "clock", lambda: self.t)
        monkeypatch.setattr(blas_choice, "CHOICE_MIN", 1)
        monkeypatch.setattr(blas_choice, "_CHOICES", {})
        monkeypatch.setattr(blas_choice, "pool_threads", lambda: 2)
        monkeypatch.setattr(blas_choice, "ways_for", lambda *a: ["plain", "fewer", "split"])
        monkeypatch.setattr(blas_split, "ready", lambda: True)
        monkeypatch.setattr(blas, "FEWER", blas._Fewer())
        real_call, real_mm = blas.call_gemm, blas._MATMUL

        def call(*args):
            self.tick("fewer" if blas.FEWER.depth else "plain")
            return real_call(*args)

        def plain_matmul(*args, **attrs):      # matmul's plain way: the numpy rule
            self.tick("plain")
            return real_mm(*args, **attrs)

        def split(*args):
            self.tick("split")
            return real_call(*args[:-1])       # the parts' sum, without a parallel region
        monkeypatch.setattr(blas, "call_gemm", call)
        monkeypatch.setattr(blas, "_MATMUL", plain_matmul)
        monkeypatch.setattr(blas_split, "split", split)

    def tick(self, way):
        self.ran.append(way)
        self.t += self.cost[way]


@pytest.mark.skipif(not blas.available(), reason="numpy's BLAS exports no gemm")
def test_matmul_follows_the_load_through_a_fake_clock(monkeypatch):
    load = FakeLoad(monkeypatch, plain=1.0, fewer=2.0, split=1.2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 12)).astype(np.float32)
    b = rng.standard_normal((12, 10)).astype(np.float32)
    for _ in range(100):
        np.testing.assert_allclose(blas.matmul(a, b), a @ b, rtol=1e-5)
    (choice,) = blas_choice._CHOICES.values()
    assert choice.best == "plain" and load.ran[-1] == "plain"
    load.cost.update(plain=6.0, split=8.0)                # a busy-loop process appears
    for _ in range(200):
        np.testing.assert_allclose(blas.matmul(a, b), a @ b, rtol=1e-5)
    assert choice.best == "fewer" and load.ran[-1] == "fewer"


@pytest.mark.skipif(not blas.available(), reason="numpy's BLAS exports no gemm")
def test_graphc_graph_lists_each_products_way_and_times(monkeypatch):
    import graphc as gc
    from graphc.kernels.cpu.backend import describe
    FakeLoad(monkeypatch, plain=1e-3, fewer=2e-3, split=3e-3)
    a = np.ones((12, 16), np.float32)
    b = np.ones((12, 10), np.float32)
    f = gc.function(lambda a, b: gc.matmul(a, b, transpose_a=True), backend="numba")
    for _ in range(40):
        np.testing.assert_allclose(f(a, b).numpy(), a.T @ b)
    text = describe(f.get_concrete_function(a, b).graph)
    assert ("big product (this process) 12x16^T @ 12x10 float32: plain (plain 1.000 ms, "
            "fewer 2.000 ms, split 3.000 ms;") in text


@pytest.mark.skipif(not blas.available(), reason="numpy's BLAS exports no gemm")
def test_split_waits_for_its_kernel_on_the_compile_thread(monkeypatch):
    """Background tier: a product runs its other ways while the split kernel compiles on
    graphc's compile thread, never inside the call; split joins the choice once ready."""
    import threading

    from graphc.kernels import tiers
    monkeypatch.setenv("GRAPHC_COMPILE", "background")
    gate = threading.Event()
    monkeypatch.setitem(tiers.GATE, "event", gate)
    monkeypatch.setattr(blas_split, "_READY", threading.Event())
    monkeypatch.setattr(blas_split, "_JOB", [])
    monkeypatch.setattr(blas_choice, "CHOICE_MIN", 1)
    monkeypatch.setattr(blas_choice, "_CHOICES", {})
    monkeypatch.setattr(blas_choice, "ways_for", lambda *a: ["plain", "fewer", "split"])
    a = np.ones((16, 12), np.float32)
    try:
        np.testing.assert_array_equal(blas.matmul(a, a, transpose_b=True), a @ a.T)
        (choice,) = blas_choice._CHOICES.values()
        assert choice.ways == ("plain", "fewer") and choice.later == "split"
        (job,) = blas_split._JOB
        assert job.state == "pending"
    finally:
        gate.set()
    assert job.done.wait(120) and job.state == "ready", job.error
    np.testing.assert_array_equal(blas.matmul(a, a, transpose_b=True), a @ a.T)
    assert choice.ways == ("plain", "fewer", "split") and choice.later is None


def test_batches_timed_beside_a_compile_are_timed_again_once_it_ends(monkeypatch):
    """A choice made while the compile thread took a core (plain looks 10x slower) is
    re-timed by the first batches after the compiles end, not at the next probe."""
    from graphc.kernels import tiers
    busy = [True]
    monkeypatch.setattr(tiers, "compiling", lambda: busy[0])
    c = blas_choice.Choice(("fewer", "plain"))
    drive(c, steady(fewer=1.0, plain=3.0), 40)
    assert c.best == "fewer" and c.beside_compile == {"fewer", "plain"}
    busy[0] = False
    ran = drive(c, steady(fewer=1.0, plain=0.3), 3 * (blas_choice.BATCH + 1))
    assert c.best == "plain" and not c.beside_compile
    assert ran[-blas_choice.BATCH:] == ["plain"] * blas_choice.BATCH
    assert c.probes == 0                # found by re-timing, not by a probe
    ran = drive(c, steady(fewer=1.0, plain=0.3), 100)
    assert ran.count("fewer") <= blas_choice.BATCH and c.best == "plain"   # a probe at most


def test_without_compiles_the_choice_keeps_its_batches(monkeypatch):
    from graphc.kernels import tiers
    monkeypatch.setattr(tiers, "compiling", lambda: False)
    c = blas_choice.Choice(("fewer", "plain"))
    drive(c, steady(fewer=1.0, plain=0.5), 40)
    kept = {w: list(m) for w, m in c.means.items()}
    drive(c, steady(fewer=1.0, plain=0.5), blas_choice.BATCH)
    assert all(list(c.means[w])[:len(v)] == v or len(v) == blas_choice.KEEP
               for w, v in kept.items()) and not c.beside_compile


def test_compiling_counts_queued_and_running_jobs():
    import threading
    from graphc.kernels import tiers
    tiers.wait_all(30)
    assert not tiers.compiling()
    gate = threading.Event()
    started = threading.Event()

    def job():
        started.set()
        gate.wait(30)
    j = tiers.submit("test job", job)
    started.wait(30)
    assert tiers.compiling()
    gate.set()
    j.done.wait(30)
    tiers.wait_all(30)
    assert not tiers.compiling()
