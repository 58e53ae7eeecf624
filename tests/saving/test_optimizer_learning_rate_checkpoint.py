"""Checkpoints save an optimizer's learning rate Variable (TF's `_learning_rate` beside
`_iterations`) and restore it, also into compiled steps traced before; a checkpoint from
graphc before the rate was a Variable (data/optimizer_before_lr) still restores the rest."""
import os
import warnings

import numpy as np
import pytest

import graphc as gc
from graphc.train import checkpoint_format as fmt

from .data_files import DATA, maker_module

OLD = os.path.join(DATA, "optimizer_before_lr", "ckpt")


def test_the_rate_is_saved_and_restored_into_a_traced_step(tmp_path):
    w = gc.Variable(1.0)
    opt = gc.optimizers.SGD(0.1)
    opt.learning_rate = 0.5
    opt.iterations.assign(3)
    path = gc.train.Checkpoint(w=w, opt=opt).save(tmp_path / "c")
    assert {"opt/learning_rate", "opt/iterations"} <= set(fmt.read_tensors(path))

    w2 = gc.Variable(1.0)
    opt2 = gc.optimizers.SGD(0.1)

    @gc.function
    def step():
        opt2.apply_gradients([(gc.constant(1.0), w2)])
    step()                                              # traced with the rate at 0.1
    assert float(w2.numpy()) == np.float32(0.9)
    gc.train.Checkpoint(w=w2, opt=opt2).restore(path).assert_consumed()
    assert float(opt2.learning_rate.numpy()) == 0.5 and int(opt2.iterations.numpy()) == 3
    step()
    assert float(w2.numpy()) == 0.5                     # 1.0 restored, minus the restored 0.5


def test_a_checkpoint_from_before_the_rate_variable_restores(tmp_path):
    mk = maker_module("make_optimizer_before_lr")
    saved = fmt.read_tensors(OLD)
    assert "adam/iterations" in saved and not any("learning_rate" in k for k in saved)
    m1, m2, adam, sgd = mk.build()
    ckpt = gc.train.Checkpoint(m1=m1, m2=m2, adam=adam, sgd=sgd)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # every saved value has its object
        status = ckpt.restore(OLD)
    # the rates keep the values the optimizers were built with; as TF, only the
    # objects that got no value are reported
    assert float(adam.learning_rate.numpy()) == np.float32(0.1)
    assert float(sgd.learning_rate.numpy()) == np.float32(0.05)
    with pytest.raises(AssertionError, match="2 object") as err:
        status.assert_existing_objects_matched()
    assert "adam/learning_rate" in str(err.value) and "sgd/learning_rate" in str(err.value)
    status.assert_nontrivial_match()
    # training on continues as if it never stopped: today's graphc running the same steps
    # (float32 throughout, so the rate Variable changes no bits)
    r1, r2, radam, rsgd = mk.build()
    for step in range(4):
        if step == 3:
            assert int(adam.iterations.numpy()) == 3
            adam.apply_gradients(zip(mk.grads(step), [m1.w, m1.b]))
            sgd.apply_gradients(zip(mk.grads(step), [m2.w, m2.b]))
        radam.apply_gradients(zip(mk.grads(step), [r1.w, r1.b]))
        rsgd.apply_gradients(zip(mk.grads(step), [r2.w, r2.b]))
    for a, b in zip([*m1.variables, *m2.variables, *adam.variables, *sgd.variables],
                    [*r1.variables, *r2.variables, *radam.variables, *rsgd.variables]):
        assert a.numpy().tobytes() == b.numpy().tobytes(), a.name
