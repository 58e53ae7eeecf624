"""Tracing and calls from several threads (issue 12, item 2).

Tracing state is per thread (graphs being built, GradientTapes, variable-creation hooks),
a Function's cache traces one signature once however many threads call it first, a
tensor returned by a compiled function never changes afterwards, and one compiled call's
variable reads and updates are one step relative to other threads' calls. Threads start
together at a barrier; the GIL switch interval is made tiny so that threads interleave
as often as they can. Every wait has a generous timeout that only guards against a hang.
"""
import contextlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import graphc as gc
from graphc import autograph

from concurrency import run_together

WAIT = 60.0      # seconds: only ever reached if something deadlocks


@pytest.fixture(autouse=True)
def fast_switching():
    """Switch threads every few microseconds, not every 5 ms: many more interleavings."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


class Backend:
    def __init__(self, name, forced=None):
        self.name, self.forced = name, forced

    def function(self, fn, **kw):
        return gc.function(fn, backend=self.name, **kw)

    def expect(self):
        return self.forced.expect() if self.forced else contextlib.nullcontext()


@pytest.fixture(params=["numpy", "numba"])
def backend(request):
    if request.param == "numpy":
        return Backend("numpy")
    return Backend("numba", request.getfixturevalue("numba_forced"))


# -- tracing state is per thread -----------------------------------------------------------

def test_eager_ops_in_another_thread_are_not_captured_by_a_trace():
    v = gc.Variable(0.0)
    mid_trace, resume = threading.Event(), threading.Event()

    @gc.function
    def f(x):
        y = x * 2.0
        mid_trace.set()
        assert resume.wait(WAIT)        # hold the trace open while the other thread runs
        return y + 1.0

    seen = {}

    def other_thread():
        assert mid_trace.wait(WAIT)
        try:
            v.assign_add(1.0)
            seen["z"] = gc.constant(3.0) * 2.0
            seen["made"] = gc.Variable(5.0)      # not a variable of f's trace either
        finally:
            resume.set()

    t = threading.Thread(target=other_thread)
    t.start()
    np.testing.assert_array_equal(f(gc.constant([1.0, 2.0])).numpy(), [3.0, 5.0])
    t.join(WAIT)
    z = seen["z"]
    assert not z.is_symbolic and float(z) == 6.0
    assert float(seen["made"]) == 5.0
    assert float(v) == 1.0
    (cf,) = f.concrete_functions()
    assert {op.type for op in cf.graph.operations} <= {"constant", "multiply", "add"}
    assert cf.graph.captures == []
    assert f.tracing_count == 1
    for _ in range(3):
        f(gc.constant([1.0, 2.0]))
    assert float(v) == 1.0              # f's calls never run the other thread's assign


def test_a_tape_does_not_record_another_threads_ops():
    x = gc.constant(2.0)
    recording, other_done = threading.Event(), threading.Event()
    seen = {}

    def other_thread():
        assert recording.wait(WAIT)
        try:
            with gc.GradientTape() as own:
                own.watch(x)
                seen["y"] = x * 100.0
            seen["own_grad"] = own.gradient(seen["y"], x)
            g = gc.function(lambda a: a * 5.0)
            seen["g_out"] = g(x)
            seen["g_traces"] = g.tracing_count
        finally:
            other_done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        recording.set()
        assert other_done.wait(WAIT)
        loss = x * 3.0
    t.join(WAIT)
    assert float(tape.gradient(loss, x)) == 3.0
    assert tape.gradient(seen["y"], x) is None       # that op was never on this tape
    assert float(seen["own_grad"]) == 100.0
    # this thread's eager tape does not turn the other thread's gc.function eager
    assert float(seen["g_out"]) == 10.0 and seen["g_traces"] == 1


# -- a Function's cache under concurrent calls ---------------------------------------------

class Arrivals:
    """Holds a trace open until every thread is about to call the function (and a little
    longer), so that the others call while it traces."""

    def __init__(self, n):
        self.n, self.count, self.lock, self.all_here = n, 0, threading.Lock(), threading.Event()

    def arrive(self):
        with self.lock:
            self.count += 1
            if self.count == self.n:
                self.all_here.set()

    def hold(self):
        assert self.all_here.wait(WAIT)
        threading.Event().wait(0.05)      # a sleep: the last arrivals enter the call


def _expected(x):
    for i in range(10):
        x = x + float(i)
    return x * 2.0


def _make_traced(arrivals, fn=_expected):
    def traced(x):
        arrivals.hold()
        return fn(x)
    return traced


def _call_all(n, f, inputs, arrivals):
    def work(i):
        x = gc.constant(inputs[i])
        arrivals.arrive()
        return f(x)
    return run_together(n, work)


def test_concurrent_first_calls_for_one_signature_trace_once(backend):
    arrivals = Arrivals(16)
    f = backend.function(_make_traced(arrivals))
    inputs = [np.full(4, i, np.float32) for i in range(16)]
    out = _call_all(16, f, inputs, arrivals)
    assert f.tracing_count == 1 and len(f.concrete_functions()) == 1
    for x, y in zip(inputs, out):
        assert type(y) is gc.Tensor and not y.is_symbolic
        np.testing.assert_allclose(y.numpy(), _expected(x), rtol=1e-6)


def test_concurrent_first_calls_of_a_method_trace_once():
    arrivals = Arrivals(16)

    class Model:
        def __init__(self):
            self.w = gc.Variable(np.ones(3, np.float32))

        @gc.function
        def apply(self, x):
            arrivals.hold()
            return _expected(x) * self.w

    m = Model()
    inputs = [np.full(3, i, np.float32) for i in range(16)]
    out = _call_all(16, m.apply, inputs, arrivals)
    assert m.apply.tracing_count == 1
    for x, y in zip(inputs, out):
        np.testing.assert_allclose(y.numpy(), _expected(x), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::graphc.errors.RetracingWarning")
def test_concurrent_first_calls_for_different_signatures_trace_each_once():
    arrivals = Arrivals(16)
    f = gc.function(_make_traced(arrivals))
    inputs = [np.arange(1 + i % 8, dtype=np.float32) for i in range(16)]   # 8 signatures
    out = _call_all(16, f, inputs, arrivals)
    assert f.tracing_count == 8
    shapes = sorted(cf.graph.inputs[0].type.shape for cf in f.concrete_functions())
    assert shapes == [(n,) for n in range(1, 9)]
    for x, y in zip(inputs, out):
        np.testing.assert_allclose(y.numpy(), _expected(x), rtol=1e-6)


def test_a_failing_first_trace_raises_in_every_thread_that_waited_for_it():
    arrivals = Arrivals(8)
    f = gc.function(_make_traced(arrivals, lambda x: x + gc.constant([1.0, 2.0, 3.0])))

    def call(i):
        x = gc.constant([1.0, 2.0])
        arrivals.arrive()
        with pytest.raises(ValueError, match=r"add: incompatible shapes .*\[2\] and \[3\]"):
            f(x)
        return True
    assert all(run_together(8, call))
    assert f.tracing_count == 0 and f.concrete_functions() == []


def test_a_trace_that_asks_for_its_own_concrete_function_does_not_deadlock():
    @gc.function
    def f(x):
        if x.shape[0] > 1:
            inner = f.get_concrete_function(gc.TensorSpec([x.shape[0] - 1]))
            assert inner.graph.inputs[0].type.shape == (x.shape[0] - 1,)
        return x * 2.0

    out = run_together(4, lambda i: f(gc.constant([1.0, 2.0, 3.0])))
    assert all(np.array_equal(y.numpy(), [2.0, 4.0, 6.0]) for y in out)
    assert f.tracing_count == 3      # [3], then [2] and [1] from inside the traces


def test_concurrent_autograph_conversion_converts_once():
    def collatz_steps(n):
        steps = gc.constant(0)
        while n > 1:
            n = gc.where(n % 2 == 0, n // 2, 3 * n + 1)
            steps += 1
        return steps

    converted = run_together(16, lambda i: autograph.to_graph(collatz_steps))
    assert all(c is converted[0] for c in converted)
    assert converted[0] is not collatz_steps
    f = gc.function(collatz_steps)
    out = run_together(8, lambda i: int(f(gc.constant(27))))
    assert out == [111] * 8 and f.tracing_count == 1


# -- returned tensors never change ----------------------------------------------------------

N = 1 << 18       # big enough that numpy releases the GIL inside the in-place add


def _keep_reading(read, count):
    """`count` reads, each with a copy taken at once; then which of them changed since."""
    kept = []
    for _ in range(count):
        r = read()
        r = r[0] if isinstance(r, tuple) else r
        kept.append((r, r.numpy()))
    torn = sum(c.min() != c.max() for _, c in kept)
    changed = sum(not np.array_equal(r.numpy(), c) for r, c in kept)
    return torn, changed


def test_variable_reads_returned_never_change_while_other_threads_assign(backend):
    v = gc.Variable(np.zeros(N, np.float32))
    read = backend.function(lambda: (v.read_value(), v * 2.0 + 1.0))  # numba: a fused kernel
    add = backend.function(lambda: v.assign_add(gc.ones([N])))
    sub = backend.function(lambda d: v.assign_sub(d))
    one = gc.constant(np.ones(N, np.float32))
    read(), add(), sub(one)
    done = threading.Event()

    def work(i):
        if i == 0:
            try:
                return _keep_reading(read, 300)
            finally:
                done.set()
        for k in range(100000):            # bounded; stops when the reader is done
            if done.is_set():
                break
            (add() if i == 1 else sub(-one) if i == 2 else v.assign_add(one))
        return None

    with backend.expect():
        torn, changed = run_together(4, work)[0]
    assert (torn, changed) == (0, 0)
    assert float(v.numpy().min()) == float(v.numpy().max())


def test_in_place_gemm_update_never_changes_a_returned_read(numba_forced):
    from graphc.kernels.cpu import blas, backend as cpu
    if not blas.available():
        pytest.skip("numpy's BLAS exports no cblas gemm here")
    rng = np.random.default_rng(0)
    w = gc.Variable(np.zeros((128, 128), np.float32))
    a = gc.constant(rng.standard_normal((128, 64)).astype(np.float32))
    b = gc.constant(rng.standard_normal((64, 128)).astype(np.float32))
    step = gc.function(lambda a, b: w.assign_sub(0.5 * gc.matmul(a, b)), backend="numba")
    read = gc.function(lambda: (w.read_value(), w * 2.0 + 1.0), backend="numba")
    step(a, b)
    read()
    assert cpu.compile_plan(step.concrete_functions()[0].graph).blas  # the in-place gemm path
    done = threading.Event()
    reads = []

    def work(i):
        if i == 0:
            try:
                for _ in range(300):
                    r = read()[0]
                    reads.append((r, r.numpy()))
            finally:
                done.set()
        else:
            for _ in range(100000):
                if done.is_set():
                    break
                step(a, b)

    with numba_forced.expect():
        run_together(3, work)
    assert sum(not np.array_equal(r.numpy(), c) for r, c in reads) == 0


def test_numpy_array_of_a_variable_or_tensor_is_a_copy():
    v = gc.Variable(np.zeros(3, np.float32))
    a = np.array(v)
    a += 1.0
    assert v.numpy().tolist() == [0.0, 0.0, 0.0]
    r = gc.function(lambda: v.read_value(), backend="numpy")()
    b = np.array(r)
    b += 1.0
    assert r.numpy().tolist() == [0.0, 0.0, 0.0] and v.numpy().tolist() == [0.0, 0.0, 0.0]


# -- one compiled call's variable reads and updates are one step -----------------------------

THREADS, CALLS, SIZE = 8, 200, 1000
HALF = gc.constant(np.full(SIZE, 0.5, np.float32))
# Zeros whose minimum a call adds between its reads and writes: big enough that numpy lets
# other threads run meanwhile (on unlocked code, another call's update would come between).
PAUSE = gc.constant(np.zeros(1 << 17, np.float32))


def pause(zeros, after=None):
    """0.0 that takes a while; `after` (a variable): computed only once it is read."""
    if after is not None:
        zeros = zeros + after.read_value()[0] * 0.0
    return gc.reduce_min(gc.abs(zeros))


def test_compiled_updates_of_two_variables_are_atomic(backend):
    v, w = gc.Variable(np.zeros(SIZE, np.float32)), gc.Variable(np.zeros(SIZE, np.float32))

    @backend.function
    def bump(half, zeros):
        v.assign_add(gc.abs(half) * 2.0)         # numba: a fused kernel
        w.assign_add(gc.abs(half) * 2.0 + pause(zeros, after=v))

    @backend.function
    def both():
        return v.read_value(), w.read_value()

    bump(HALF, PAUSE), both()
    v.assign(np.zeros(SIZE, np.float32)), w.assign(np.zeros(SIZE, np.float32))
    mismatched = []

    def work(i):
        if i == 0:
            for _ in range(THREADS * CALLS):
                a, b = both()
                if not np.array_equal(a.numpy(), b.numpy()):
                    mismatched.append((a.numpy(), b.numpy()))
        else:
            for _ in range(CALLS):
                bump(HALF, PAUSE)

    with backend.expect():
        run_together(THREADS + 1, work)
    assert mismatched == []
    np.testing.assert_array_equal(v.numpy(), np.full(SIZE, THREADS * CALLS, np.float32))
    np.testing.assert_array_equal(w.numpy(), np.full(SIZE, THREADS * CALLS, np.float32))


def test_compiled_read_modify_write_loses_no_update(backend):
    v = gc.Variable(np.zeros(SIZE, np.float32))
    step = backend.function(lambda z: v.assign(gc.abs(v) + 1.0 + pause(z)))  # numba: fused
    step(PAUSE)
    v.assign(np.zeros(SIZE, np.float32))
    with backend.expect():
        run_together(THREADS, lambda i: [step(PAUSE) for _ in range(CALLS)])
    np.testing.assert_array_equal(v.numpy(), np.full(SIZE, THREADS * CALLS, np.float32))


def test_functions_updating_overlapping_variables_in_opposite_orders_do_not_deadlock():
    a, b = gc.Variable(np.zeros(SIZE, np.float32)), gc.Variable(np.zeros(SIZE, np.float32))
    ab = gc.function(lambda z: (a.assign_add(gc.ones([SIZE])), b.assign(b + 1.0 + pause(z)))[0])
    ba = gc.function(lambda z: (b.assign_add(gc.ones([SIZE])), a.assign(a + 1.0 + pause(z)))[0])
    ab(PAUSE), ba(PAUSE)
    run_together(4, lambda i: [(ab if i % 2 else ba)(PAUSE) for _ in range(CALLS)])
    for var in (a, b):
        np.testing.assert_array_equal(var.numpy(), np.full(SIZE, 2 + 4 * CALLS, np.float32))


def test_a_variable_passed_as_an_argument_is_locked_for_the_call():
    v = gc.Variable(np.zeros(SIZE, np.float32))
    add_to = gc.function(lambda var, z: var.assign(var + 1.0 + pause(z)))
    add_to(v, PAUSE)
    run_together(THREADS, lambda i: [add_to(v, PAUSE) for _ in range(CALLS)])
    np.testing.assert_array_equal(v.numpy(), np.full(SIZE, 1 + THREADS * CALLS, np.float32))


# -- parallel kernels from several threads ---------------------------------------------------

_WORKQUEUE_SCRIPT = """
import threading, numba, numpy as np, graphc as gc
from graphc.kernels.stats import COUNTS
a = gc.constant(np.random.default_rng(0).random((512, 512), np.float32))
f = gc.function(lambda x: gc.tanh(x @ x) * 2.0 + 1.0, backend="numba")
want = np.tanh(a.numpy() @ a.numpy()) * 2.0 + 1.0
f(a)
def work():
    for _ in range(20):
        np.testing.assert_allclose(f(a).numpy(), want, rtol=1e-4)
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(numba.threading_layer(), COUNTS.kernel_calls)
"""


def test_parallel_kernels_from_several_threads_on_numbas_workqueue_layer(tmp_path):
    """That layer terminates the process when two threads enter parallel regions at once;
    graphc's parallel kernels and split gemm take turns (kernels/launch.py)."""
    pytest.importorskip("numba")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", GRAPHC_NUMBA_MIN_SIZE="0",
               GRAPHC_KERNEL_CHOICE="kernel", GRAPHC_CACHE_DIR=str(tmp_path),
               GRAPHC_THREADS="2",     # parallel regions even when other work is running
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _WORKQUEUE_SCRIPT], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    layer, kernel_calls = done.stdout.split()
    assert layer == "workqueue" and int(kernel_calls) > 0
