"""Tiered execution: a new kernel or compiled loop compiles in the background while its
numpy plan runs; the runner switches to compiled code between calls, once it is ready.

One daemon worker thread compiles jobs one at a time, in the order they were asked for,
jobs marked `later` after all others (a thread, not a process: see docs/backends.md
"Tiers" for the measurement). A job only
compiles -- it never runs a kernel -- so it never overlaps a parallel region. A job that
fails keeps its runner on the numpy plan for good, with the error shown by `graphc graph`.

`GRAPHC_COMPILE=sync` or `gc.config.set_compile_mode("sync")` compiles before the first
run instead (deterministic: tests and benchmarks that time compiled code).
"""
import atexit
import contextlib
import os
import queue
import threading

MODES = ("background", "sync")
_state = {"mode": None}        # set by gc.config.set_compile_mode; None: the environment


def mode():
    m = _state["mode"] or os.environ.get("GRAPHC_COMPILE") or "background"
    return m if m in MODES else "background"


def set_mode(m):
    if m is not None and m not in MODES:
        raise ValueError(f"compile mode {m!r} is not one of {MODES} (or None: use "
                         "GRAPHC_COMPILE, default 'background')")
    _state["mode"] = m


class Job:
    """One background compile. `state` goes pending -> ready | failed, once."""

    __slots__ = ("what", "fn", "state", "error", "result", "done")

    def __init__(self, what, fn):
        self.what, self.fn = what, fn
        self.state, self.error, self.result = "pending", None, None
        self.done = threading.Event()

    def _run(self):
        try:
            self.result = self.fn()
            self.state = "ready"
        except Exception as e:  # noqa: BLE001 - reported by the runner, which keeps numpy
            self.error = f"{type(e).__name__}: {e}"
            self.state = "failed"
        finally:
            self.done.set()


_jobs = queue.PriorityQueue()     # (later?, sequence number, job)
_lock = threading.Lock()
_worker = {"thread": None, "stopping": False, "seq": 0, "open": 0}   # open: queued or running
# Tests hold the worker on an Event they control; None: run jobs as they come.
GATE = {"event": None}


def submit(what, fn, later=False):
    """Queue `fn` (compiles, returns what the runner needs) and return its Job; a `later`
    job waits until no other job is queued."""
    job = Job(what, fn)
    with _lock:
        if _worker["stopping"]:
            job.state, job.error = "failed", "interpreter is exiting"
            job.done.set()
            return job
        _worker["seq"] += 1
        _worker["open"] += 1
        _jobs.put((bool(later), _worker["seq"], job))
        t = _worker["thread"]
        if t is None or not t.is_alive():
            t = threading.Thread(target=_work, name="graphc-compile", daemon=True)
            _worker["thread"] = t
            t.start()
    return job


# A trace's first call runs its numpy plan with no compile beside it (numba's type
# inference holds the GIL): the worker starts a job once no first call is in flight.
_first_calls = {"n": 0}
_quiet = threading.Condition()
FIRST_CALL_WAIT = 2.0       # ...or after this long, so a slow first call starves nothing


@contextlib.contextmanager
def first_call():
    with _quiet:
        _first_calls["n"] += 1
    try:
        yield
    finally:
        with _quiet:
            _first_calls["n"] -= 1
            _quiet.notify_all()


def _work():
    while True:
        job = _jobs.get()[2]
        with _quiet:
            _quiet.wait_for(lambda: _first_calls["n"] == 0, FIRST_CALL_WAIT)
        gate = GATE["event"]
        if gate is not None:
            gate.wait()
        try:
            if _worker["stopping"]:
                job.state, job.error = "failed", "interpreter is exiting"
                job.done.set()
                continue
            job._run()
        finally:
            with _lock:
                _worker["open"] -= 1


def compiling():
    """Is a compile queued or running? (It takes a core and the GIL: timings taken beside
    it say little about the machine afterwards.)"""
    return _worker["open"] > 0


def wait_all(timeout=None):
    """Block until every queued compile has finished (benchmarks; True if they all did)."""
    done = threading.Event()
    job = submit("wait_all", done.set, later=True)
    return job.done.wait(timeout)


@atexit.register
def _stop():
    # no new compile starts at exit; the one in flight ends with the (daemon) thread
    _worker["stopping"] = True
