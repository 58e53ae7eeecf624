"""How a big matrix product runs, chosen per shape from recent timings of every way.

Three ways to run one gemm: `plain`, numpy's BLAS on the threads the user has it on (what
np.matmul and the numpy backend do); `fewer`, the same call on fewer BLAS threads (one
fewer than the user's count, at most the free cores); `split`, one block of C per numba
thread, each a single-threaded call (blas_split.py). Which is fastest depends on the load
of the moment: on the idle 2-core VM 128x784 @ 784x256 float32 took 337 us plain (two
BLAS threads), 511 us on one, 363 us split; beside one busy-loop process the two-thread
ways have a tail (one call in ten waits 4-8 ms for the thread that shares the busy
core), so their mean, which is what a loop of calls pays, passes the single thread's.

So timings are grouped in batches of BATCH calls of one way, and each way keeps the
means of its last KEEP batches; the way with the lowest median batch mean is used. A
batch mean counts a tail that hits often (one call in ten lands in most batches of 8);
the median over batches ignores a rare one (a page fault, a preempted call). The other
ways get one batch every `every` batches; a probe slower than the choice doubles `every`
(up to MAX_BACKOFF times PROBE_EVERY), and the next probe also waits until the chosen
way has run 1/PROBE_SHARE times as long as this probe took, so a right choice costs next
to nothing even when the other way is a hundred times slower (two BLAS threads at load 6
on the 2-core VM: 120 ms a call against 1.5 ms); a probe call CUT times slower than the
best ends its batch. A probe faster than the choice is run again at once (its older
batches may be from before the load changed), and a change of choice resets `every`.
Batches timed while graphc's compile thread works (tiers.compiling(): a core and the GIL
taken) are dropped when the first batch after it ends, so those ways are timed again at
once: a first choice made beside the MLP step's kernel compiles kept one BLAS thread (2.5
ms a step against 0.95 ms) for seconds, until probes found the cores free.
"""
import statistics
import time
from collections import deque

from . import blas, blas_split, cores
from .. import tiers
from .launch import pool_threads

# The clock the batches are timed with; tests replace it with a fake one.
clock = time.perf_counter

CHOICE_MIN = 1 << 22     # multiply-adds (x@W1 of the MLP step: 25.7M); below: plain always
BATCH = 8                # calls of one way per timed batch
KEEP = 7                 # batch means kept per way
PROBE_EVERY = 16         # batches of the chosen way between two probes of another
MAX_BACKOFF = 8
PROBE_SHARE = 0.03       # probes of a losing way take at most this share of the time
CUT = 4.0                # a probe call this many times slower than the best ends its batch
WAYS = ("plain", "fewer", "split")
_TRANS = 112             # cblas: the operand is stored transposed


class Choice:
    """The ways one product shape may run, their recent batch means, and the one in use."""

    def __init__(self, ways):
        self.user = self.pool = 1    # BLAS and numba threads it was made for (choose())
        self.later = None            # a way waiting for its kernel to compile
        self.again = None            # a way to time again at once (its probe was fast)
        self.ways = tuple(ways)
        self.means = {w: deque(maxlen=KEEP) for w in self.ways}
        self.warm = set()            # ways run once (a first run may include compiling)
        self.beside_compile = set()  # ways with batch means timed while a compile ran
        self.best = self.ways[0]
        self.every = PROBE_EVERY
        self.run = 0                 # batches of the chosen way since the last probe
        self.since = 0.0             # ... and their seconds
        self.due = 0.0               # seconds of them before the next probe (its budget)
        self.probes = 0
        self.way, self.left, self.calls, self.total = self.ways[0], 0, 0, 0.0

    def add(self, way):
        """A way that became possible (its kernel compiled): timed from its next batch."""
        if way not in self.ways:
            self.means[way] = deque(maxlen=KEEP)
            self.ways = self.ways + (way,)

    def medians(self):
        return {w: statistics.median(s) for w, s in list(self.means.items()) if s}

    def pick(self):
        """The way the next call runs."""
        if self.left <= 0:
            self.way, self.left, self.calls, self.total = self._next_batch(), BATCH, 0, 0.0
        return self.way

    def _next_batch(self):
        for w in self.ways:                 # every way timed once before any choice
            if not self.means[w]:
                return w
        if self.again is not None:          # the last probe beat the choice: once more
            w, self.again = self.again, None
            return w
        if len(self.ways) > 1 and self.run >= self.every and self.since >= self.due:
            others = [w for w in self.ways if w != self.best]
            self.probes += 1
            self.run, self.since = 0, 0.0
            return others[self.probes % len(others)]
        self.run += 1
        return self.best

    def record(self, way, seconds):
        """One call of `way` took `seconds`."""
        if way not in self.warm:
            self.warm.add(way)              # not a sample; the batch gets one more call
            return
        if way != self.way:
            return                          # another thread's batch began meanwhile
        self.total += seconds
        self.calls += 1
        self.left -= 1
        if self.left > 0 and way != self.best and self._hopeless(way, seconds):
            self.left = 0                   # no need for 7 more calls that slow
        if self.left == 0:
            mean = self.total / self.calls
            if tiers.compiling():
                self.beside_compile.add(way)
            elif self.beside_compile:       # the compiles are over: time those ways again
                for w in self.beside_compile:
                    self.means[w].clear()
                self.beside_compile.clear()
            self.means[way].append(mean)
            if way == self.best:
                self.since += self.total
            self._choose(way, mean, self.total)

    def _hopeless(self, way, seconds):
        """A call CUT times slower than another way's median: its batch ends with it."""
        others = [m for w, m in self.medians().items() if w != way]
        return bool(others) and seconds > CUT * min(others)

    def _choose(self, way, mean, total):
        medians = self.medians()
        if len(medians) < len(self.ways):
            return
        best = min(self.ways, key=lambda w: medians[w])
        if best != self.best:
            self.best, self.every, self.due = best, PROBE_EVERY, 0.0
        elif way != best and mean < medians[best]:
            self.again = way                # its older batches may predate a change
        elif way != best:
            self.every = min(self.every * 2, PROBE_EVERY * MAX_BACKOFF)
            self.due = total / PROBE_SHARE  # what this probe cost, as a share of the time


