"""Intermediate device buffers reused across calls (graphc/kernels/cuda/memory.py): a
steady-state call allocates only its results; results, views and variables are never
overwritten by a later call; nested cond/while plans, threads and errors mid-call."""
import threading

import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import backend

from cuda_helpers import CudaRuns, flat

RNG = np.random.default_rng(15)


def mm_softmax(a, b):
    m = gc.matmul(a, b)                          # a kernel's intermediate
    r = gc.nn.softmax(m * 2.0)
    t = gc.reduce_sum(gc.reshape(m, [-1]))       # reads m through a view
    return r, t


def halving_loop(x, n):
    i = gc.constant(0)
    while i < n:
        x = gc.exp(x * 0.5) - 1.0                # loop state on the device
        i += 1
    return x


def branchy(x, flag):
    if flag:
        y = gc.matmul(x, x) * 2.0
    else:
        y = gc.matmul(x, x) - 1.0
    z = gc.matmul(y, x)         # y's shape: it would get y's buffer if the cond let go early
    return gc.reduce_sum(z + y, axis=1)


def reference(fn, *args):
    return [np.asarray(t.numpy()) for t in flat(gc.function(fn, backend="numpy")(*args))]


def assert_same(got, ref):
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g.numpy()), r, rtol=1e-12, atol=1e-14)


def calls(fn, make_args, n, allocations=None, warmups=1):
    """`n` calls of cuda `fn` on fresh inputs after `warmups` first ones; every result is
    checked against the numpy backend after the last call (a reused buffer that a result
    shared would show as a wrong value); `allocations`: expected per steady-state call."""
    f = gc.function(fn, backend="cuda")
    for _ in range(warmups):
        f(*make_args())
    held = []
    for _ in range(n):
        args = make_args()
        runs = CudaRuns()
        with runs.count():
            out = flat(f(*args))
        if allocations is not None:
            assert runs.allocations == allocations, runs.__dict__
            assert runs.reuses > 0
        held.append((out, reference(fn, *args)))
    for out, ref in held:
        assert_same(out, ref)
    return f


def test_steady_state_call_allocates_only_its_results():
    calls(mm_softmax, lambda: (RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))),
          4, allocations=2)


def test_device_inputs_too():
    from numba import cuda
    calls(mm_softmax, lambda: (cuda.to_device(RNG.standard_normal((2, 3))),
                               cuda.to_device(RNG.standard_normal((3, 2)))), 3, allocations=2)


def test_while_loop_state_reuses_buffers_across_iterations():
    calls(halving_loop, lambda: (RNG.standard_normal(5), np.int32(RNG.integers(0, 4))),
          5, allocations=1)


def test_loop_state_passed_through_the_body_keeps_its_buffer():
    def fib(x, y, n):
        i = gc.constant(0)
        while i < n:
            x, y = y, x + y         # x: the last iteration's y, the same buffer
            i += 1
        return x, y
    calls(fib, lambda: (RNG.standard_normal(4), RNG.standard_normal(4),
                        np.int32(RNG.integers(0, 6))), 6)


def test_cond_branches_reuse_buffers():
    flags = iter([True, False] * 4)         # each branch uploads its constant on its first run
    calls(branchy, lambda: (RNG.standard_normal((3, 3)), np.bool_(next(flags))),
          6, allocations=1, warmups=2)


def test_a_view_keeps_its_buffer_until_its_last_use(cuda_stats):
    def f(x, p, q):
        b = gc.exp(x)                   # (2, 3), a pooled buffer
        v = gc.reshape(b, [3, 2])       # a view of it; b's own last use
        c = gc.matmul(p, q)             # (2, 3): would get b's buffer if v did not hold it
        return gc.matmul(c, v)
    make = lambda: (RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4)),  # noqa: E731
                    RNG.standard_normal((4, 3)))
    cf = calls(f, make, 3, allocations=1)
    with cuda_stats.count():
        cf(*make())
    assert cuda_stats.views == 1 and cuda_stats.fallbacks == 0


def test_a_result_that_views_an_intermediate_is_never_reused():
    def f(x):
        m = gc.matmul(x, x)
        return gc.reshape(m, [-1]), gc.reduce_sum(m)
    # m's buffer leaves with the view: the next call allocates a new m, and the sum
    calls(f, lambda: (RNG.standard_normal((3, 3)),), 4, allocations=2)


