"""Measured choices that expire: sampled timings of the chosen variant against the others.

A kernel-vs-numpy or serial-vs-parallel choice is measured on the machine as it was then;
another process taking a core can make the chosen variant the slow one. So one call in
SAMPLE_EVERY is timed (two clock reads: ~0.1 us per SAMPLE_EVERY calls of 10 us and more),
and the variants are measured again when the chosen one's recent median is slower than the
best alternative's recorded median, when the free cores differ from those it was measured
with, or when it beat a parallel variant and now runs faster than it was measured (the
parallel variant's record then likely comes from a busy spell). A re-measure that keeps the
choice doubles the samples needed before the next one (up to MAX_BACKOFF times), so a choice
that is right costs next to nothing.
"""
import statistics
import threading
import time
from collections import deque

from . import cores

# The clock every choice measurement reads; tests replace it with a fake one.
clock = time.perf_counter

SAMPLE_EVERY = 64     # one call in this many is timed
KEEP = 9              # recent samples of the chosen variant kept (their median is compared)
MARGIN = 1.1          # slower than an alternative by more than this (noise): re-measure
CHANGED_SAMPLES = 3   # sampled calls in a row seeing other free cores: conditions changed
MAX_BACKOFF = 8
VARIANTS = ("serial", "parallel", "numpy")


def median_time(fn, budget=0.05, runs=5):
    """Median of a few timed runs, fewer when one run is slow (at least two)."""
    times = []
    start = clock()
    for k in range(runs):
        t0 = clock()
        fn()
        times.append(clock() - t0)
        if k and clock() - start > budget:
            break
    return statistics.median(times)


def conditions(free):
    """The fields a measured choice records about the machine it was measured on."""
    return dict(cores.conditions(), free=free)


def trusted(entry, free):
    """A stored choice counts only if measured on this many cpus, this affinity mask's size
    and the same number of free cores as now (older entries lack them: measured again)."""
    return all(entry.get(k) == v for k, v in conditions(free).items())


def chosen(decision):
    return "numpy" if decision["choice"] == "numpy" else decision.get("variant", "serial")


class Watch:
    """Samples of one decision's chosen variant; says when to measure the variants again."""

    def __init__(self, decision, need=KEEP):
        self.decision = decision
        self.need = need              # sampled calls before a re-measure may happen
        self.samples = deque(maxlen=KEEP)
        self.seen = 0                 # sampled calls so far
        self.changed = 0              # sampled calls in a row with other free cores
        self.tick = 0                 # calls so far (racy across threads: only a rate)
        self.busy = threading.Lock()  # one re-measure at a time

    def expired(self, seconds, free):
        """Record one sampled call: True when the choice should be measured again."""
        self.seen += 1
        self.changed = self.changed + 1 if free != self.decision.get("free") else 0
        if not self.changed:
            self.samples.append(seconds)
        if self.seen < self.need:
            return False
        if self.changed >= CHANGED_SAMPLES:
            return True
        alt = self.alternative_s()
        if alt is None or len(self.samples) < KEEP:
            return False
        now = statistics.median(self.samples)
        return now > alt * MARGIN or self.parallel_suspect(now)

    def parallel_suspect(self, now):
        """The chosen variant runs faster than when it was measured (by MARGIN) and it beat
        a parallel one: a busy spell then, whose other process held a core of the parallel
        region. With the same free cores now, its record would otherwise never be tested
        again (layernorm 8192x512: serial kept at ~2x the time of parallel on a quiet
        machine, from a record of parallel 8.0 ms vs serial 3.5 ms made under load)."""
        mine = chosen(self.decision)
        own = self.decision.get(mine + "_s")
        return (mine != "parallel" and self.decision.get("parallel_s") is not None and
                own is not None and now * MARGIN < own)

    def alternative_s(self):
        """The best recorded median among the variants not chosen (None: there is none)."""
        mine = chosen(self.decision)
        times = [self.decision[v + "_s"] for v in VARIANTS
                 if v != mine and self.decision.get(v + "_s") is not None]
        return min(times) if times else None

    def successor(self, decision):
        """The watch for the decision a re-measure made: back off when nothing changed."""
        same = chosen(decision) == chosen(self.decision) and \
            decision.get("free") == self.decision.get("free")
        return Watch(decision, min(self.need * 2, KEEP * MAX_BACKOFF) if same else KEEP)