_CHOICES = {}


def summary():
    """One line per product shape timed so far in this process: the way in use and every
    way's median batch mean per call."""
    lines = []
    for (dt, ta, tb, m, n, k, user, pool), c in list(_CHOICES.items()):
        a = f"{k}x{m}^T" if ta == _TRANS else f"{m}x{k}"
        b = f"{n}x{k}^T" if tb == _TRANS else f"{k}x{n}"
        times = ", ".join(f"{w} {t * 1e3:.3f} ms" for w, t in c.medians().items())
        lines.append(f"{a} @ {b} {dt.name}: {c.best} ({times or 'not timed yet'}; BLAS "
                     f"threads {user}, numba threads {pool})")
    return lines


def ways_for(dtype, m, n, user, pool):
    """The ways a product can run with the user's BLAS count and numba's pool, in the order
    they are first timed (the first is also the one used until every way has a time). When
    the load signal has measured free cores for all the user's BLAS threads, the user's own
    way first: the first calls run as np.matmul would (with a single thread first, the idle
    2-core VM ran the MLP step at 1.46 ms in its first second, against 1.02 ms on the numpy
    backend). Otherwise a single-threaded
    one first, whose time is steady under any load, so that a first batch of a way that a
    busy machine makes hopeless ends after one call (two BLAS threads at load 6: ~100 ms a
    call, instead of 8 of them)."""
    ways = ["plain"]
    if user > 1 and blas.can_lower():
        idle = cores.load_known() and cores.free_cores() >= user
        ways.insert(1 if idle else 0, "fewer")
    if blas_split.possible(dtype, m, n, pool) and (user == 1 or blas.can_lower()):
        ways.append("split")
    return ways


def _new_choice(dtype, m, n, user, pool):
    ways, later = ways_for(dtype, m, n, user, pool), None
    if "split" in ways and not blas_split.ready():
        ways, later = [w for w in ways if w != "split"], "split"   # added once compiled
    choice = Choice(ways or ["plain"])
    choice.user, choice.pool, choice.later = user, pool, later
    return choice


def choose(dtype, ta, tb, m, n, k):
    """(the product's Choice, the way its next call runs); (None, "plain") for a product
    too small for a choice, or when numpy's BLAS is not reachable. The caller times the
    call and hands the seconds to choice.record(way, seconds)."""
    if m * n * k < CHOICE_MIN or dtype not in blas._GEMM:
        return None, "plain"
    user, pool = blas.user_threads(), pool_threads()
    key = (dtype, ta, tb, m, n, k, user, pool)
    choice = _CHOICES.get(key)
    if choice is None:
        choice = _CHOICES[key] = _new_choice(dtype, m, n, user, pool)
    elif choice.later is not None and blas_split.ready():
        choice.add(choice.later)
        choice.later = None
    return choice, choice.pick()


def run_way(choice, way, dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c):
    """C = alpha*op(A)@op(B) + beta*C on fewer BLAS threads, or split (not `plain`: the
    caller makes that call its own way)."""
    if way == "split":
        fewer = 1
    else:
        fewer = max(1, min(cores.free_cores(), choice.user - 1))
    blas.FEWER.enter(fewer)
    try:
        if way == "split":
            blas_split.split(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                             choice.pool)
        else:
            blas.call_gemm(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c)
    finally:
        blas.FEWER.leave()
