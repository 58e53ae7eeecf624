"""Device memory: cuda results are device-backed tensors, copied to the host once and only
when the host reads them; device values fed to the next cuda call are not copied."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cuda import device


class ForeignDeviceArray:
    """Stands for a CuPy array: exposes only `__cuda_array_interface__`, over a numpy
    buffer under the simulator (its device memory is host memory), over a numba-cuda
    device array's memory on a GPU."""

    def __init__(self, a):
        self.a = a
        if device.SIMULATED:
            iface = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                     "strides": None, "version": 3}
        else:
            from numba import cuda
            self.dev = cuda.to_device(a)
            iface = dict(self.dev.__cuda_array_interface__)
        self.__cuda_array_interface__ = iface

    def set(self, index, value):
        """Write one element where the interface points (the owner changes its array)."""
        if device.SIMULATED:
            self.a[index] = value
        else:
            self.dev[index] = value


def test_result_is_on_device_and_copied_to_host_once(cuda_stats):
    f = gc.function(lambda x: x * 3.0, backend="cuda")
    x = np.arange(4, dtype=np.float32)
    with cuda_stats.count():
        out = f(x)
    assert out.is_on_device and device.is_device(out._dev)
    assert cuda_stats.d2h == 0          # nothing read it on the host yet
    with cuda_stats.count():
        a = out.numpy()
        b = np.asarray(out)
        text = repr(out)
    assert cuda_stats.d2h == 1          # once, then the host copy is kept
    np.testing.assert_array_equal(a, x * 3)
    np.testing.assert_array_equal(b, x * 3)
    assert "numpy=[0., 3., 6., 9.]" in text


def test_device_result_feeds_the_next_cuda_call_without_copies(cuda_stats):
    f = gc.function(lambda x: x + 1.0, backend="cuda")
    g = gc.function(lambda x: gc.reshape(x, [2, 2]), backend="cuda")
    y = f(np.zeros(4, np.float32))
    with cuda_stats.count():
        z = g(y)
        z2 = g(y)       # the cached call too
    assert cuda_stats.h2d == 0 and cuda_stats.d2h == 0
    assert cuda_stats.views == 2 and cuda_stats.fallbacks == 0   # reshape: a device view
    np.testing.assert_array_equal(z.numpy(), np.ones((2, 2), np.float32))
    assert z2.shape == (2, 2) and z2.dtype is gc.float32


def test_metadata_never_copies(cuda_stats):
    out = gc.function(lambda x: x - 1.0, backend="cuda")(np.ones((2, 3)))
    with cuda_stats.count():
        assert out.shape == (2, 3) and out.dtype is gc.float64 and out.ndim == 2
        assert len(out) == 2 and not out.is_symbolic and out.name is None
        assert str(out.type) == str(gc.constant(np.ones((2, 3))).type)
    assert cuda_stats.d2h == 0


def test_every_tensor_method_works_on_a_device_tensor():
    f = gc.function(lambda x: x * 1.0, backend="cuda")
    t = f(np.array([3.0, -1.5, 2.0], np.float32))
    ref = gc.constant(np.array([3.0, -1.5, 2.0], np.float32))
    for op in (lambda v: v + 1, lambda v: 2 - v, lambda v: v * v, lambda v: v / 2,
               lambda v: v // 1, lambda v: v % 2, lambda v: v ** 2, lambda v: -v,
               lambda v: abs(v), lambda v: v < 1, lambda v: v >= 2, lambda v: v == 2,
               lambda v: v[1:], lambda v: gc.reduce_sum(v), lambda v: gc.exp(v)):
        np.testing.assert_array_equal(op(t).numpy(), op(ref).numpy())
    assert [float(x) for x in t] == [3.0, -1.5, 2.0]
    assert str(t) == str(ref) and repr(t) == repr(ref)
    s = f(np.float32(2.5))
    assert float(s) == 2.5 and bool(s) and s.numpy() == np.float32(2.5)
    assert isinstance(s.numpy(), np.float32)        # 0-d: a numpy scalar, as eager
    i = gc.function(lambda x: x + 1, backend="cuda")(np.int32(1))
    assert int(i) == 2 and [10, 20, 30][i] == 30
    np.testing.assert_array_equal(np.array(t, copy=True), ref.numpy())


def test_device_tensor_into_numpy_and_numba_functions():
    y = gc.function(lambda x: x + 1.0, backend="cuda")(np.ones(3))
    for backend in ("numpy", "numba"):
        out = gc.function(lambda x: x * 2.0, backend=backend)(y)
        assert not out.is_on_device
        np.testing.assert_array_equal(out.numpy(), np.full(3, 4.0))


def test_foreign_device_arrays_are_used_in_place(cuda_stats):
    buf = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = ForeignDeviceArray(buf)
    f = gc.function(lambda v: gc.reshape(v, [3, 2]), backend="cuda")
    with cuda_stats.count():
        out = f(x)
    assert cuda_stats.h2d == 0 and cuda_stats.views == 1
    x.set((0, 0), 42.0)         # shares the caller's memory, as a device view does
    assert out.numpy()[0, 0] == 42.0
    t = gc.convert_to_tensor(ForeignDeviceArray(np.ones(2)))
    assert t.is_on_device
    np.testing.assert_array_equal((t + 1).numpy(), [2.0, 2.0])   # eager: host copy
    np.testing.assert_array_equal(gc.function(lambda v: v * 2, backend="numpy")(
        ForeignDeviceArray(np.ones(2))).numpy(), [2.0, 2.0])


def test_constants_upload_once_per_plan(cuda_stats, add_lowered):
    c = np.arange(3, dtype=np.float32)
    f = gc.function(lambda x: x + gc.constant(c), backend="cuda")
    x = device.to_device(np.ones(3, np.float32))
    with cuda_stats.count():
        f(x)
    assert cuda_stats.h2d == 1 and cuda_stats.kernels == 1     # the constant, once
    with cuda_stats.count():
        for _ in range(3):
            out = f(x)
    assert cuda_stats.h2d == 0 and cuda_stats.d2h == 0 and cuda_stats.kernels == 3
    np.testing.assert_array_equal(out.numpy(), c + 1)


def test_fallback_copies_inputs_to_host_and_results_back_only_when_needed(cuda_stats,
                                                                          monkeypatch):
    from graphc.kernels.cuda import lowering
    monkeypatch.setattr(lowering, "lower_group", lambda group: None)   # every op falls back
    f = gc.function(lambda x: gc.exp(x) * 2.0 + 1.0, backend="cuda")
    x = device.to_device(np.zeros(3))
    with cuda_stats.count():
        out = f(x)
    # one copy to the host for the first fallback, the chain stays there, one copy back
    assert (cuda_stats.d2h, cuda_stats.h2d) == (1, 1) and cuda_stats.fallbacks >= 1
    np.testing.assert_array_equal(out.numpy(), np.full(3, 3.0))


def test_device_values_cross_threads_safely():
    import threading
    f = gc.function(lambda x: x * 2.0, backend="cuda")
    outs = [None] * 4

    def work(k):
        outs[k] = f(np.full(3, float(k))).numpy()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_array_equal(outs[k], np.full(3, 2.0 * k))


def test_mismatched_input_is_the_usual_error():
    f = gc.function(lambda x: x + 1.0, backend="cuda",
                    input_signature=[gc.TensorSpec([3], gc.float32)])
    with pytest.raises((TypeError, ValueError)):
        f(np.ones(4, np.float32))
