"""The fast path of a cuda plan that is one kernel step (graphc/kernels/cuda/single.py) and
the hot entry of a cuda function (function_entry.py with device leaves): taken (counted,
not timed), the numpy backend's results, from several threads, retracing on a new
signature after warm-up, pooled uploads of host inputs, errors at the user's line."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import backend
from graphc.runtime.function import Function

from concurrency import run_together
from cuda_helpers import CudaRuns

RNG = np.random.default_rng(7)


def _plan(f, *args):
    return backend.compile_plan(f.get_concrete_function(*args).graph)


def _on_device(*arrays):
    from numba import cuda
    return [gc.convert_to_tensor(cuda.to_device(a)) for a in arrays]


def _same(got, want):
    got, want = np.asarray(got.numpy()), np.asarray(want.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def add(x, y):
    return x + y


def test_device_inputs_take_the_entry_and_one_launch():
    f, ref = gc.function(add, backend="cuda"), gc.function(add, backend="numpy")
    x, y = RNG.standard_normal(5).astype(np.float32), RNG.standard_normal(5).astype(np.float32)
    args = _on_device(x, y)
    for _ in range(4):
        out = f(*args)
        _same(out, ref(x, y))
        assert out.is_on_device
    single = _plan(f, *args).single
    assert single is not None and single.calls == 4 and single.launches >= 2
    assert type(f) is not Function and f._entry is not None     # the generated entry
    runs = CudaRuns()
    with runs.count():
        f(*args)
    assert (runs.kernels, runs.launches, runs.allocations, runs.h2d, runs.d2h) == \
        (1, 1, 1, 0, 0)
    assert "[ran 5x]" in backend.describe(f.get_concrete_function(*args).graph)


@pytest.mark.parametrize("fn,shapes", [
    (lambda x, y: x * y + 1.0, [(3, 4), (3, 4)]),
    (lambda x, y: x - y, [(3, 4), (4,)]),                     # broadcast
    (lambda x, y: gc.nn.softmax(x * y), [(5, 9), (5, 9)]),    # a row kernel
    (lambda x, y: gc.reduce_sum(x * y, axis=0), [(40, 3), (40, 3)]),   # two passes
    (lambda x, y: (x + y, (x + y) * 2.0), [(6,), (6,)]),      # two results
    (lambda x, y: x + y, [(), ()]),
])
def test_results_are_the_numpy_backends(fn, shapes):
    f, ref = gc.function(fn, backend="cuda"), gc.function(fn, backend="numpy")
    for seed in range(3):
        rng = np.random.default_rng(seed)
        host = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for args in (host, _on_device(*host)):
            got, want = f(*args), ref(*host)
            for g, w in zip(got if isinstance(got, tuple) else [got],
                            want if isinstance(want, tuple) else [want]):
                _same(g, w)
    assert _plan(f, *host).single.calls == 6


def test_host_inputs_upload_into_pooled_buffers():
    f = gc.function(add, backend="cuda")
    x, y = np.arange(4.0), np.full(4, 0.5)
    f(x, y)
    runs = CudaRuns()
    with runs.count():
        out = f(x, y)
    # both uploads reuse the buffers the first call gave back; the result is new
    assert (runs.h2d, runs.reuses, runs.allocations, runs.d2h) == (2, 2, 1, 0)
    np.testing.assert_array_equal(out.numpy(), x + y)
    assert _plan(f, x, y).single.calls == 2


def test_threads_get_their_own_results():
    f, ref = gc.function(add, backend="cuda"), gc.function(add, backend="numpy")
    warm = _on_device(np.ones(7, np.float32), np.ones(7, np.float32))
    f(*warm)
    f(*warm)

    def work(i):
        rng = np.random.default_rng(100 + i)
        out = []
        for j in range(5):
            x, y = (rng.standard_normal(7).astype(np.float32) for _ in range(2))
            args = _on_device(x, y) if (i + j) % 2 else [x, y]
            out.append((f(*args), ref(x, y)))
        return out
    for results in run_together(4, work):
        for got, want in results:
            _same(got, want)
    assert _plan(f, *warm).single.calls > 2      # (threads' increments may overlap)


def test_a_new_signature_after_warm_up_retraces():
    f, ref = gc.function(add, backend="cuda"), gc.function(add, backend="numpy")
    a = _on_device(np.ones(5, np.float32), np.full(5, 2.0, np.float32))
    for _ in range(3):
        f(*a)
    b = _on_device(np.ones(8, np.float32), np.full(8, 3.0, np.float32))
    _same(f(*b), ref(np.ones(8, np.float32), np.full(8, 3.0, np.float32)))
    c = [np.ones(5), np.full(5, 4.0)]                           # float64: another trace
    _same(f(*c), ref(*c))
    assert f.tracing_count == 3
    _same(f(*a), ref(np.ones(5, np.float32), np.full(5, 2.0, np.float32)))
    assert _plan(f, *a).single.calls == 4


def test_a_generalized_trace_relaunches_for_new_shapes():
    spec = gc.TensorSpec([None], gc.float32)
    f = gc.function(add, input_signature=[spec, spec], backend="cuda")
    for n in (3, 3, 6, 3):
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        np.testing.assert_array_equal(f(*_on_device(x, y)).numpy(), x + y)
    assert f.tracing_count == 1


def test_a_run_time_error_is_located_at_the_users_line():
    spec = gc.TensorSpec([None], gc.float32)
    f = gc.function(add, input_signature=[spec, spec], backend="cuda")
    ok = _on_device(np.ones(3, np.float32), np.ones(3, np.float32))
    f(*ok)
    f(*ok)
    bad = _on_device(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(InvalidArgumentError, match=r"add.*test_cuda_single\.py:\d+"):
        f(*bad)
    np.testing.assert_array_equal(f(*ok).numpy(), np.full(3, 2.0, np.float32))


def test_a_failing_launch_is_located_and_gives_back_nothing(monkeypatch):
    from graphc.kernels.cuda import launch
    f = gc.function(lambda x: x * 2.0, backend="cuda")
    x = np.arange(3.0)
    f(x)
    f(x)
    pool = _plan(f, x).pool
    before = pool.idle()

    def broken(self, arrays, ints=(), flat=False):
        raise RuntimeError("launch failed")
    monkeypatch.setattr(launch.Launcher, "__call__", broken)
    with pytest.raises(InvalidArgumentError, match=r"launch failed.*test_cuda_single\.py"):
        f(x)
    assert pool.idle()[0] == before[0] - 1      # the upload was dropped, not reused


def test_other_plans_take_the_general_path():
    two = gc.function(lambda x, y: (x * y, x), backend="cuda")     # an input returned
    a, b = np.arange(3.0), np.full(3, 2.0)
    got = two(a, b)
    np.testing.assert_array_equal(got[0].numpy(), a * b)
    np.testing.assert_array_equal(got[1].numpy(), a)
    assert _plan(two, a, b).single is None
    v = gc.Variable(np.ones(3))
    f = gc.function(lambda x: v.assign_add(x), backend="cuda")
    f(np.ones(3))
    assert _plan(f, np.ones(3)).single is None
    g = gc.function(lambda x: gc.reshape(x * 2.0, [3, 1]), backend="cuda")
    np.testing.assert_array_equal(g(np.ones(3)).numpy(), np.full((3, 1), 2.0))
    assert _plan(g, np.ones(3)).single is None
    np.testing.assert_array_equal(v.numpy(), np.full(3, 2.0))


def test_mixed_inputs_upload_only_the_host_ones():
    from test_cuda_memory import ForeignDeviceArray
    f = gc.function(add, backend="cuda")
    x, y = np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32)
    for other in (ForeignDeviceArray(y), _on_device(y)[0]):
        f(x, other)
        runs = CudaRuns()
        with runs.count():
            out = f(x, other)
        assert (runs.h2d, runs.kernels) == (1, 1)
        np.testing.assert_array_equal(out.numpy(), x + y)
    assert _plan(f, x, y).single.calls == 4
