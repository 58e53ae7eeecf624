"""How many cores a parallel region may use now: the affinity mask, less what others keep busy.

A parallel region on a core another process is running on waits for the slower half (on
the 2-core VM, softmax 512x1024 took several times the numpy backend's time beside one
busy-loop process). The signal is the busy time of the cores in our affinity mask over the
last interval, from /proc/stat, less this process's own CPU time: what other processes
used. It is read at most every READ_EVERY seconds (a read costs ~20-100 us), never per
call; where /proc/stat is missing, every core in the mask counts as free.
"""
import os
import threading
import time

# The clock the signal's refresh interval is read with; tests replace it with a fake one.
clock = time.perf_counter

READ_EVERY = 0.1          # seconds between two reads of /proc/stat
BUSY_ROUNDING = 0.5       # another process's load above this many cores takes one away
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def affinity():
    """The cpus this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def conditions():
    """What a measured choice depends on: total cpus and the affinity mask's size."""
    return {"cpus": os.cpu_count() or 1, "affinity": len(affinity())}


def read_busy(cpus):
    """Seconds the given cpus have spent busy since boot (None: no /proc/stat here)."""
    want = {f"cpu{c}" for c in cpus}
    busy = 0
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if not line.startswith(b"cpu"):
                    break
                parts = line.split()
                if parts[0].decode() in want:
                    ticks = [int(t) for t in parts[1:9]]   # user .. steal
                    busy += sum(ticks) - ticks[3] - ticks[4]   # less idle and iowait
    except (OSError, ValueError, IndexError):
        return None
    return busy / _TICK


def own_cpu():
    """Seconds of CPU this process (all its threads) has used."""
    return time.process_time()


class _Signal:
    """Free cores, refreshed at most every READ_EVERY seconds (the last value between)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.at = None                       # clock() of the last read
        self.last = None                     # (busy s, own cpu s, clock) of the last read
        self.free = len(affinity())
        self.known = False                   # free measured (two reads), or no /proc/stat

    def get(self):
        now = clock()
        if self.at is not None and now - self.at < READ_EVERY:
            return self.free
        if not self.lock.acquire(blocking=False):
            return self.free                 # another thread is reading it right now
        try:
            self.at = now
            cpus = affinity()
            busy = read_busy(cpus)
            if busy is None:
                self.free, self.known = len(cpus), True
                return self.free
            sample = (busy, own_cpu(), now)
            if self.last is not None and now > self.last[2]:
                others = ((sample[0] - self.last[0]) - (sample[1] - self.last[1])) / (
                    now - self.last[2])
                self.free, self.known = free_from(len(cpus), others), True
            self.last = sample
            return self.free
        finally:
            self.lock.release()


def free_from(n_cpus, others_busy):
    """Cores left for us when other processes keep `others_busy` cores busy (at least 1)."""
    taken = int(max(0.0, others_busy) + 1 - BUSY_ROUNDING)
    return max(1, min(n_cpus, n_cpus - taken))


SIGNAL = _Signal()


def _fixed():
    """GRAPHC_THREADS=N: every parallel region uses N threads (capped by numba's pool),
    whatever the load (benchmarks, tests, a machine whose load the signal cannot see)."""
    v = os.environ.get("GRAPHC_THREADS", "").strip()
    if not v:
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"GRAPHC_THREADS={v!r} is not a number of threads: set it to a "
                         "whole number >= 1, or unset it to use the free cores") from None
    if n < 1:
        raise ValueError(f"GRAPHC_THREADS={n} must be at least 1 (1: serial kernels only)")
    return n


_FIXED = []     # [GRAPHC_THREADS or None] once read: an environment lookup costs ~0.5 us


def fixed():
    """GRAPHC_THREADS, or None when unset."""
    if not _FIXED:
        _FIXED.append(_fixed())
    return _FIXED[0]


def load_known():
    """Is free_cores() a measurement (or fixed by GRAPHC_THREADS), not the first read's
    guess that every core is free?"""
    SIGNAL.get()
    return SIGNAL.known or fixed() is not None


def free_cores():
    """Cores a parallel region may use now (1: run the serial variant)."""
    n = fixed()
    return n if n is not None else SIGNAL.get()
