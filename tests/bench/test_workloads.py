"""The workloads compute what they claim (vs numpy/Python), eagerly and compiled; the runner's
pieces (agreement check, timing, peers, formatting) behave."""
import contextlib
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.bench import WORKLOADS, BenchReport, backend_status, report
from graphc.bench import workloads as W
from graphc.bench.peers import JaxPeer, NumbaHand, TensorFlowPeer
from graphc.bench.runner import disagreement, format_seconds, format_speedup, run_workload
from graphc.bench.timing import measure, measure_interleaved

BACKENDS = [b for b, why in backend_status().items() if why is None]
MODES = ["eager"] + BACKENDS


def run_mode(fn, args, mode, forced=None, nothing_compiled=None):
    """fn eagerly or compiled for `mode`; on numba (with kernels forced: `forced` is the
    numba_forced fixture) the run must enter compiled code, or none if `nothing_compiled`
    says why the graph holds nothing the backend compiles."""
    if mode == "eager":
        return fn(*args)
    f = gc.function(fn, backend=mode)
    if mode != "numba":
        return f(*args)
    with forced.none(nothing_compiled) if nothing_compiled else forced.expect():
        return f(*args)


@pytest.fixture
def forced(request, mode):
    """numba_forced for the numba mode (the tests' tiny shapes would run numpy rules)."""
    return request.getfixturevalue("numba_forced") if mode == "numba" else None


def chain_np(x):
    x = x.astype(np.float64)
    return np.tanh(1.5 * x + 0.5) * np.exp(-x * x) + 0.5 * np.sin(x)


def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm_np(x, gamma, beta):
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * gamma + beta


shapes = st.tuples(st.integers(1, 6), st.integers(1, 9))


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes, seed=st.integers(0, 1000))
def test_row_workloads_match_numpy(mode, forced, shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32)
    beta = rng.uniform(-1, 1, shape[1]).astype(np.float32)
    got = run_mode(W.elementwise_chain, [gc.constant(x)], mode, forced)
    np.testing.assert_allclose(got.numpy(), chain_np(x), rtol=1e-5, atol=1e-6)
    got = run_mode(W.row_softmax, [gc.constant(x)], mode, forced)
    np.testing.assert_allclose(got.numpy(), softmax_np(x), rtol=1e-5, atol=1e-7)
    got = run_mode(W.layernorm, [gc.constant(a) for a in (x, gamma, beta)], mode, forced)
    np.testing.assert_allclose(got.numpy(), layernorm_np(x, gamma, beta), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [0, 1, 7, 60])
def test_scalar_loop_matches_python(mode, forced, n):
    want = sum(i * i % 7 for i in range(n))
    fn, _ = W.loop_form(W.scalar_loop, W.scalar_loop_functional, np.int32(10))
    for f in {fn, W.scalar_loop_functional}:
        got = run_mode(f, [gc.constant(np.int32(n))], mode, forced)
        assert got.dtype == gc.int32 and int(got) == want
    assert int(W.scalar_loop(gc.constant(n))) == want       # the Python form, eagerly


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.floats(-4, 4, width=32), min_size=1, max_size=12))
def test_branchy_loop_matches_numpy(mode, forced, values):
    x = np.array(values, np.float32)
    want = np.where(x > 0, x.astype(np.float64) ** 2, -x.astype(np.float64)).sum()
    fn, _ = W.loop_form(W.branchy_loop, W.branchy_loop_functional,
                        np.array([2.0, -1.0, 0.5], np.float32))
    for f in {fn, W.branchy_loop_functional}:
        got = run_mode(f, [gc.constant(x)], mode, forced)
        assert got.dtype == gc.float32
        assert float(got) == pytest.approx(want, rel=1e-5, abs=1e-5)
    assert float(W.branchy_loop(gc.constant(x))) == pytest.approx(want, rel=1e-5, abs=1e-5)


