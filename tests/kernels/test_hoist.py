"""Loop-invariant lines move out of the generated loops (kernels/cpu/hoist.py), and the
[n, 1] gradient group that sent LLVM's loop vectorizer into a >10 minute walk compiles."""
import numpy as np

import graphc as gc
from graphc.kernels.cpu.hoist import hoist_invariants


def test_invariant_loads_and_values_move_out_of_every_loop_they_do_not_use():
    body = ["x1 = in1[()]",
            "for i0 in range(d0):",
            "    for i1 in range(d1):",
            "        x0 = in0[i0, 0]",
            "        x2 = in2[i0, i1]",
            "        v0 = float32(exp(x0))  # exp @ f.py:3",
            "        v1 = float32(v0 * x1)",
            "        v2 = float32(v1 + x2)",
            "        out0[i0, i1] = v2"]
    assert hoist_invariants(body) == [
        "x1 = in1[()]",
        "for i0 in range(d0):",
        "    x0 = in0[i0, 0]",
        "    v0 = float32(exp(x0))  # exp @ f.py:3",
        "    v1 = float32(v0 * x1)",
        "    for i1 in range(d1):",
        "        x2 = in2[i0, i1]",
        "        v2 = float32(v1 + x2)",
        "        out0[i0, i1] = v2"]


def test_what_must_stay_stays():
    body = ["for i0 in range(d0):",
            "    v9 = float32(v3 + x1)",           # v3 read before it is set in the loop
            "    v3 = float32(x1 * x1)",
            "    v4 = float32(buf_v1[i0])",       # a buffer, not an input
            "    v5 = float32(out0[0])",          # an output: the loop writes it
            "    x6 = in6[i0]",                   # the loop variable
            "    v7 = float32(x1 + 1)",           # set twice in the loop
            "    v7 = float32(v7 + v9)",
            "    n_v2 = cascade_push(lv, n_v2, x1)",   # not a value: an accumulator
            "    a, v8 = x1, x1",                 # tuple targets count as set
            "    v10 = float32(v8 + 1)",
            "    out0[i0] = v10 + v4 + v5 + x6 + v7"]
    assert hoist_invariants(body) == body


def test_a_loop_left_empty_is_not_emptied():
    body = ["for i0 in range(d0):", "    v0 = float32(x1 + 1)"]
    assert hoist_invariants(body) == body


def _loss_and_gradient_over_n_by_1():
    w = gc.Variable(gc.ones([4, 1]))

    def step(x, labels):
        with gc.GradientTape() as tape:
            h = gc.nn.silu(x @ w)
            h = gc.where(x[:, :1] > 0, h * 2.0, 0.0)     # dropout's shape, without randomness
            loss = gc.reduce_mean(gc.nn.sigmoid_cross_entropy_with_logits(labels, h))
        return loss, tape.gradient(loss, [w])[0]
    return step


def test_n_by_1_loss_and_gradient_group_compiles_and_agrees(numba_forced, monkeypatch,
                                                           tmp_path):
    # the group: a full reduction (the loss) and a store loop (the gradient) over [8, 1],
    # ~50 statements on inputs broadcast along the size-1 axis (before the hoist: no end)
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GRAPHC_COMPILE", "sync")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    labels = (rng.random((8, 1)) > 0.5).astype(np.float32)
    eager_loss, eager_grad = _loss_and_gradient_over_n_by_1()(x, labels)
    f = gc.function(_loss_and_gradient_over_n_by_1())
    with numba_forced.expect(kernels=True):
        loss, grad = f(x, labels)
    np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-5, atol=1e-7)
