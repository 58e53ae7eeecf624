"""Can backend="cuda" run here? Each probe checks one thing, in the order a user fixes them:
the numba-cuda package, then (unless numba-cuda's simulator is on) the NVIDIA driver, then
a device. `missing()` is the one-line reason to put in the ValueError, None when it can run.

The simulator (NUMBA_ENABLE_CUDASIM=1, set before numba.cuda is first imported) runs the
kernels in pure Python on the host: for tests without a GPU, far too slow for real work.
"""
import functools
import importlib.util
import os

INSTALL = "pip install 'graphc[cuda]'"
SIM_HINT = ("or set NUMBA_ENABLE_CUDASIM=1 before graphc is imported to run on numba-cuda's "
            "simulator (pure Python, for tests)")


def has_package():
    return importlib.util.find_spec("numba_cuda") is not None


def simulator_on():
    """True when numba.cuda is (or will be, once imported) numba-cuda's simulator."""
    import sys
    if "numba.cuda" in sys.modules:
        from numba.cuda import config
        return bool(config.ENABLE_CUDASIM)
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def driver_error():
    """None when the CUDA driver library loads, else numba-cuda's reason (one line)."""
    from numba.cuda.cudadrv import driver
    if driver.driver.is_available:
        return None
    err = str(getattr(driver.driver, "initialization_error", "") or "driver not found")
    return " ".join(err.split())


def device_count():
    from numba import cuda
    try:
        return len(cuda.gpus)
    except Exception:  # noqa: BLE001 - numba-cuda raises CudaSupportError and friends
        return 0


@functools.lru_cache(maxsize=1)
def compiler_error():
    """None when numba-cuda's kernel compiler loads beside this numpy, else why not: its
    typing registries are imported at the first kernel compile, and a numba-cuda older than
    the installed numpy fails there (numba-cuda 0.30 with numpy 2.5, which removed
    np.row_stack: AttributeError), which would otherwise surface as every op failing."""
    try:
        import numba.cuda.cudaimpl  # noqa: F401 - the module the first compile imports
    except Exception as e:  # noqa: BLE001 - any failure here means kernels cannot compile
        return f"{type(e).__name__}: {e}"
    return None


def _versions():
    from importlib import metadata
    import numpy
    try:
        nc = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        nc = "?"
    return f"numba-cuda {nc} with numpy {numpy.__version__}"


def missing():
    """Why backend="cuda" cannot run on this machine (with the fix), or None when it can."""
    if not has_package():
        return ("backend 'cuda' needs the numba-cuda package, which is not installed. "
                f"Fix: {INSTALL} (numba-cuda[cu12] brings NVVM; no CUDA toolkit needed)")
    if simulator_on():
        return None
    err = driver_error()
    if err is not None:
        return ("backend 'cuda' found no NVIDIA CUDA driver on this machine "
                f"({err}). Fix: install the NVIDIA driver (`nvidia-smi` should list the GPU), "
                f"{SIM_HINT}")
    if device_count() == 0:
        return ("backend 'cuda': the CUDA driver loads but reports no CUDA device. Fix: check "
                "`nvidia-smi` and CUDA_VISIBLE_DEVICES, " + SIM_HINT)
    err = compiler_error()
    if err is not None:
        return (f"backend 'cuda': numba-cuda cannot compile kernels here ({_versions()}: "
                f"{err}). Fix: install a numpy that this numba-cuda supports (numba-cuda 0.30 "
                "needs numpy < 2.5: pip install 'numpy<2.5'), or a newer numba-cuda")
    return None


def real_gpu():
    """True only for a real device (not the simulator): what benchmarks need."""
    return has_package() and not simulator_on() and missing() is None
