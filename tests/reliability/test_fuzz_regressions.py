"""Regression tests for bugs the differential fuzzer (test_fuzz.py) found,
each reduced from a fuzz seed to the smallest program that showed it."""
import contextlib

import numpy as np
import pytest

import graphc as gc


def _three_ways(fn):
    """fn eagerly, on the numpy backend and on the numba backend (kernels forced by the
    caller's fixture), as callables taking the same tensors."""
    return [fn, gc.function(fn, backend="numpy", autograph=False),
            gc.function(fn, backend="numba", autograph=False)]


def test_integer_to_a_negative_power_raises_invalid_argument_everywhere(numba_forced):
    """Seed 350: eagerly numpy's bare ValueError ("Integers to negative integer powers are not
    allowed", naming no op), compiled InvalidArgumentError. Now InvalidArgumentError naming
    pow on every path, like integer division by zero."""
    fn = lambda a, b: (a * 2 + 1) ** b     # noqa: E731 - a fused producer runs before pow
    x = gc.constant(np.array([1, -2, 3], np.int64))
    bad = gc.constant(np.array([2, -1, 0], np.int64))
    for i, run in enumerate(_three_ways(fn)):
        with numba_forced.expect(kernels=True) if i == 2 else contextlib.nullcontext():
            with pytest.raises(gc.errors.InvalidArgumentError, match="pow: integers to "
                                                                     "negative"):
                run(x, bad)
    ok = gc.constant(np.array([2, 3, 0], np.int64))
    want = np.array([9, -27, 1], np.int64)
    for run in _three_ways(fn):
        np.testing.assert_array_equal(run(x, ok).numpy(), want)
    # floats to negative powers stay defined
    np.testing.assert_allclose((gc.constant([2.0]) ** gc.constant([-1.0])).numpy(), [0.5])



_SEED_799 = """
import os
os.environ.update(GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel", GRAPHC_COMPILE="sync")
import numpy as np, graphc as gc
from graphc.kernels.stats import COUNTS
x = gc.constant(np.array([[1e30], [2.0]], np.float32))
f = lambda a: [gc.sin(gc.sin(a)), gc.reduce_min(gc.sin(a))]
want = [t.numpy() for t in f(x)]
k0 = COUNTS.kernel_calls
got = [t.numpy() for t in gc.function(f, backend="numba", autograph=False)(x)]
assert COUNTS.kernel_calls > k0, "no kernel ran"
for w, g in zip(want, got):
    np.testing.assert_allclose(g, w, rtol=4e-7)
print("ok")
"""


def test_whole_range_trig_in_a_broadcast_loop_compiles(tmp_path):
    """Seed 799: a group with sin(sin(x)) and a reduction of sin(x) over a (2, 1) float32 row
    never finished compiling (LLVM optimizing two selected Payne-Hanek copies in a loop over
    a broadcast dim; the first call hung). Run in a child so a regression fails, not stalls;
    the limit is a hang guard far above the ~2-5 s compile (it came back once as a 4.5-minute
    compile that a 600 s guard let pass: the Payne-Hanek path reached kernels unoptimized
    and was inlined into every use, see vecmath._whole_range)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, GRAPHC_CACHE_DIR=str(tmp_path))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", _SEED_799], env=env, capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
