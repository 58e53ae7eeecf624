"""numpy's BLAS thread count: read it for the header, pin it for `--blas-threads N`.

`graphc bench` leaves BLAS threading as the user has it (that is what their numpy code
gets), and only pins it when asked. By the time options are parsed numpy is imported and
its BLAS initialized, so OPENBLAS_NUM_THREADS would come too late: the count is changed
at run time, with threadpoolctl when it is installed, else through the OpenBLAS entry
points numpy's own library exports (graphc.kernels.cpu.blas loads them with ctypes).
"""
import os

_ENV_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class BlasThreadsError(Exception):
    """--blas-threads asked for something this BLAS cannot do (a usage error)."""


def _threadpoolctl():
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def current():
    """Threads numpy's BLAS uses per call now, or None when that cannot be read."""
    tpc = _threadpoolctl()
    if tpc is not None:
        import numpy  # noqa: F401 - threadpoolctl only sees libraries already loaded
        counts = [p["num_threads"] for p in tpc.threadpool_info()
                  if p.get("user_api") == "blas"]
        if counts:
            return int(counts[0])
    from ..kernels.cpu import blas
    return blas.blas_threads() or None


def _set(n):
    """Set the count; True when it took effect."""
    tpc = _threadpoolctl()
    if tpc is not None:
        tpc.threadpool_limits(limits=int(n), user_api="blas")
    else:
        from ..kernels.cpu import blas
        if not blas.set_blas_threads(n):
            return False
    return current() == n


class BlasThreads:
    """`with BlasThreads(pin)` runs with numpy's BLAS on `pin` threads (None: as it is);
    `.note` says what the header shows. Raises BlasThreadsError when `pin` cannot be applied."""

    def __init__(self, pin=None):
        self.pin = pin
        self.before = None
        self.note = None
        self.threads = None

    def __enter__(self):
        self.before = current()
        if self.pin is None:
            self.threads = self.before
            self.note = f"{_count(self.before)} ({_origin()}; --blas-threads N pins it)"
            return self
        if not _set(self.pin):
            raise BlasThreadsError(
                f"--blas-threads {self.pin}: numpy's BLAS here offers no way to set its "
                f"thread count at run time (it reports {_count(current())}); set "
                "OPENBLAS_NUM_THREADS (or MKL_NUM_THREADS) before starting graphc instead")
        self.threads = self.pin
        self.note = f"{self.pin} (pinned by --blas-threads; was {_count(self.before)})"
        return self

    def __exit__(self, *exc):
        if self.pin is not None and self.before is not None:
            _set(self.before)
        return False


def _count(n):
    return "unknown" if n is None else str(n)


def _origin():
    chosen = [k for k in _ENV_VARS if k in os.environ]
    if chosen:
        return f"as set by {chosen[0]}={os.environ[chosen[0]]}"
    return "numpy's default, left as it is"
