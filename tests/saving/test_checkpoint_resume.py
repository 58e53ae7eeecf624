"""A training loop resumed from a checkpoint continues bit for bit (weights, slots, step)."""
import numpy as np
import pytest

import graphc as gc

OPTIMIZERS = {
    "sgd": lambda: gc.optimizers.SGD(0.05),
    "momentum": lambda: gc.optimizers.SGD(0.05, momentum=0.9),
    "nesterov": lambda: gc.optimizers.SGD(0.05, momentum=0.8, nesterov=True),
    "adam": lambda: gc.optimizers.Adam(0.01),
}


class MLP(gc.Module):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = gc.Variable(rng.normal(0, 0.5, (6, 16)).astype(np.float32))
        self.b1 = gc.Variable(np.zeros(16, np.float32))
        self.w2 = gc.Variable(rng.normal(0, 0.5, (16, 3)).astype(np.float32))

    def __call__(self, x):
        return gc.nn.relu(x @ self.w1 + self.b1) @ self.w2


def _trainer(seed, make_optimizer, backend):
    model, optimizer = MLP(seed), make_optimizer()

    @gc.function(backend=backend)
    def step(x, y):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, optimizer, step


def _batches(n):
    rng = np.random.default_rng(42)
    return [(rng.normal(size=(32, 6)).astype(np.float32),
             rng.normal(size=(32, 3)).astype(np.float32)) for _ in range(n)]


def _state(model, optimizer):
    out = {f"var{i}": v.numpy() for i, v in enumerate(model.variables)}
    for i, v in enumerate(model.trainable_variables):
        for slot in ("momentum", "m", "v"):
            try:
                out[f"{slot}{i}"] = optimizer.get_slot(v, slot).numpy()
            except KeyError:
                pass
    out["iterations"] = optimizer.iterations.numpy()
    return out


def _resume_matches(tmp_path, make_optimizer, backend, compiled=None):
    batches = _batches(7)
    model, optimizer, step = _trainer(0, make_optimizer, backend)
    manager = gc.train.CheckpointManager(gc.train.Checkpoint(model=model, optimizer=optimizer),
                                         tmp_path, max_to_keep=1)
    for x, y in batches[:4]:
        step(x, y)
    manager.save()
    losses = [step(x, y).numpy() for x, y in batches[4:]]
    expected = _state(model, optimizer)

    # a fresh process would do this: build from scratch (other initial values), restore
    model2, optimizer2, step2 = _trainer(123, make_optimizer, backend)
    status = gc.train.Checkpoint(model=model2, optimizer=optimizer2).restore(
        gc.train.latest_checkpoint(tmp_path))
    status.assert_existing_objects_matched()      # slots and counter still to come
    with compiled.expect() if compiled else _nothing():
        losses2 = [step2(x, y).numpy() for x, y in batches[4:]]
    status.assert_consumed()                     # the first step made and filled them
    got = _state(model2, optimizer2)
    assert list(got) == list(expected) and int(got["iterations"]) == 7
    for key in expected:
        assert got[key].tobytes() == expected[key].tobytes(), key
    assert [a.tobytes() for a in losses2] == [a.tobytes() for a in losses]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_resume_is_bit_for_bit_numpy_backend(tmp_path, name):
    _resume_matches(tmp_path, OPTIMIZERS[name], "numpy")


@pytest.mark.parametrize("name", ["momentum", "adam"])
def test_resume_is_bit_for_bit_numba_backend(tmp_path, name, numba_forced):
    _resume_matches(tmp_path, OPTIMIZERS[name], "numba", compiled=numba_forced)


def test_eager_resume_with_slots_restored_on_creation(tmp_path):
    model, opt = MLP(0), gc.optimizers.Adam(0.1)
    grads = [np.ones(v.shape, np.float32) for v in model.trainable_variables]
    opt.apply_gradients(zip(grads, model.trainable_variables))
    path = gc.train.Checkpoint(m=model, o=opt).save(tmp_path / "c")
    model2, opt2 = MLP(0), gc.optimizers.Adam(0.1)
    gc.train.Checkpoint(m=model2, o=opt2).restore(path).assert_existing_objects_matched()
    assert int(opt2.iterations) == 1           # made on first access, restored at once
    opt.apply_gradients(zip(grads, model.trainable_variables))
    opt2.apply_gradients(zip(grads, model2.trainable_variables))
    for a, b in zip(model.variables, model2.variables):
        assert a.numpy().tobytes() == b.numpy().tobytes()
