"""Timing: first call, steady-state median, and the numpy triad bandwidth reference."""
import statistics
import time
from dataclasses import dataclass

import numpy as np

# Each timed repeat batches enough calls to last about this long, so that the clock's
# resolution and the loop's own cost vanish for microsecond-sized calls, and so that in
# interleaved rounds what the previous mode leaves behind (worker threads still spinning
# for a few ms: graphc's OpenMP workers, JAX's pool) weighs little in the next one's batch.
_BATCH_SECONDS = 0.05

# The clock every measurement reads; tests replace it with a fake one (no test times code).
clock = time.perf_counter


def settle():
    """Wait for the kernels a first call (or a choice it measured) queued on the background
    compile thread: the first call is timed as a user meets it, the steady state is what runs
    once compiled code is in place (graphc.kernels.tiers)."""
    from ..kernels import tiers
    tiers.wait_all()


@dataclass
class Timing:
    first_s: float      # the first call: tracing + compiling + running
    median_s: float     # median per-call time over the steady-state repeats
    calls: int          # calls timed in the steady state
    repeats: int        # repeats the median is taken over
    output: object      # observe(what the first call returned)


class Series:
    """One call being timed: its first call is done, later batches are added one by one.

    `finish()`, when given, runs inside the timed region after the first call, the warm-up
    and each batch: for a GPU, the device synchronization that makes asynchronous launches
    count as done (one per batch, so the steady state is the device's throughput, as
    torch.utils.benchmark and triton's do_bench measure it)."""

    def __init__(self, call, observe, finish=None):
        self.call = call
        self.finish = finish or _nothing
        t0 = clock()
        output = call()
        self.finish()
        self.first = clock() - t0
        self.output = observe(output)
        settle()
        t0 = clock()
        call()                                      # warm-up, and the batch-size estimate
        self.finish()
        estimate = max(clock() - t0, 1e-9)
        settle()
        self.batch = max(1, int(_BATCH_SECONDS / estimate))
        self.samples = []
        self.spent = 0.0

    def sample(self):
        # one untimed call first: after the other modes' batches, a mode's threads and
        # caches are cold (a 4096x1024 prange softmax right after 15 ms of idling took
        # 4.8 ms instead of 2.2 ms on the 2-core VM), and back-to-back calls are what the
        # steady state means
        self.call()
        self.finish()
        t0 = clock()
        for _ in range(self.batch):
            self.call()
        self.finish()
        elapsed = clock() - t0
        self.spent += elapsed
        self.samples.append(elapsed / self.batch)

    def timing(self):
        return Timing(self.first, statistics.median(self.samples),
                      self.batch * len(self.samples), len(self.samples), self.output)


def _nothing():
    pass


def measure(call, min_time, min_repeats=3, observe=lambda output: output):
    """Time `call()`: its first call, then repeats until `min_time` seconds have passed.

    `observe` is applied to the first call's result before any other call (so state that
    later calls change can be captured). Returns a Timing; per-call times in each repeat
    are averaged over a batch of calls sized from a warm-up call, and the median is over at
    least `min_repeats` repeats.
    """
    return measure_interleaved([(call, observe)], min_time, min_repeats)[0]


def measure_interleaved(calls, min_time, min_repeats=3, finish=None):
    """Time several `(call, observe)` pairs as `measure` does, but in rounds: each round
    runs one batch of every call, until each has had `min_time` seconds. On a shared
    machine whose speed drifts from one second to the next, every call then sees the same
    mix of quiet and busy moments, so their ratios mean something. First calls (and
    `observe`) run in the order given, before any repeat."""
    series = [Series(call, observe, finish) for call, observe in calls]
    sample_interleaved(series, min_time, min_repeats)
    return [x.timing() for x in series]


def sample_interleaved(series, min_time, min_repeats=3):
    """The rounds of `measure_interleaved` over prepared Series."""
    start = clock()
    while (any(len(x.samples) < min_repeats for x in series)
           or any(x.spent < min_time for x in series)):
        for x in series:
            if len(x.samples) < min_repeats or x.spent < min_time:
                x.sample()
        if clock() - start > max_sampling_s(min_time, len(series)):
            break           # a call far slower than its estimate: enough rounds


def max_sampling_s(min_time, count):
    """After this long, sample_interleaved ends once its current round is done."""
    return 20 * max(min_time, 0.05) * count


def numpy_triad_gbps(n, min_time):
    """Memory bandwidth of numpy's `a = b + s * c` on float32 arrays of n elements.

    Counted as STREAM counts it (3 arrays of n elements moved once), the same convention
    the memory-bound workloads' GB/s use: the bytes a single fused pass must move.
    """
    rng = np.random.default_rng(0)
    b = rng.random(n, dtype=np.float32)
    c = rng.random(n, dtype=np.float32)
    a = np.empty_like(b)
    scalar = np.float32(3.0)

    def triad():
        np.multiply(c, scalar, out=a)
        np.add(a, b, out=a)

    timing = measure(triad, min_time)
    return 3 * 4 * n / timing.median_s / 1e9
