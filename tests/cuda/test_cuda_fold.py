"""Folded kernels (kernels/cuda/folding.py): a mean's divide and a bias gradient's scale run in
the reduction's kernel, variable updates in the kernel computing their values. Launch
counts drop to the exact numbers below, and results stay the numpy backend's."""
import numpy as np
import pytest
from numba import cuda

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import folding
from cuda_helpers import CudaRuns, agree, bench_mlp, mlp_step

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")    # numpy's, edge values

# launches per MLP step (bench's 4-6-3 relu MLP, batch 5, labels on the device):
# unfolded -> folded. SGD: the 4 `lr * g` kernels and the mean's divide go; momentum and
# Adam also lose their slot assigns, which launch a kernel while a label check is pending;
# all three `iterations += 1` (written by the last update kernel), Adam its 4 per-variable
# rate kernels (each update kernel computes the rate from the counter)
OPTIMIZERS = {"sgd": (lambda: gc.optimizers.SGD(0.1), 21, 14),
              "momentum": (lambda: gc.optimizers.SGD(0.1, momentum=0.9), 25, 14),
              "adam": (lambda: gc.optimizers.Adam(0.05), 33, 14)}


def _mlp(backend, opt):
    return bench_mlp(backend, opt, 4)


def _data(n=3):
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((5, 4)).astype(np.float32),
             rng.integers(0, 3, 5).astype(np.int32)) for _ in range(n)]


def _cuda_launches(opt, data):
    """Per step: launches, host copies; the losses; the variables and optimizer state."""
    step, params = _mlp("cuda", opt)
    counts, losses = [], []
    for x, y in data:
        runs = CudaRuns()
        x, y = cuda.to_device(x), cuda.to_device(y)
        with runs.count():
            loss = step(x, y)
        counts.append((runs.launches, runs.d2h))
        losses.append(float(loss))
    return counts, losses, [p.numpy() for p in params + opt.variables()]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_mlp_step_launches_drop_and_results_agree(name, monkeypatch):
    make, before, after = OPTIMIZERS[name]
    data = _data()
    opt = make()
    step, params = _mlp("numpy", opt)
    want_losses = [float(step(x, y)) for x, y in data]
    want = [p.numpy() for p in params + opt.variables()]
    counts, losses, got = _cuda_launches(make(), data)
    assert counts[1:] == [(after, 0)] * (len(data) - 1), counts     # first call compiles
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(folding, "fold", lambda graph, steps: steps)     # as before
    counts, losses, got = _cuda_launches(make(), data[:2])
    assert counts[1] == (before, 0), counts
    np.testing.assert_allclose(losses, want_losses[:2], rtol=1e-5)


def test_agreement_mlp_step_launches(monkeypatch):
    """test_cuda_agreement's step (w1, b1, w2; momentum): 13 launches, 21 unfolded."""
    rng = np.random.default_rng(0)
    x = cuda.to_device(rng.standard_normal((6, 4)).astype(np.float32))
    y = cuda.to_device(rng.integers(0, 3, 6).astype(np.int32))
    for want in (13, 21):
        step, _ = mlp_step("cuda")
        step(x, y)
        runs = CudaRuns()
        with runs.count():
            step(x, y)
        assert (runs.launches, runs.d2h) == (want, 0)
        monkeypatch.setattr(folding, "fold", lambda graph, steps: steps)     # as before


@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mean_is_one_launch(axis, dtype):
    x = (np.arange(-6, 6).reshape(3, 4) * 1.5).astype(dtype)
    x[1, 2] = -0.0
    runs = agree(lambda a: gc.reduce_mean(a * 2, axis=axis), x, kernels=1)
    assert runs.launches == 1


