"""Timing: first call, steady-state median, and the numpy triad bandwidth reference."""
import statistics
import time
from dataclasses import dataclass

import numpy as np

# Each timed repeat batches enough calls to last about this long, so that the clock's
# resolution and the loop's own cost vanish for microsecond-sized calls.
_BATCH_SECONDS = 0.005


@dataclass
class Timing:
    first_s: float      # the first call: tracing + compiling + running
    median_s: float     # median per-call time over the steady-state repeats
    calls: int          # calls timed in the steady state
    repeats: int        # repeats the median is taken over
    output: object      # observe(what the first call returned)


def measure(call, min_time, min_repeats=3, observe=lambda output: output):
    """Time `call()`: its first call, then repeats until `min_time` seconds have passed.

    `observe` is applied to the first call's result before any other call (so state that
    later calls change can be captured). Returns a Timing; per-call times in each repeat
    are averaged over a batch of calls sized from a warm-up call, and the median is over at
    least `min_repeats` repeats.
    """
    t0 = time.perf_counter()
    output = call()
    first = time.perf_counter() - t0
    output = observe(output)
    t0 = time.perf_counter()
    call()                                          # warm-up, and the batch-size estimate
    estimate = max(time.perf_counter() - t0, 1e-9)
    batch = max(1, int(_BATCH_SECONDS / estimate))
    samples = []
    start = time.perf_counter()
    while len(samples) < min_repeats or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter() - t0) / batch)
    return Timing(first, statistics.median(samples), batch * len(samples), len(samples),
                  output)


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
