"""What machine and software a benchmark ran on (printed above the table, kept in the JSON)."""
import datetime
import os
import platform

import numpy as np


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module):
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001 - not installed or broken: just say so
        return None


def _distribution(*names):
    """The installed version of the first distribution of `names` (nothing imported)."""
    from importlib import metadata
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def describe_machine():
    """Date, cores, CPU, OS and the versions that matter, as a dict of strings and ints."""
    import graphc
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "cpu": _cpu_model(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "graphc": graphc.__version__,
        "numpy": np.__version__,
        "numba": _version("numba"),
        "tensorflow": _version("tensorflow") if _installed("tensorflow") else None,
        "jax": _version("jax") if _installed("jax") else None,
        "numba-cuda": _distribution("numba-cuda"),
        "cupy": _distribution("cupy-cuda12x", "cupy-cuda13x", "cupy"),
        "thread_env": {k: os.environ[k] for k in _THREAD_VARS if k in os.environ},
    }


# BLAS and numba thread-count settings change the matmul-heavy numbers a lot on a busy machine
_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS")


def _installed(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None
