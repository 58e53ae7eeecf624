"""A top-level cond whose inputs and outputs are all scalars, and a while with scalar state
reading small tensors, run on the CPU tier (the numba CPU loop kernel on host copies), not
with a device sync per iteration; any other loop, and a scalar one the loop kernel cannot
take, stays a device step."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.bench.workloads import branchy_loop
from graphc.kernels.cuda import backend

from cuda_helpers import agree


def collatz(n):
    steps = gc.constant(0, gc.int64)
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps, n


def newton_sqrt(a, x):
    i = gc.constant(0)
    while i < 20:
        x = 0.5 * (x + a / x)
        i += 1
    return x


def sign_step(x):
    if x > 0.0:
        y = x * 2.0
    else:
        y = -x - 1.0
    return y


@pytest.mark.parametrize("fn, args", [
    (collatz, (np.int64(27),)), (collatz, (np.int64(1),)),
    (newton_sqrt, (np.float32(2.0), np.float32(1.0))),
    (newton_sqrt, (np.float64(-1.0), np.float64(1.0))),    # NaN as numpy gives it
    (sign_step, (np.float64(-0.0),)), (sign_step, (np.float32(3.5),))])
def test_scalar_loops_run_compiled_on_the_cpu_and_agree(numba_forced, fn, args):
    with numba_forced.expect(loops=True):
        runs = agree(fn, *args)
    assert runs.cpu_loops == 1 and runs.device_ops == 0 and runs.fallbacks == 0
    cf = gc.function(fn, backend="cuda")
    cf(*args)
    text = backend.describe(cf.get_concrete_function(*args).graph)
    assert ": cpu loop kernel: its state is scalars" in text
    assert "; compiled [ran 1x]" in text


def test_a_device_scalar_input_is_copied_once_not_per_iteration(numba_forced, cuda_stats):
    a = gc.function(lambda v: v * 1.0, backend="cuda")(np.float64(9.0))   # on the device
    f = gc.function(newton_sqrt, backend="cuda")
    with cuda_stats.count():
        out = f(a, np.float64(1.0))
    assert cuda_stats.d2h == 1 and cuda_stats.cpu_loops == 1
    assert out.is_on_device and float(out) == 3.0


def test_a_loop_with_tensor_state_stays_on_the_device(cuda_stats):
    def f(x, n):
        i = gc.constant(0)
        while i < n:
            x = x * 0.5
            i += 1
        return x
    with cuda_stats.count():
        out = gc.function(f, backend="cuda")(np.ones(3), np.int32(2))
    assert cuda_stats.cpu_loops == 0 and cuda_stats.device_ops == 1
    np.testing.assert_array_equal(out.numpy(), np.full(3, 0.25))


def test_a_scalar_loop_the_loop_kernel_cannot_take_stays_on_the_device(cuda_stats, capsys):
    def f(x, n):
        i = gc.constant(0)
        while i < n:
            gc.print(x)
            x = x * 0.5
            i += 1
        return x
    cf = gc.function(f, backend="cuda")
    with cuda_stats.count():
        out = cf(np.float64(8.0), np.int32(2))
    assert cuda_stats.cpu_loops == 0 and cuda_stats.device_ops == 1 and float(out) == 2.0
    text = backend.describe(cf.get_concrete_function(np.float64(8.0), np.int32(2)).graph)
    assert "predicate copied to the host" in text
    assert "(scalar state, but the CPU loop kernel cannot run it: print" in text


def test_an_error_in_a_scalar_loop_is_located(numba_forced):
    def f(a, b):
        while a > 0:
            a = a - 1 - 10 // b
        return a
    cf = gc.function(f, backend="cuda")
    assert int(cf(np.int32(5), np.int32(20))) == 0
    with pytest.raises(InvalidArgumentError, match=r"test_cuda_scalar_loops\.py:\d+"):
        cf(np.int32(5), np.int32(0))

branchy = branchy_loop      # graphc bench's branchy loop: for i in gc.range(n): if x[i] > 0 ...


def test_a_scalar_state_loop_reading_a_small_tensor_runs_on_the_cpu(numba_forced, cuda_stats):
    """graphc bench's branchy loop: x is copied to the host once, not synced per step."""
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    dev = gc.function(lambda v: v * 1.0, backend="cuda")(x)         # x on the device
    with numba_forced.expect(loops=True):
        runs = agree(branchy, x)
    assert runs.cpu_loops == 1 and runs.device_ops == 0
    with cuda_stats.count():
        out = gc.function(branchy, backend="cuda")(dev)
    assert cuda_stats.d2h == 1 and cuda_stats.cpu_loops == 1 and out.is_on_device
    np.testing.assert_allclose(float(out), float(branchy(gc.constant(x))), rtol=1e-5)


def test_a_scalar_state_loop_over_a_large_tensor_stays_on_the_device(cuda_stats, monkeypatch):
    from graphc.kernels.cuda import control
    monkeypatch.setattr(control, "CPU_LOOP_INPUT_BYTES", 64)      # 17 float32 > 64 bytes
    x = np.arange(-8, 9, dtype=np.float32)
    with cuda_stats.count():
        out = gc.function(branchy, backend="cuda")(x)
    assert cuda_stats.cpu_loops == 0 and cuda_stats.device_ops >= 1
    assert float(out) == float(branchy(gc.constant(x)))
