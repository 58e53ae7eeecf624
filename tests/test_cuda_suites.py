"""The CUDA suites on numba-cuda's simulator, in a child process (see tests/conftest.py:
the simulator must be on before numba.cuda is imported, and this process stays a machine
without a GPU). Also what that machine gives a user: backend="cuda" raising ValueError."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import graphc as gc
from cuda_suites import CUDA_SUITES, cuda_suites_run_here

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(cuda_suites_run_here(), reason="the CUDA suites are collected in this run")
def test_cuda_suites_pass_on_the_simulator():
    pytest.importorskip("numba_cuda")     # the test extra installs it: CI never skips
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env.pop("GRAPHC_TEST_CUDA", None)
    dirs = [os.path.join("tests", d) for d in CUDA_SUITES if os.path.isdir(
        os.path.join(ROOT, "tests", d))]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-W", "ignore::pytest.PytestAssertRewriteWarning", *dirs],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    tail = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, tail
    passed = re.search(r"(\d+) passed", tail)
    assert passed and int(passed.group(1)) >= 50, tail
    assert "skipped" not in tail.splitlines()[-1], tail     # nothing skips silently in CI
    print(tail.splitlines()[-1])


@pytest.mark.skipif(cuda_suites_run_here(), reason="this run has a simulator or a GPU")
def test_cuda_without_a_gpu_raises_value_error_naming_what_is_missing():
    f = gc.function(lambda x: x * 2.0, backend="cuda")
    try:
        from numba import cuda
        if cuda.is_available():
            pytest.skip("this machine has a usable GPU")
    except ImportError:
        pass
    with pytest.raises(ValueError, match=r"backend 'cuda'.*(numba-cuda|driver|device)") as e:
        f(np.ones(3, np.float32))
    assert "Fix" in str(e.value) or "install" in str(e.value)