def mlp_step_np(init, x, labels, lr):
    w1, b1, w2, b2 = (init[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2"))
    h_pre = x @ w1 + b1
    h = np.maximum(h_pre, 0)
    logits = h @ w2 + b2
    p = softmax_np(logits)
    batch = len(labels)
    loss = -np.log(p[np.arange(batch), labels]).mean()
    d = p.copy()
    d[np.arange(batch), labels] -= 1
    d /= batch
    dh = (d @ w2.T) * (h_pre > 0)
    return [loss, w1 - lr * x.T @ dh, b1 - lr * dh.sum(0), w2 - lr * h.T @ d,
            b2 - lr * d.sum(0)]


@pytest.mark.parametrize("mode", MODES)
def test_mlp_train_step_matches_numpy(mode, forced):
    reason = WORKLOADS["mlp_train_step"].requires()
    if reason:
        pytest.skip(reason)
    sizes = {"in": 12, "hidden": 7, "out": 4, "batch": 5}
    case = WORKLOADS["mlp_train_step"].build(sizes, seed=3)
    want = mlp_step_np(case.init, *case.arrays, W.MLP_LEARNING_RATE)
    loss = run_mode(case.fn, case.args, mode, forced)
    got = [loss.numpy()] + [v.numpy() for v in case.state]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_dispatch_adds(mode, forced):
    got = run_mode(W.scalar_add, [gc.constant(np.float32(1.25)), gc.constant(2.5)], mode,
                   forced, nothing_compiled="one add: no group of ops to fuse")
    assert got.dtype == gc.float32 and float(got) == 3.75


TINY = {"elementwise": {"n": 100}, "softmax": {"rows": 3, "cols": 5},
        "layernorm": {"rows": 3, "cols": 8}, "scalar_loop": {"n": 50},
        "branchy_loop": {"n": 40}, "mlp_train_step": {"in": 20, "hidden": 8, "out": 4,
                                                       "batch": 6},
        "dispatch": {}}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_mode_and_hand_kernel_agree_on_tiny_sizes(name, request):
    assert set(TINY) == set(WORKLOADS)
    workload = WORKLOADS[name]
    compiled = contextlib.nullcontext()
    if "numba" in BACKENDS and not workload.requires():   # its numba mode runs compiled code
        forced = request.getfixturevalue("numba_forced")
        compiled = forced.none("one add: no group of ops to fuse") if name == "dispatch" \
            else forced.expect()
    with compiled:
        result = run_workload(workload, TINY[name], BACKENDS, [NumbaHand], 0.001,
                              out=io.StringIO())
    if result.skipped:
        assert workload.requires() == result.skipped
        return
    assert [r.mode for r in result.results] == MODES + ["numba (hand)"]
    assert not [n for n in result.notes if "left out" in n]     # the hand kernel agrees
    assert (result.bytes_moved is None) == (workload.bytes_moved is None)


def test_disagreement_names_shape_dtype_and_worst_element():
    wl = WORKLOADS["softmax"]
    e = np.zeros((2, 3), np.float32)
    assert disagreement(wl, [e], ["result"], [e + 1e-9], True) is None
    assert "shape (3, 2), eager gives (2, 3)" in disagreement(wl, [e], ["result"],
                                                              [e.T], True)
    assert "dtype float64, eager gives float32" in disagreement(wl, [e], ["result"],
                                                                [e.astype(np.float64)], True)
    assert disagreement(wl, [e], ["result"], [e.astype(np.float64)], False) is None
    bad = e.copy()
    bad[1, 2], bad[0, 0] = 0.5, 0.01
    msg = disagreement(wl, [e], ["result"], [bad], True)
    assert msg.startswith("result at index (1, 2): eager 0, got 0.5 (2 of 6 elements")
    assert "2 outputs instead of 1" in disagreement(wl, [e], ["result"], [e, e], True)


class FakeClock:
    """Time that moves only when a measured call says it took `dt` seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def taking(self, dt, fn):
        def call():
            self.now += dt
            return fn()
        return call


@pytest.fixture
def fake_clock(monkeypatch):
    from graphc.bench import timing
    clock = FakeClock()
    monkeypatch.setattr(timing, "clock", clock)
    return clock


# dyadic call times keep the fake clock's sums exact; a batch lasts about 0.05 s of calls
MS = 2.0 ** -10


def test_measure_counts_calls_and_returns_first_output(fake_clock):
    calls = []
    t = measure(fake_clock.taking(MS, lambda: calls.append(1) or len(calls)),
                min_time=0.01, min_repeats=4)
    assert t.output == 1 and t.repeats == 4        # 4 batches of 51 calls: 0.2 s > min_time
    # + the first call, the warm-up, and one untimed call before each repeat
    assert len(calls) == t.calls + 2 + t.repeats and t.calls == 4 * 51
    assert t.median_s == MS and t.first_s == MS


def test_interleaved_measuring_alternates_between_the_calls(fake_clock):
    order = []
    slow = fake_clock.taking(4 * MS, lambda: order.append("s") or "slow")
    fast = fake_clock.taking(MS, lambda: order.append("f") or "fast")
    ts, tf = measure_interleaved([(slow, lambda o: o), (fast, lambda o: o)], min_time=0.1)
    assert (ts.output, tf.output) == ("slow", "fast")
    assert ts.median_s == 4 * MS and tf.median_s == MS
    assert ts.repeats == tf.repeats == 3                 # 3 batches of ~0.05 s: 0.15 > 0.1
    timed = "".join(order[4:])                           # after the first calls and warm-ups
    assert timed == ("s" * (12 + 1) + "f" * (51 + 1)) * 3   # a batch of each in turn, each
    assert timed.count("s") == ts.calls + ts.repeats     # after one untimed call


def test_loop_form_falls_back_with_a_note_and_keeps_convertible_functions():
    count = [0]

    def impure(x):                  # traced result differs from eager: not "converted"
        count[0] += 1
        return x + count[0]

    def plus_one(x):
        return x + 1

    fn, notes = W.loop_form(impure, plus_one, np.int32(1))
    assert fn is plus_one
    assert notes == ["ran plus_one (gc.while_loop/gc.cond): AutoGraph does not convert "
                     "impure yet (ValueError)"]
    fn, notes = W.loop_form(plus_one, impure, np.int32(1))
    assert fn is plus_one and notes == []


def test_formatting():
    assert [format_seconds(s) for s in (3.2e-7, 1.234e-5, 4.5e-4, 0.0123, 0.456, 2.5)] == \
        ["0.32 us", "12.3 us", "450 us", "12.3 ms", "456 ms", "2.50 s"]
    assert [format_speedup(x) for x in (0.5, 12.34, 123.4, 45678.9)] == \
        ["0.50x", "12.3x", "123x", "45,679x"]


def test_markdown_table_rows_line_up():
    result = run_workload(WORKLOADS["dispatch"], {}, ["numpy"], [], 0.001, out=io.StringIO())
    rep = BenchReport({"date": "d", "cores": 2, "cpu": "c", "os": "o"}, True, 0.001,
                      ["eager", "numpy"], 1.0, 10, {}, [result])
    lines = report.format_table(rep, markdown=True).split("\n\n")[0].splitlines()
    assert len(lines) == 4 and len({line.count("|") for line in lines}) == 1
    assert lines[1].replace("|", "").replace("-", "").replace(":", "").strip() == ""


def test_measure_observes_the_first_call_before_any_other():
    state = [0]

    def step():
        state[0] += 1
        return state

    t = measure(step, min_time=0.001, observe=lambda out: list(out))
    assert t.output == [1] and state[0] == t.calls + 2 + t.repeats


@pytest.mark.parametrize("peer", [TensorFlowPeer, JaxPeer], ids=lambda p: p.name)
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_optional_peers_agree_when_installed(peer, name):
    pytest.importorskip(peer.name)
    workload = WORKLOADS[name]
    if workload.requires():
        pytest.skip(workload.requires())
    result = run_workload(workload, TINY[name], [], [peer], 0.001, out=io.StringIO())
    assert [r.mode for r in result.results] == ["eager", peer.name], result.notes


class _FlakyPeer:
    """A peer that agrees on its first call and fails on a later one."""
    name = "flaky"

    @staticmethod
    def build(workload, case):
        calls = [0]
        hand = NumbaHand.build(workload, case)

        def call():
            calls[0] += 1
            if calls[0] > 3:
                raise RuntimeError("device lost")
            return hand()
        return call


def test_a_peer_failing_while_timed_is_left_out_with_a_note():
    result = run_workload(WORKLOADS["softmax"], TINY["softmax"], ["numpy"], [_FlakyPeer],
                          0.001, out=io.StringIO())
    assert [r.mode for r in result.results] == ["eager", "numpy"]
    assert any(n.startswith("flaky left out: device lost") for n in result.notes)


def test_steady_state_is_timed_after_background_compiles(fake_clock):
    """A first call that queues a compile on the background tier: the warm-up call and every
    timed batch come after that compile finished (the steady state a user reaches)."""
    from graphc.kernels import tiers
    events = []

    def call():
        if not events:
            tiers.submit("test compile", lambda: events.append("compiled"))
        events.append("call")
        return 1
    measure(fake_clock.taking(MS, call), min_time=0.01, min_repeats=3)
    assert events[:3] == ["call", "compiled", "call"]
