"""`graphc bench --contended`: busy-loop processes on all but one core beside the workloads.

The hogs run only while a workload's modes are timed (after every first call has been
checked against eager), so first-call and compile times stay those of a quiet machine and
the medians are those of a machine with every other core taken. Each hog is its own
process (a thread would share our GIL), pinned to one core where affinity can be set, and
stops by itself: at a hard deadline, and as soon as its parent is gone. The parent stops
them on every way out (finally, and atexit for an interpreter shutting down).
"""
import atexit
import os
import select
import subprocess
import sys
import time

# The hog: signal readiness, then spin, looking at the clock and the parent every few ms.
_HOG_SOURCE = """\
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C in the terminal: end quietly
parent, deadline, core = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
if core >= 0:
    os.sched_setaffinity(0, {core})
sys.stdout.write("ready\\n")
sys.stdout.flush()
end = time.monotonic() + deadline
while time.monotonic() < end and os.getppid() == parent:
    for _ in range(100000):
        pass
"""

_START_TIMEOUT_S = 30.0


class HogError(Exception):
    """A CPU-hog process could not be started."""

_live = set()        # Popen objects not yet stopped, whatever way we leave


def _stop_all_live():
    for proc in list(_live):
        _stop(proc)


atexit.register(_stop_all_live)


def usable_cores():
    """The cores this process may run on (its affinity mask), in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def plan():
    """(cores to hog, a note): every usable core but the first; on a single core, that one."""
    cores = usable_cores()
    if len(cores) == 1:
        return cores, ("1 usable core: the single hog shares it with the benchmark "
                       "(contention is the point)")
    return cores[1:], f"{len(cores) - 1} of {len(cores)} usable cores hogged"


class CpuHogs:
    """`with CpuHogs(cores, deadline_s):` one busy-loop process per core while inside.

    `pids` lists every hog this object started. A hog still alive
    at `deadline_s` ends by itself, as does one whose parent process ended.
    """

    def __init__(self, cores, deadline_s, record=None):
        self.cores = list(cores)
        self.deadline_s = float(deadline_s)
        self.pinned = hasattr(os, "sched_setaffinity")
        self.procs = []
        self.pids = []
        self.record = record      # a list that also gets every pid started, if given
        self.ended_early = None   # set by stop()

    def __enter__(self):
        try:
            for core in self.cores:
                self._start(core if self.pinned else -1)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _start(self, core):
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _HOG_SOURCE, str(os.getpid()),
             repr(self.deadline_s), str(core)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _live.add(proc)
        self.procs.append(proc)
        self.pids.append(proc.pid)
        if self.record is not None:
            self.record.append(proc.pid)
        ready, _, _ = select.select([proc.stdout], [], [], _START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            if proc.poll() is None:
                proc.kill()
            err = proc.communicate()[1].decode(errors="replace").strip().splitlines()
            _stop(proc)
            raise HogError(f"--contended: a CPU-hog process did not start (exit status "
                               f"{proc.returncode}): {err[-1] if err else 'no output'}")

    def stop(self):
        """Stop every hog; `ended_early` then lists those that had already ended (their
        deadline passed, or they were killed) while they should have been running."""
        if self.ended_early is None:
            self.ended_early = [p.pid for p in self.procs if p.poll() is not None]
        for proc in self.procs:
            _stop(proc)


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    _live.discard(proc)


def process_gone(pid):
    """True when no process `pid` runs any more (absent, or a zombie nobody reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def wait_gone(pids, timeout_s=30.0, poll_s=0.05):
    """Wait until every pid is gone; the ones still running after `timeout_s`."""
    end = time.monotonic() + timeout_s
    while True:
        running = [p for p in pids if not process_gone(p)]
        if not running or time.monotonic() > end:
            return running
        time.sleep(poll_s)


class Contention:
    """The `--contended` plan for a whole run: which cores, and every hog started."""

    def __init__(self):
        self.cores, self.note = plan()
        self.pinned = hasattr(os, "sched_setaffinity")
        self.pids = []

    def hogs(self, deadline_s):
        """A CpuHogs for one workload's timed repeats; its pids are recorded here."""
        return CpuHogs(self.cores, deadline_s, record=self.pids)

    def to_json(self):
        return {"hog_processes": len(self.cores), "hog_cores": self.cores,
                "pinned": self.pinned, "note": self.note, "pids": list(self.pids),
                "started": len(self.pids),
                "when": "timed repeats of each workload, after its first calls were checked"}
