"""Class-id checks on the device (kernels/cuda/checks.py): no host copy or sync in the
call; a bad id raises the numpy backend's error, word for word, at the next copy to the
host; until then the variables keep their values, as when the check raises."""
import numpy as np
import pytest
from numba import cuda

import graphc as gc
from graphc.errors import InvalidArgumentError


def loss(logits, labels):
    return gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))


def _numpy_error(fn, *args):
    with pytest.raises(InvalidArgumentError) as e:
        gc.function(fn, backend="numpy")(*args)
    return str(e.value)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("bad", [3, -1, 2**31 - 1])
@pytest.mark.parametrize("n", [1, 40])    # 40: three blocks, the first bad in the second
def test_bad_id_raises_numpys_error_at_the_next_read(cuda_stats, dtype, bad, n):
    rng = np.random.default_rng(n)
    logits = rng.standard_normal((n, 3)).astype(np.float32)
    labels = rng.integers(0, 3, n).astype(dtype)
    labels[n // 2 + n // 4] = bad
    labels[-1] = 7          # a later bad id: numpy names the first
    want = _numpy_error(loss, logits, labels)
    f = gc.function(loss, backend="cuda")
    good = labels.copy()
    good[good >= 3] = 0
    good[good < 0] = 1
    np.testing.assert_allclose(float(f(cuda.to_device(logits), cuda.to_device(good))),
                               float(gc.function(loss, backend="numpy")(logits, good)),
                               rtol=1e-5)
    dl, dbad = cuda.to_device(logits), cuda.to_device(labels)
    with cuda_stats.count():
        out = f(dl, dbad)               # returns: nothing waited for the check
    assert cuda_stats.d2h == 0 and cuda_stats.fallbacks == 0 and cuda_stats.launches >= 2
    for _ in range(2):                  # the failed call's result raises on every read
        with pytest.raises(InvalidArgumentError) as e:
            out.numpy()
        assert str(e.value) == want
    assert "test_cuda_checks.py" in want
    later = f(dl, cuda.to_device(good))     # after the error: checks pass again
    np.testing.assert_allclose(float(later), float(gc.function(loss, backend="numpy")(
        logits, good)), rtol=1e-5)


def test_labels_of_rank_two_and_host_labels():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((2, 9, 4)).astype(np.float32)
    labels = rng.integers(0, 4, (2, 9)).astype(np.int64)
    labels[1, 2] = 4
    want = _numpy_error(loss, logits, labels)
    f = gc.function(loss, backend="cuda")
    out = f(cuda.to_device(logits), cuda.to_device(labels))
    with pytest.raises(InvalidArgumentError) as e:
        float(out)
    assert str(e.value) == want
    with pytest.raises(InvalidArgumentError) as e:     # labels on the host: checked there,
        f(logits, labels)                              # at the call, as numpy does
    assert str(e.value) == want


def test_empty_labels_launch_nothing(cuda_stats):
    f = gc.function(lambda x, y: gc.nn.sparse_softmax_cross_entropy_with_logits(y, x),
                    backend="cuda")
    out = f(cuda.to_device(np.zeros((0, 3), np.float32)), cuda.to_device(np.zeros(0, np.int32)))
    assert out.numpy().shape == (0,)


def _model(backend):
    rng = np.random.default_rng(0)
    w = gc.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    b = gc.Variable(np.zeros(3, np.float32))
    last = gc.Variable(np.zeros((), np.float32))
    opt = gc.optimizers.SGD(0.1, momentum=0.9)

    @gc.function(backend=backend)
    def step(x, y):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(
                y, gc.matmul(x, w) + b))
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        last.assign(loss)
        return loss
    return step, [w, b, last, opt.iterations]


def test_variables_keep_their_values_until_the_error_is_seen():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(3)]
    ys = [rng.integers(0, 3, 6).astype(np.int32) for _ in range(3)]
    bad = ys[1].copy()
    bad[4] = 3
    step, ref = _model("numpy")
    l0 = float(step(xs[0], ys[0]))
    with pytest.raises(InvalidArgumentError) as e:
        step(xs[1], bad)
    want = [v.numpy() for v in ref]

    cstep, got = _model("cuda")
    dev = lambda a: cuda.to_device(a)  # noqa: E731
    first = cstep(dev(xs[0]), dev(ys[0]))
    failed = cstep(dev(xs[1]), dev(bad))
    after = cstep(dev(xs[2]), dev(ys[2]))   # made before the host saw the error: no updates
    with pytest.raises(InvalidArgumentError) as e2:
        got[0].numpy()                      # the first copy to the host raises
    assert str(e2.value) == str(e.value)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)
    assert got[3].numpy() == 1              # the iteration counter too
    np.testing.assert_allclose(float(first), l0, rtol=1e-5)     # before the failure
    for r in (failed, after):
        with pytest.raises(InvalidArgumentError):
            r.numpy()
    # then training goes on as the numpy backend's does
    np.testing.assert_allclose(float(cstep(dev(xs[2]), dev(ys[2]))),
                               float(step(xs[2], ys[2])), rtol=1e-5)
    for g, w in zip(got, ref):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
