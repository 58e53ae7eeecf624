"""Graphs traced with None dims (input_signature [None, n], TF's usual serving/training
signature) keep their data on the device: run-time broadcasts, fills, unbroadcast sums and
views (kernels/cuda/shaped.py) read shapes on the host and never copy a tensor back; the
arithmetic on shape vectors runs on the host (kernels/cuda/host_shapes.py) and a kernel
reading its result gets one upload per value."""
import numpy as np
import pytest
from numba import cuda

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import shaped
from cuda_helpers import CudaRuns, bench_mlp

F32 = gc.float32


def _mlp(backend, opt):
    sig = [gc.TensorSpec([None, 8], F32), gc.TensorSpec([None], gc.int32)]
    return bench_mlp(backend, opt, 8, input_signature=sig)


@pytest.mark.parametrize("make", [lambda: gc.optimizers.SGD(0.1),
                                  lambda: gc.optimizers.Adam(0.05)], ids=["sgd", "adam"])
def test_mlp_step_with_none_batch_copies_nothing_either_way(make):
    rng = np.random.default_rng(3)
    data = [(rng.standard_normal((n, 8)).astype(np.float32),
             rng.integers(0, 3, n).astype(np.int32)) for n in (5, 5, 7, 7, 5)]
    opt = make()
    step, params = _mlp("numpy", opt)
    want_losses = [float(step(x, y)) for x, y in data]
    want = [p.numpy() for p in params + opt.variables()]
    opt = make()
    step, params = _mlp("cuda", opt)
    copies, losses, traces = [], [], None
    for x, y in data:
        x, y = cuda.to_device(x), cuda.to_device(y)
        runs = CudaRuns()
        with runs.count():
            loss = step(x, y)
        copies.append((runs.d2h, runs.h2d, runs.fallbacks))
        losses.append(float(loss))          # the one copy to the host: the loss we read
        traces = traces or step.experimental_get_tracing_count()
    # steady state (after each batch size's first call): no copy either way, no fallback;
    # the mean's count (gather and product of the host shape vector) is host arithmetic,
    # uploaded once for a new batch size (7) and kept (5 again: none)
    assert copies[1] == copies[3] == copies[4] == (0, 0, 0), copies
    assert copies[2] == (0, 1, 0), copies
    assert step.experimental_get_tracing_count() == traces     # none for the new batch size
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for g, w in zip([p.numpy() for p in params + opt.variables()], want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _on_both(fn, sig, *arrays):
    """fn on the numpy and cuda backends (device inputs): the cuda results (host) and the
    copies of the second cuda call."""
    want = gc.function(fn, input_signature=sig, backend="numpy")(*arrays)
    f = gc.function(fn, input_signature=sig, backend="cuda")
    dev = [cuda.to_device(a) for a in arrays]
    f(*dev)
    runs = CudaRuns()
    with runs.count():
        got = f(*dev)
    want = want if isinstance(want, (list, tuple)) else [want]
    got = got if isinstance(got, (list, tuple)) else [got]
    for g, w in zip(got, want):
        assert g.is_on_device
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return runs


@pytest.mark.parametrize("dtype, shape, target, on_device", [
    (np.float32, (), (4, 3), True),              # 0-d: the fill kernel
    (np.float32, (5, 1), (5, 3), True),
    (np.int32, (1, 4), (3, 4), True),
    (np.float64, (3,), (2, 4, 3), True),
    (np.bool_, (2, 1, 3), (2, 4, 3), True),
    (np.int64, (1, 2, 3, 1, 1), (4, 2, 3, 5, 2), True),    # 5 dims: 3 after merging
    (np.int64, (1, 2, 1, 3, 1), (2, 2, 4, 3, 2), False),   # 5 after merging: numpy's rule
    (np.float32, (5, 1), (0, 5, 3), True),     # empty
])
def test_broadcast_to_a_run_time_shape_runs_on_the_device(dtype, shape, target, on_device):
    x = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    like = np.zeros(target, np.float32)
    sig = [gc.TensorSpec([None] * len(shape), gc.as_dtype(dtype)),
           gc.TensorSpec([None] * len(target), F32)]
    runs = _on_both(lambda a, b: gc.broadcast_to(a, gc.shape(b)), sig, x, like)
    if on_device:
        assert runs.d2h == 0 and runs.fallbacks == 0 and runs.kernels == 1
    else:
        assert runs.d2h == 1 and runs.fallbacks == 1


def test_fills_of_run_time_shapes_run_on_the_device():
    def fills(a):
        return (gc.zeros_like(a), gc.ones_like(a, dtype=gc.int32),
                gc.fill(gc.shape(a), 2.5), gc.ones(gc.shape(a)[:1]))
    runs = _on_both(fills, [gc.TensorSpec([None, 3], F32)], np.ones((4, 3), np.float32))
    # 4 broadcast kernels; the slice of the host shape vector is host arithmetic (no copy)
    assert runs.d2h == runs.h2d == runs.fallbacks == 0 and runs.kernels == 4
    assert runs.host_ops == 1


def test_sums_to_run_time_shapes_run_on_the_device():
    def grads(a, b):            # b's row and column broadcasts undone at run time
        with gc.GradientTape() as t:
            t.watch([a, b])
            z = gc.reduce_sum(gc.sin(a * b) + b)
        return t.gradient(z, [a, b])
    sig = [gc.TensorSpec([None, None], F32)] * 2
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    for b in (np.float32([[0.5]]), np.float32([[1.0, 2.0, 3.0, 4.0]]),
              np.float32([[1.0], [2.0], [3.0]])):
        want = gc.function(grads, input_signature=sig, backend="numpy")(a, b)
        f = gc.function(grads, input_signature=sig, backend="cuda")
        f(cuda.to_device(a), cuda.to_device(b))
        runs = CudaRuns()
        with runs.count():
            got = f(cuda.to_device(a), cuda.to_device(b))
        assert runs.d2h == 0 and runs.fallbacks == 0
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


def test_reshape_with_minus_one_under_none_dims_is_a_view():
    def views(a):
        r = gc.reshape(a, [-1, 2])
        return r * 2.0, gc.squeeze(gc.expand_dims(a, 1), 1) + 1.0
    runs = _on_both(views, [gc.TensorSpec([None, 4], F32)],
                    np.arange(12, dtype=np.float32).reshape(3, 4))
    assert runs.d2h == 0 and runs.fallbacks == 0 and runs.views >= 3


def test_bad_run_time_shapes_raise_at_the_users_line():
    @gc.function(input_signature=[gc.TensorSpec([None, None], F32)] * 2, backend="cuda")
    def bad(a, b):
        return gc.broadcast_to(a, gc.shape(b))
    with pytest.raises(InvalidArgumentError, match="broadcast_to: cannot broadcast") as e:
        bad(cuda.to_device(np.ones((2, 3), np.float32)),
            cuda.to_device(np.ones((4, 3), np.float32))).numpy()
    assert "test_cuda_dynamic_shapes.py" in str(e.value)

    @gc.function(input_signature=[gc.TensorSpec([None, 4], F32)], backend="cuda")
    def bad_reshape(a):
        return gc.reshape(a, [-1, 3])
    with pytest.raises(InvalidArgumentError, match="reshape") as e:
        bad_reshape(cuda.to_device(np.ones((2, 4), np.float32))).numpy()
    assert "test_cuda_dynamic_shapes.py" in str(e.value)


def test_merged_dims():
    assert shaped.merged_dims((5, 1), (5, 3)) == ([5, 3], [1, 0])
    assert shaped.merged_dims((3,), (2, 4, 3)) == ([8, 3], [0, 1])
    assert shaped.merged_dims((2, 3, 1, 1), (2, 3, 4, 5)) == ([6, 20], [1, 0])
    assert shaped.merged_dims((2, 3), (1, 2, 3)) == ([6], [1])
    assert shaped.merged_dims((2, 3), (4, 3)) is None
    assert shaped.sum_axes((4, 5, 3), (1, 3)) == (0, 1)
    assert shaped.sum_axes((4, 3), (4, 2)) is None


def test_input_signature_takes_a_device_array_without_a_host_copy():
    spec = [gc.TensorSpec([None], F32)]
    x = cuda.to_device(np.float32([1.5, -2.0, 3.0]))
    f = gc.function(lambda a: a * 2.0, input_signature=spec, backend="cuda")
    f(x)
    runs = CudaRuns()
    with runs.count():
        got = f(x)
    assert runs.d2h == 0 and runs.h2d == 0
    np.testing.assert_array_equal(got.numpy(), [3.0, -4.0, 6.0])
    on_host = gc.function(lambda a: a * 2.0, input_signature=spec, backend="numpy")
    np.testing.assert_array_equal(on_host(x).numpy(), [3.0, -4.0, 6.0])   # one copy there
    with pytest.raises(TypeError, match="dtype float64"):
        f(cuda.to_device(np.float64([1.0])))


def test_shape_arithmetic_runs_on_the_host_and_its_upload_is_kept():
    def per_row(a):
        n = gc.cast(gc.reduce_prod(gc.shape(a)[:1]), F32)    # three host ops
        return a / n, gc.shape(a)[1] * 2       # a result: uploaded each call, never kept
    sig = [gc.TensorSpec([None, 3], F32)]
    f = gc.function(per_row, input_signature=sig, backend="cuda")
    ref = gc.function(per_row, input_signature=sig, backend="numpy")
    uploads = []
    for n in (4, 4, 6, 4):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3) - 5
        runs = CudaRuns()
        with runs.count():
            got = f(cuda.to_device(x))
        assert (runs.d2h, runs.fallbacks, runs.host_ops, runs.kernels) == (0, 0, 5, 1)
        uploads.append(runs.h2d)
        for g, w in zip(got, ref(x)):
            g, w = g.numpy(), w.numpy()
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    # the count: once per batch size (4, then 6), kept; the int result: every call
    assert uploads == [2, 1, 2, 1], uploads
