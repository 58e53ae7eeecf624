"""The "numba (hand)" column: what a numba user writes (parallel prange, only the fast-math
flags that change rounding), and it agrees with eager on sizes that split across threads."""
import inspect
import io

import numpy as np
import pytest

from graphc.bench import WORKLOADS, hand_numba
from graphc.bench.peers import NumbaHand
from graphc.bench.runner import run_workload

PARALLEL = ["_elementwise", "_softmax", "_layernorm", "_xent_grad", "_relu_bias", "_sgd_bias"]
SERIAL = ["_scalar_loop", "_branchy_loop"]     # a few thousand scalars: a region costs more


@pytest.mark.parametrize("name", PARALLEL)
def test_array_kernels_are_parallel_prange_loops(name):
    kernel = getattr(hand_numba, name)
    assert kernel.targetoptions["parallel"] is True
    assert "prange(" in inspect.getsource(kernel.py_func)


@pytest.mark.parametrize("name", PARALLEL + SERIAL)
def test_fast_math_only_changes_rounding(name):
    flags = getattr(hand_numba, name).targetoptions.get("fastmath") or set()
    assert flags is not True
    assert not set(flags) & {"nnan", "ninf", "nsz", "afn", "fast"}


def test_fast_math_keeps_nan_and_inf_as_numpy_does():
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, 0.0, 1.0], [-np.inf, 0.0, 1.0]], np.float32)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(np.isnan(hand_numba._softmax(x)), np.isnan(want))
    v = np.array([np.nan, np.inf, -np.inf, 0.5], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.tanh(1.5 * v + 0.5) * np.exp(-v * v) + 0.5 * np.sin(v)
    np.testing.assert_array_equal(np.isnan(hand_numba._elementwise(v)), np.isnan(want))


SPLIT = {"elementwise": {"n": 10_007}, "softmax": {"rows": 33, "cols": 257},
         "layernorm": {"rows": 37, "cols": 300}, "branchy_loop": {"n": 2_001},
         "mlp_train_step": {"in": 50, "hidden": 33, "out": 10, "batch": 19}}


@pytest.mark.parametrize("name", list(SPLIT))
def test_hand_kernel_agrees_with_eager_across_threads(name):
    workload = WORKLOADS[name]
    if workload.requires():
        pytest.skip(workload.requires())
    result = run_workload(workload, SPLIT[name], [], [NumbaHand], 0.001, out=io.StringIO())
    assert [r.mode for r in result.results] == ["eager", "numba (hand)"], result.notes