def test_variable_assigned_from_an_intermediate_keeps_its_value():
    v = gc.Variable(np.zeros((2, 2)))

    @gc.function(backend="cuda")
    def f(x):
        m = gc.matmul(x, x)
        v.assign(m)
        w = gc.matmul(x + 1.0, x)       # same shape: the pool hands out m's buffer
        return gc.reduce_sum(w)
    for _ in range(3):
        x = RNG.standard_normal((2, 2))
        np.testing.assert_allclose(float(f(x)), ((x + 1) @ x).sum(), rtol=1e-12)
        np.testing.assert_allclose(v.numpy(), x @ x, rtol=1e-12)


def test_threads_calling_one_function_get_their_own_results():
    f = gc.function(mm_softmax, backend="cuda")
    inputs = [[(RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))) for _ in range(3)]
              for _ in range(8)]
    outs, errors = [[] for _ in inputs], []

    def work(k):
        try:
            for a, b in inputs[k]:
                outs[k].append(flat(f(a, b)))
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, args in enumerate(inputs):
        for out, (a, b) in zip(outs[k], args):
            assert_same(out, reference(mm_softmax, a, b))


def test_an_error_mid_call_never_hands_a_buffer_out_twice():
    def f(a, b, k):
        m = gc.matmul(a, b)             # pooled, checked out when the fallback fails
        return (m // k) + m * 2         # int floordiv by zero: the numpy rule raises
    cf = gc.function(f, backend="cuda")
    a, b = (RNG.integers(-5, 5, (3, 3)).astype(np.int32) for _ in range(2))
    ok = np.full((3, 3), 2, np.int32)
    first = cf(a, b, ok)
    bad = ok.copy()
    bad[1, 1] = 0
    with pytest.raises(InvalidArgumentError, match=r"test_cuda_pool\.py:\d+"):
        cf(a, b, bad)
    held = [(cf(a + i, b, ok), a + i) for i in range(3)]
    for out, x in [(first, a)] + held:
        np.testing.assert_array_equal(out.numpy(), reference(f, x, b, ok)[0])


def test_an_error_inside_a_loop_body_then_good_calls():
    def f(x, d, n):
        i = gc.constant(0)
        while i < n:
            x = gc.matmul(x, x) * 0.5
            i += 1 + (i // d) * 0      # d == 0: the body's fallback raises
        return x
    cf = gc.function(f, backend="cuda")
    x = RNG.standard_normal((2, 2))
    with pytest.raises(InvalidArgumentError):
        cf(x, np.int32(0), np.int32(3))
    outs = [(cf(x + j, np.int32(1), np.int32(3)), x + j) for j in range(3)]
    for out, xj in outs:
        np.testing.assert_allclose(out.numpy(), reference(f, xj, np.int32(1), np.int32(3))[0],
                                   rtol=1e-12)


def test_reuse_off_allocates_every_intermediate(pool_bytes):
    pool_bytes("0")
    f = gc.function(mm_softmax, backend="cuda")
    f(np.ones((3, 4)), np.ones((4, 5)))
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    runs = CudaRuns()
    with runs.count():
        out = flat(f(a, b))
    assert runs.reuses == 0 and runs.allocations == 5     # 2 uploads, m, 2 results
    assert_same(out, reference(mm_softmax, a, b))


@pytest.mark.parametrize("text", ["lots", "-1", "1.5"])
def test_a_bad_pool_bound_is_a_clear_error_at_the_call(pool_bytes, text):
    pool_bytes(text)
    f = gc.function(lambda x: x * 2.0, backend="cuda")
    with pytest.raises(ValueError, match=r"GRAPHC_CUDA_POOL_BYTES=.*whole number >= 0"):
        f(np.ones(2))


def test_describe_tells_about_the_pool():
    f = gc.function(mm_softmax, backend="cuda")
    a, b = np.ones((3, 4)), np.ones((4, 5))
    f(a, b)
    text = backend.describe(f.get_concrete_function(a, b).graph)
    assert "buffer pool: 3 idle buffer(s), 376 bytes kept for the next call" in text
    assert "GRAPHC_CUDA_POOL_BYTES" in text and "device allocations" in text
