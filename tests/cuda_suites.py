"""Which test directories are the CUDA suites, and whether this process runs them (see
tests/conftest.py: a whole-suite run keeps them for a simulated child process)."""
import os

CUDA_SUITES = ("cuda", "cuda_kernels")
_TESTS = os.path.dirname(os.path.abspath(__file__))


def in_cuda_suite(path):
    rel = os.path.relpath(os.path.abspath(str(path)), _TESTS).split(os.sep)
    return rel[0] in CUDA_SUITES


def cuda_suites_run_here():
    return (os.environ.get("GRAPHC_TEST_CUDA") == "real"
            or os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"))
