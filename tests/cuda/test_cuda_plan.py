"""The cuda plan: kernel path (with a test-only lowering until the generators land), device
views, fallback per op with its reason, describe(), and errors at the user's line."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import backend


def _plan(fn, *args):
    return backend.compile_plan(fn.get_concrete_function(*args).graph)


def test_injected_lowering_runs_groups_as_kernels(cuda_stats, add_lowered):
    f = gc.function(lambda a, b: a + b, backend="cuda")
    a, b = np.arange(5, dtype=np.float64), np.ones(5)
    with cuda_stats.count():
        out = f(a, b)
    assert cuda_stats.kernels == 1 and cuda_stats.fallbacks == 0
    assert cuda_stats.h2d == 2 and cuda_stats.d2h == 0   # the two inputs; the result stays
    np.testing.assert_array_equal(out.numpy(), a + b)
    text = backend.describe(f.get_concrete_function(a, b).graph)
    assert "kernel: test add kernel (grid-stride) [ran 1x]" in text


def test_kernel_and_fallback_steps_mix(cuda_stats, add_lowered):
    @gc.function(backend="cuda")
    def f(a, b):
        c = gc.reshape(a + b, [2, 2])   # kernel (a group of one add), then a view
        return gc.sqrt(c)               # fallback: no lowering for sqrt
    a, b = np.full(4, 3.0), np.ones(4)
    with cuda_stats.count():
        out = f(a, b)
    assert cuda_stats.kernels >= 1 and cuda_stats.fallbacks >= 1
    np.testing.assert_allclose(out.numpy(), np.sqrt(a + b).reshape(2, 2))


def test_matmul_goes_to_the_lowering_else_falls_back(cuda_stats, add_lowered):
    f = gc.function(lambda a, b: gc.matmul(a, b), backend="cuda")
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    with cuda_stats.count():
        out = f(a, b)
    assert cuda_stats.kernels == 1 and cuda_stats.fallbacks == 0
    np.testing.assert_array_equal(out.numpy(), a @ b)
    g = gc.function(lambda a, b: gc.matmul(a, b, transpose_b=True), backend="cuda")
    with cuda_stats.count():
        out = g(a, a)            # the lowering says NotImplementedError: numpy rule
    assert cuda_stats.kernels == 0 and cuda_stats.fallbacks == 1
    np.testing.assert_array_equal(out.numpy(), a @ a.T)
    assert "matmul 'matmul_0': fallback: lowering.matmul: test matmul" in backend.describe(
        g.get_concrete_function(a, a).graph)


def test_without_lowering_every_group_falls_back_with_its_reason(cuda_stats, monkeypatch):
    from graphc.kernels.cuda import lowering
    monkeypatch.setattr(lowering, "lower_group", lambda group: None)
    f = gc.function(lambda x: gc.reduce_sum(x * x, axis=1), backend="cuda")
    x = np.arange(6.0).reshape(2, 3)
    with cuda_stats.count():
        out = f(x)
    assert cuda_stats.kernels == 0
    assert cuda_stats.fallbacks >= 1
    np.testing.assert_array_equal(out.numpy(), (x * x).sum(axis=1))
    text = backend.describe(f.get_concrete_function(x).graph)
    assert "has no CUDA lowering (lower_group returned None)" in text


def test_views_of_contiguous_device_arrays(cuda_stats):
    f = gc.function(lambda x: gc.squeeze(gc.expand_dims(gc.reshape(x, [3, 2]), 0), [0]),
                    backend="cuda")
    x = gc.function(lambda v: v * 1.0, backend="cuda")(np.arange(6.0))
    with cuda_stats.count():
        out = f(x)
    assert cuda_stats.fallbacks == 0 and cuda_stats.views >= 1
    assert cuda_stats.h2d == cuda_stats.d2h == 0
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(3, 2))
    text = backend.describe(f.get_concrete_function(x).graph)
    assert "device view: no copy when the input is contiguous" in text


def test_fallback_error_names_the_op_and_the_user_line():
    @gc.function(backend="cuda")
    def f(a, b):
        return a // b
    with pytest.raises(InvalidArgumentError,
                       match=r"floordiv.*int32\[2\].*test_cuda_plan\.py:\d+"):
        f(np.array([1, 2], np.int32), np.array([1, 0], np.int32))


def test_kernel_error_is_located(add_lowered, monkeypatch):
    from graphc.kernels.cuda import lowering

    class Broken:
        def __call__(self, inputs, alloc=None):
            raise RuntimeError("launch failed")
    monkeypatch.setattr(lowering, "lower_group", lambda g: Broken())

    @gc.function(backend="cuda")
    def f(a):
        return a * 2.0
    with pytest.raises(InvalidArgumentError, match=r"multiply failed .*launch failed.*"
                       r"test_cuda_plan\.py:\d+"):
        f(np.ones(2))


def test_describe_lists_control_flow_and_nested_plans():
    @gc.function(backend="cuda")
    def f(acc, n):
        i = gc.constant(0)
        while i < n:            # a vector in the loop state: a device loop
            acc += 2.0
            i += 1
        return acc
    acc, n = np.zeros(2), np.int32(3)
    np.testing.assert_array_equal(f(acc, n).numpy(), [6.0, 6.0])
    text = backend.describe(f.get_concrete_function(acc, n).graph)
    assert "while 'while_0': device: predicate copied to the host" in text
    assert "loop condition:" in text and "loop body:" in text and "[ran 4x]" in text


def test_class_ids_are_checked_on_the_device(cuda_stats):
    """sparse cross-entropy checks its labels on the device (no copy to the host, no
    sync: checks.py) and reads them where they are; a bad label is the located error,
    raised when the result is read."""
    def loss(logits, labels):
        return gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    from numba import cuda
    logits = cuda.to_device(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    labels = cuda.to_device(np.array([0, 2, 1, 2], np.int32))
    f = gc.function(loss, backend="cuda")
    f(logits, labels)
    with cuda_stats.count():
        got = f(logits, labels)
    assert cuda_stats.h2d == 0 and cuda_stats.d2h == 0 and cuda_stats.fallbacks == 0
    want = loss(gc.constant(logits.copy_to_host()), gc.constant(labels.copy_to_host()))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    out = f(logits, cuda.to_device(np.array([0, 3, 1, 2], np.int32)))
    with pytest.raises(InvalidArgumentError, match=r"test_cuda_plan\.py:\d+"):
        out.numpy()