def test_epilogue_reads_scalars_and_kept_axes_values():
    """`e` reads the dropped-axes sum, a scalar and a value of the kept axes' shape: one
    launch; a value that broadcasts into the kept axes stays a kernel of its own."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    c, r = rng.standard_normal(3).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    for fn, args, launches in (
            (lambda a, k: gc.reduce_sum(a, axis=0) * k - 2.0, (x, c), 1),
            (lambda a, k: gc.maximum(gc.reduce_max(a, axis=1), k) / 3.0, (x, r), 1),
            (lambda a, k: gc.reduce_sum(a, axis=1) * k, (x, r[:1]), 2)):
        runs = agree(fn, *args, kernels=1)
        assert runs.launches == launches


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_variable_updates_wrap_as_numpy(dtype):
    big = np.iinfo(dtype).max
    start = np.array([big, -big, 7, 0], dtype)
    x = np.array([2, -3, big // 2, 1], dtype)

    def run(backend):
        v, w = gc.Variable(start.copy()), gc.Variable(start.copy())
        u = gc.Variable(start.copy())

        @gc.function(backend=backend)
        def f(a):
            v.assign_add(a * 3)
            w.assign_sub(a * a)
            u.assign(a + big)
            return a * 3
        out = f(x)
        return [np.asarray(out.numpy()), v.numpy(), w.numpy(), u.numpy()]
    runs = CudaRuns()
    with runs.count():
        got = run("cuda")
    for g, w in zip(got, run("numpy")):
        np.testing.assert_array_equal(g, w)
    assert runs.launches == 3       # a kernel per update, with its value (5 unfolded)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_updates_round_as_the_separate_ops(dtype):
    """`w - lr * g` rounds `lr * g` first (no fma): an overflowing product stays inf, a
    product that rounds away in the sum as numpy; NaN, -0.0."""
    big = np.finfo(dtype).max
    start = np.array([big, 1.0, -0.0, 0.0, np.nan, 1e-8, 3.0], dtype)
    g = np.array([big, 1 + 2 ** -23, 0.0, -0.0, 1.0, 1e-8, np.inf], dtype)

    def run(backend):
        w = gc.Variable(start.copy())

        def f(a):
            w.assign_sub(a * 3.0)
            return a
        gc.function(f, backend=backend)(g)
        return w.numpy()
    got, want = run("cuda"), run("numpy")
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_same_variable_twice_and_a_bad_shape_run_unfolded():
    v = gc.Variable(np.ones(3, np.float32))

    def f(a):
        v.assign_add(a * 2.0)
        v.assign_sub(a * 0.5)
        return v.read_value()
    for backend in ("numpy", "cuda"):
        v.assign(np.ones(3, np.float32))
        out = gc.function(f, backend=backend)(np.arange(3, dtype=np.float32))
        np.testing.assert_array_equal(out.numpy(), [1.0, 2.5, 4.0])
        np.testing.assert_array_equal(v.numpy(), [1.0, 2.5, 4.0])
    w = gc.Variable(np.zeros(3, np.float32))
    spec = [gc.TensorSpec([None], gc.float32)]
    errors = []
    def h(a):
        w.assign_sub(a * 2.0)
        return a
    for backend in ("numpy", "cuda"):
        g = gc.function(h, backend=backend, input_signature=spec)
        g(np.ones(3, np.float32))
        with pytest.raises(InvalidArgumentError) as e:
            g(np.ones(4, np.float32))
        errors.append(str(e.value))
        np.testing.assert_array_equal(w.numpy(), [-2.0] * 3 if backend == "numpy" else -4.0)
    assert errors[0] == errors[1] and "test_cuda_fold.py" in errors[1]


def test_describe_names_the_folded_updates():
    from graphc.kernels.cuda.backend import describe
    w = gc.Variable(np.ones((2, 3), np.float32))

    def step(g):
        w.assign_sub(g * 0.1)
        return g
    f = gc.function(step, backend="cuda")
    f(np.ones((2, 3), np.float32))
    text = describe(f.get_concrete_function(gc.TensorSpec([2, 3], gc.float32)).graph)
    assert "+ assign_sub_variable" in text and "variable updates written by the kernel" in text
    assert "new0[i0] = old0[i0] if keep else float32(old0[i0] - v0)" in text


def test_a_failed_label_check_keeps_the_folded_updates_old_values():
    """A bad label: the folded kernels keep every variable's old value (checks.py), and the
    error comes at the next read, as unfolded."""
    from graphc.kernels.cuda.backend import describe
    opt = gc.optimizers.SGD(0.1, momentum=0.9)
    step, params = _mlp("cuda", opt)
    (x, y), (x2, y2) = _data(2)
    step(cuda.to_device(x), cuda.to_device(y))
    before = [p.numpy() for p in params + opt.variables()]
    bad = y2.copy()
    bad[3] = 3
    step(cuda.to_device(x2), cuda.to_device(bad))
    with pytest.raises(InvalidArgumentError):
        params[0].numpy()
    for p, b in zip(params + opt.variables(), before):
        np.testing.assert_array_equal(p.numpy(), b)
    text = describe(step.get_concrete_function(gc.TensorSpec([5, 4], gc.float32),
                                               gc.TensorSpec([5], gc.int32)).graph)
    assert text.count("variable updates written by the kernel") == 4
