"""Which path each kernel launch takes (graphc/kernels/cuda/launch.py), and that the
results do not depend on it: on a GPU every launcher of a contiguous plan goes direct
after its first launch (numba-cuda's own launch under the simulator), and calls from new
threads -- which have no CUDA context bound yet -- still get the right answers."""
import os

import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cuda import availability, backend

from concurrency import run_together

EXPECTED = "numba" if availability.simulator_on() else \
    os.environ.get("GRAPHC_CUDA_LAUNCH", "direct")

CASES = {
    "elementwise 2-d (flat)": (lambda x, s: x * s + 1.0, [(6, 5), ()]),
    "elementwise broadcast": (lambda x, s: x - gc.reduce_max(x), [(4, 7), ()]),
    "row reduction": (lambda x, s: gc.nn.softmax(x * s), [(5, 9), ()]),
    "column reduction": (lambda x, s: gc.reduce_sum(x * s, axis=0), [(40, 3), ()]),
    "full reduction": (lambda x, s: gc.reduce_sum(x) * s, [(33,), ()]),
}


def _inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("name", list(CASES))
def test_every_launch_takes_the_expected_path_and_agrees(name):
    fn, shapes = CASES[name]
    f = gc.function(fn, backend="cuda")
    ref = gc.function(fn, backend="numpy")
    for seed in range(3):           # the first call launches through numba-cuda
        args = [gc.constant(a) for a in _inputs(shapes, seed)]
        np.testing.assert_allclose(f(*args).numpy(), ref(*args).numpy(), rtol=2e-5,
                                   atol=1e-6)
    text = backend.describe(f.get_concrete_function(*args).graph)
    assert f"({EXPECTED})" in text, text
    others = {"direct", "core", "numba"} - {EXPECTED}
    assert not any(f"({m}" in text for m in others), text


def test_new_threads_launch_with_the_right_arguments():
    fn, shapes = CASES["row reduction"]
    f = gc.function(fn, backend="cuda")
    ref = gc.function(fn, backend="numpy")
    warm = [gc.constant(a) for a in _inputs(shapes, 0)]
    f(*warm)
    f(*warm)
    results = {}

    def work(i):
        args = [gc.constant(a) for a in _inputs(shapes, 10 + i)]
        for _ in range(5):
            results[i] = (f(*args).numpy(), ref(*args).numpy())
    run_together(4, work)
    for got, want in results.values():
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert len(results) == 4


def test_one_launch_shape_over_several_dtypes():
    """The variable-update kernel is one dispatcher for every dtype: a launcher made for
    float64 must not launch float32 arrays with the float64 overload."""
    for dtype in (np.float64, np.float32, np.int32, np.float64):
        v = gc.Variable(np.ones((2, 2), dtype))
        step = gc.function(lambda: v.assign_add(np.full((2, 2), 3, dtype)), backend="cuda")
        step()
        step()
        got = v.numpy()
        assert got.dtype == dtype and np.array_equal(got, np.full((2, 2), 7, dtype)), got
