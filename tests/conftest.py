import atexit
import contextlib
import os
import shutil
import tempfile

# Every trace in the test suite is checked by verify(graph).
os.environ.setdefault("GRAPHC_VERIFY", "1")
# The suite never reads or writes the user's kernel cache: one private directory per run
# (tests that need a cache of their own still set GRAPHC_CACHE_DIR themselves).
_PRIVATE_CACHE = tempfile.mkdtemp(prefix="graphc-test-cache-")
atexit.register(shutil.rmtree, _PRIVATE_CACHE, ignore_errors=True)
os.environ["GRAPHC_CACHE_DIR"] = _PRIVATE_CACHE
# numba's cache for generated kernels then stays beside them (numba's own __pycache__ in
# the private directory), never in the user's NUMBA_CACHE_DIR
os.environ.pop("NUMBA_CACHE_DIR", None)
# Kernels compile before the first run, so a test's first call already runs compiled code;
# tests/kernels/test_tiers.py covers the background tier (the default outside the suite).
os.environ.setdefault("GRAPHC_COMPILE", "sync")
# The CUDA suites (tests/cuda, tests/cuda_kernels) run on numba-cuda's simulator, which must
# be chosen before numba.cuda is first imported. A whole-suite run keeps this process a plain
# machine without a GPU (where backend="cuda" must raise ValueError, as for a user) and runs
# them in a child process (tests/test_cuda_suites.py); asked for by path (`pytest
# tests/cuda`), they run here on the simulator; GRAPHC_TEST_CUDA=real runs them here on the GPU.
from cuda_suites import cuda_suites_run_here, in_cuda_suite  # noqa: E402


def pytest_configure(config):
    asked = [a.split("::")[0] for a in config.args]
    if os.environ.get("GRAPHC_TEST_CUDA") != "real" and any(in_cuda_suite(a) for a in asked):
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def pytest_ignore_collect(collection_path, config):
    if in_cuda_suite(collection_path) and not cuda_suites_run_here():
        return True      # tests/test_cuda_suites.py runs them in a simulated child process
    return None


import pytest


# Tests that each wait minutes on one child process start first: with `-n 2` (README, .ci/run)
# pytest-xdist hands the first tests out one per worker, so they run beside the rest on
# different workers instead of one after the other at the end. Order only; any order passes.
STARTED_FIRST = (
    "tests/test_cuda_suites.py::test_cuda_suites_pass_on_the_simulator",
    "tests/reliability/test_fuzz_regressions.py::"
    "test_whole_range_trig_in_a_broadcast_loop_compiles",
)


def pytest_collection_modifyitems(items):
    # a function silently falling back to unconverted code is a converter bug here
    for item in items:
        if "tests/autograph" in str(item.fspath):
            item.add_marker(pytest.mark.filterwarnings(
                "error::graphc.autograph.AutoGraphWarning"))
    items.sort(key=lambda item: item.nodeid not in STARTED_FIRST)    # stable: the rest keep order


class CompiledRuns:
    """Counts entries into numba-compiled code (fused kernels, compiled loops) in a block."""

    def __init__(self):
        self.kernels = self.loops = 0

    @property
    def total(self):
        return self.kernels + self.loops

    @contextlib.contextmanager
    def expect(self, kernels=False, loops=False):
        """Assert that the block ran compiled code: a kernel and/or a compiled loop when
        asked for, at least one of either otherwise."""
        from graphc.kernels.stats import COUNTS
        k0, l0 = COUNTS.snapshot()
        yield self
        self.kernels, self.loops = COUNTS.kernel_calls - k0, COUNTS.loop_calls - l0
        assert self.total > 0, "no numba-compiled kernel or loop ran: the check is not honest"
        assert not kernels or self.kernels > 0, "no fused kernel ran"
        assert not loops or self.loops > 0, "no natively compiled loop ran"

    @contextlib.contextmanager
    def none(self, why):
        """Assert that the block ran no compiled code, for a graph holding nothing that the
        backend compiles (`why` says so): when it starts compiling something, the test is
        to be updated to expect() it, not to go on passing without checking."""
        from graphc.kernels.stats import COUNTS
        k0, l0 = COUNTS.snapshot()
        yield self
        self.kernels, self.loops = COUNTS.kernel_calls - k0, COUNTS.loop_calls - l0
        assert self.total == 0, (f"{self.kernels} kernel and {self.loops} compiled loop "
                                 f"run(s) where none was expected ({why}): update the test")


@pytest.fixture
def young_heap():
    """gc.collect() in the test scans only what was made since it started: everything older
    is frozen (gc.freeze) until it ends. In a whole-suite run the heap holds every earlier
    test's compiled kernels and traces, and one full collection took 2-4 s (about 60 of the
    64 s of tests/test_cuda_blocks.py). What a test makes is collected as before; a test
    asserting that something is *not* freed yet should also assert that it is freed later,
    so that a collection hidden by the freeze cannot make it pass."""
    import gc as pygc
    pygc.freeze()
    try:
        yield
    finally:
        pygc.unfreeze()


@pytest.fixture
def numba_forced(monkeypatch):
    """The numba backend with kernels and compiled loops used at any size (the tests' tiny
    shapes would otherwise run numpy rules); use `with numba_forced.expect(): ...` to assert
    that compiled code really ran."""
    pytest.importorskip("numba")
    monkeypatch.setenv("GRAPHC_NUMBA_MIN_SIZE", "0")
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "kernel")
    return CompiledRuns()
