"""graphc.dask on a distributed.LocalCluster of two worker processes: map_blocks against
numpy, a function only the client can import, a bad block, DataParallel against one process
on the whole batch (SGD and Adam), and a worker killed mid-run."""
import importlib
import os
import signal
import sys
import textwrap

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import graphc as gc  # noqa: E402
import graphc.dask as gd  # noqa: E402
from graphc.dask import payload  # noqa: E402
from graphc.errors import InvalidArgumentError  # noqa: E402

TIMEOUT = 120


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", death_timeout=TIMEOUT)
    c = distributed.Client(cluster, timeout=TIMEOUT)
    try:
        c.wait_for_workers(2, timeout=TIMEOUT)
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


def _compute(client, arr):
    return client.compute(arr).result(timeout=TIMEOUT)


def _data(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@gc.function
def chain(x, y):
    return gc.tanh(x) * y + gc.exp(-gc.abs(y))


def test_map_blocks_on_workers_matches_numpy(client):
    x, y = _data((50, 9)), _data((50, 9), 1)
    client.run(payload.clear_cache)
    r = gd.map_blocks(chain, da.from_array(x, chunks=(7, 4)), da.from_array(y, chunks=(11, 9)))
    expect = np.tanh(x) * y + np.exp(-np.abs(y))
    np.testing.assert_allclose(_compute(client, r), expect, rtol=3e-6, atol=1e-6)
    np.testing.assert_allclose(_compute(client, r), expect, rtol=3e-6, atol=1e-6)
    # many blocks, two runs: each worker process loaded the graph once
    assert set(client.run(payload.cache_size).values()) <= {0, 1}
    assert sum(client.run(payload.cache_size).values()) >= 1
    rows = gd.map_blocks(gc.function(lambda x: gc.reduce_max(x, axis=1)),
                         da.from_array(x, chunks=(13, 9)))
    np.testing.assert_array_equal(_compute(client, rows), x.max(1))


def test_function_only_the_client_can_import(client, tmp_path, monkeypatch):
    mod = "graphc_client_only_fn_4471"
    (tmp_path / f"{mod}.py").write_text(textwrap.dedent("""
        import graphc as gc

        @gc.function
        def softplus_shift(x, y):
            return gc.log(1.0 + gc.exp(x)) - y
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    m = importlib.import_module(mod)
    try:
        assert all(v is None for v in client.run(importlib.util.find_spec, mod).values())
        x, y = _data((20, 6)), _data((20, 6), 3)
        r = gd.map_blocks(m.softplus_shift, da.from_array(x, chunks=(6, 6)),
                          da.from_array(y, chunks=(6, 6)))
        np.testing.assert_allclose(_compute(client, r), np.log1p(np.exp(x)) - y, rtol=2e-6,
                                   atol=2e-6)
    finally:
        sys.modules.pop(mod, None)


def test_bad_block_error_reaches_the_client(client):
    @gc.function
    def checked_log(x):
        assert gc.reduce_all(x > 0.0), "log of a non-positive value"
        return gc.log(x)
    x = np.abs(_data((12, 4))) + 0.1
    x[9, 0] = 0.0
    r = gd.map_blocks(checked_log, da.from_array(x, chunks=(4, 4)))
    with pytest.raises(InvalidArgumentError, match=r"block \(2, 0\).*non-positive"):
        _compute(client, r)


class Regressor(gc.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(5)
        self.w1 = gc.Variable(rng.normal(size=(4, 8)).astype(np.float32) * 0.5)
        self.b1 = gc.Variable(np.zeros(8, np.float32))
        self.w2 = gc.Variable(rng.normal(size=(8, 1)).astype(np.float32) * 0.5)

    def __call__(self, x):
        return gc.matmul(gc.nn.relu(gc.matmul(x, self.w1) + self.b1), self.w2)


def mse(model, x, y):
    return gc.reduce_mean((model(x) - y) ** 2)


def _single_process_steps(make_opt, x, y, steps):
    model, opt = Regressor(), make_opt()

    @gc.function
    def step(x, y):
        with gc.GradientTape() as tape:
            loss = mse(model, x, y)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    losses = [float(step(x, y).numpy()) for _ in range(steps)]
    return losses, [v.numpy() for v in model.trainable_variables]


@pytest.mark.parametrize("make_opt", [lambda: gc.optimizers.SGD(0.05, momentum=0.9),
                                      lambda: gc.optimizers.Adam(0.01)], ids=["sgd", "adam"])
def test_data_parallel_equals_single_process(client, make_opt):
    x, y = _data((45, 4), 7), _data((45, 1), 8)          # 45 rows: shards of 22 and 23
    model, opt = Regressor(), make_opt()
    dp = gd.DataParallel(model, opt, mse, client=client)
    losses = [float(dp.fit_batch(x, y).numpy()) for _ in range(4)]
    expect_losses, expect_vars = _single_process_steps(make_opt, x, y, 4)
    np.testing.assert_allclose(losses, expect_losses, rtol=2e-5)
    for got, want in zip(model.trainable_variables, expect_vars):
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=1e-6)
    parts = dp._scattered[4]
    assert len(parts) == 2 and sorted(n for _, n, _, _ in parts) == [22, 23]
    dp.fit_batch(x, y)
    assert dp._scattered[4] is parts          # the same arrays are not sent again
    x[0, 0] += 1.0                            # changed in place: sent again
    dp.fit_batch(x, y)
    assert dp._scattered[4] is not parts


def test_data_parallel_bad_batches(client):
    dp = gd.DataParallel(Regressor(), gc.optimizers.SGD(0.1), mse, client=client)
    with pytest.raises(ValueError, match="same non-zero batch size"):
        dp.fit_batch(_data((6, 4)), _data((5, 1)))
    with pytest.raises(ValueError, match="same non-zero batch size"):
        dp.fit_batch(_data((0, 4)), _data((0, 1)))
    with pytest.raises(TypeError, match="not a graphc dtype"):
        dp.fit_batch(np.array([["a"] * 4]), _data((1, 1)))
    # one row on two workers: one shard (none empty), the same step as one process
    model, opt = Regressor(), gc.optimizers.SGD(0.1)
    dp = gd.DataParallel(model, opt, mse, client=client)
    x, y = _data((1, 4), 4), _data((1, 1), 5)
    got = float(dp.fit_batch(x, y).numpy())
    want, want_vars = _single_process_steps(lambda: gc.optimizers.SGD(0.1), x, y, 1)
    np.testing.assert_allclose(got, want[0], rtol=2e-5)
    assert len(dp._scattered[4]) == 1


def test_killed_worker_is_recovered(client):
    x, y = _data((64, 16)), _data((64, 16), 1)
    r = gd.map_blocks(chain, da.from_array(x, chunks=(4, 16)), da.from_array(y, chunks=(4, 16)))
    persisted = client.persist(r)
    distributed.wait(persisted, timeout=TIMEOUT)
    victim = sorted(client.has_what().items(), key=lambda kv: -len(kv[1]))[0][0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)                # its blocks are lost; dask recomputes them
    expect = np.tanh(x) * y + np.exp(-np.abs(y))
    np.testing.assert_allclose(client.compute(persisted).result(timeout=TIMEOUT), expect,
                               rtol=3e-6, atol=1e-6)
    client.wait_for_workers(2, timeout=TIMEOUT)
    # DataParallel: shards on a killed worker are scattered again and the step is retried
    model, opt = Regressor(), gc.optimizers.SGD(0.05)
    dp = gd.DataParallel(model, opt, mse, client=client)
    bx, by = _data((30, 4), 2), _data((30, 1), 3)
    first = float(dp.fit_batch(bx, by).numpy())
    parts = dp._scattered[4]
    victim = parts[0][0]
    os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
    second = float(dp.fit_batch(bx, by).numpy())
    assert dp._scattered[4] is not parts          # the lost shards were sent again
    expect_losses, expect_vars = _single_process_steps(lambda: gc.optimizers.SGD(0.05),
                                                       bx, by, 2)
    np.testing.assert_allclose([first, second], expect_losses, rtol=2e-5)
    for got, want in zip(model.trainable_variables, expect_vars):
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=1e-6)
    client.wait_for_workers(2, timeout=TIMEOUT)
