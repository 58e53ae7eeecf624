"""An optimizer's learning rate is a float32 Variable (Keras 3), so changing it reaches
compiled train steps; schedules and callables are evaluated on every update. Expected
values marked TF's were printed by TF 2.21 / Keras 3.15 for the same code."""
import numpy as np
import pytest

import graphc as gc
from graphc.runtime.graph import walk

OPTIMIZERS = {"sgd": lambda lr: gc.optimizers.SGD(lr),
              "momentum": lambda lr: gc.optimizers.SGD(lr, momentum=0.9),
              "nesterov": lambda lr: gc.optimizers.SGD(lr, momentum=0.9, nesterov=True),
              "adam": lambda lr: gc.optimizers.Adam(lr)}


def _step(w, opt):
    def step():
        with gc.GradientTape() as t:
            loss = gc.reduce_sum(w * w * 2.0)
        opt.apply_gradients([(t.gradient(loss, w), w)])
    return step


def test_setting_the_rate_reaches_a_compiled_step():
    w = gc.Variable(1.0)
    opt = gc.optimizers.SGD(0.1)

    @gc.function
    def step():
        with gc.GradientTape() as t:
            loss = w * 2.0
        opt.apply_gradients([(t.gradient(loss, w), w)])
    step()
    opt.learning_rate = 1.0
    step()
    assert float(w.numpy()) == np.float32(-1.2)      # TF's: 1 - 0.1*2 - 1.0*2
    assert step.tracing_count == 2                   # iterations made in the first trace


# TF's w after the rate changes below (Keras 3 optimizers in a tf.function step)
TF_AFTER = {"sgd": [0.50399995, -1.0079999, 0.25199997],
            "momentum": [4.84326, -9.68652, 2.42163],
            "nesterov": [2.0175881, -4.0351763, 1.0087941],
            "adam": [-1.4204528, 0.7710804, -0.53612715]}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_steps_follow_rate_changes_as_eagerly(name):
    results = []
    for compiled in (False, True):
        w = gc.Variable(np.array([1.0, -2.0, 0.5], np.float32))
        opt = OPTIMIZERS[name](0.1)
        step = _step(w, opt)
        step = gc.function(step) if compiled else step
        for lr in [0.1, 0.1, 0.5, gc.constant(0.0), gc.Variable(0.2), 2.0]:
            before = w.numpy()
            opt.learning_rate = lr
            step()
            if name == "sgd" and float(opt.learning_rate.numpy()) == 0.0:
                np.testing.assert_array_equal(w.numpy(), before)    # not 0.1's step
        results.append(w.numpy())
        assert int(opt.iterations.numpy()) == 6
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    np.testing.assert_allclose(results[1], TF_AFTER[name], rtol=1e-6)


def test_the_rate_is_a_float32_nontrainable_variable_read_by_the_graph():
    opt = gc.optimizers.SGD(0.1)
    lr = opt.learning_rate
    assert isinstance(lr, gc.Variable) and lr.dtype == gc.float32 and lr.shape == ()
    assert lr.trainable is False and lr.name == "SGD/learning_rate:0"
    assert lr.numpy() == np.float32(0.1)
    lr.assign(0.5)                                  # assigning the Variable works, as TF
    assert opt.learning_rate is lr and float(lr.numpy()) == 0.5
    opt.learning_rate = gc.constant(0.25, gc.float64)   # cast to float32, as Keras
    assert lr.dtype == gc.float32 and float(lr.numpy()) == 0.25
    opt.learning_rate = np.float64(0.125)
    assert float(lr.numpy()) == 0.125
    w = gc.Variable([1.0, 2.0])
    step = gc.function(_step(w, opt))
    step()
    graph = step.get_concrete_function().graph
    captured = {id(src): v for v, src in graph.captures}
    reads = [op for op in walk(graph) if op.type == "read_variable"]
    assert any(op.inputs[0] is captured[id(lr)] for op in reads)   # read, not baked in
    assert [v.name for v in opt.variables] == ["SGD/iterations:0", "SGD/learning_rate:0"]
    adam = gc.optimizers.Adam(0.1)
    adam.apply_gradients([(gc.constant([1.0, 1.0]), w)])
    assert [v.name.split("/")[-1] for v in adam.variables] == [   # Keras 3's order
        "iterations:0", "learning_rate:0", "m:0", "v:0"]


def test_a_float64_model_gets_the_float32_rate_as_tf():
    w64 = gc.Variable(1.0, dtype=gc.float64)
    opt = gc.optimizers.SGD(0.1)
    opt.apply_gradients([(gc.constant(1.0, gc.float64), w64)])
    assert float(w64.numpy()) == 0.8999999985098839        # TF's
    for rate in (lambda: 0.1, gc.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5)):
        w64.assign(1.0)       # a callable's Python float and a schedule: the same, as TF
        gc.optimizers.SGD(rate).apply_gradients([(gc.constant(1.0, gc.float64), w64)])
        assert float(w64.numpy()) == 0.8999999985098839    # TF's
    # TF rounds SGD's momentum and Adam's betas (in the bias correction) through float32
    # too: TF's w64 after two steps with gradient 1 (Adam 0.5), as in TF
    for make, grad, steps, expect in [
            (lambda: gc.optimizers.SGD(0.1, momentum=0.9), 1.0, 2, 0.7099999980628491),
            (lambda: gc.optimizers.SGD(0.1, momentum=0.9, nesterov=True), 1.0, 2,
             0.5390000021904708),
            (lambda: gc.optimizers.Adam(0.1), 1.0, 1, 0.9000009823084878),
            (lambda: gc.optimizers.Adam(0.1, beta_1=0.8, beta_2=0.99, epsilon=1e-3), 0.5, 2,
             0.8033588067465038)]:
        w64.assign(1.0)
        opt64 = make()
        for _ in range(steps):
            opt64.apply_gradients([(gc.constant(grad, gc.float64), w64)])
        assert float(w64.numpy()) == expect
    w = gc.Variable(np.float32(1.0))
    opt.apply_gradients([(gc.constant(1.0), w)])           # float32 unchanged: 1 - 0.1
    assert w.numpy() == np.float32(1.0) - np.float32(0.1)


def test_setter_and_constructor_errors():
    opt = gc.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="learning_rate must be >= 0"):
        opt.learning_rate = -1.0
    assert opt.learning_rate.numpy() == np.float32(0.1)
    for bad in ("0.1", None, True, [0.1, 0.2]):
        with pytest.raises(ValueError, match="`learning_rate` should be a float"):
            gc.optimizers.SGD(bad)
    with pytest.raises(ValueError, match="must be a float scalar"):
        gc.optimizers.SGD(gc.Variable([0.1, 0.2]))


def test_a_callable_rate_is_called_on_every_update():
    calls = []

    def rate():
        calls.append(1)
        return 0.1
    opt = gc.optimizers.SGD(rate)
    assert opt.learning_rate == 0.1 and len(calls) == 1    # Keras 3: the property calls it
    assert [v.name for v in opt.variables] == ["SGD/iterations:0"]    # no rate Variable
    w = gc.Variable(1.0)
    opt.apply_gradients([(gc.constant(1.0), w)])
    assert float(w.numpy()) == np.float32(0.9) and len(calls) == 2     # TF's w: 0.9
    with pytest.raises(TypeError, match="learning rate is a callable"):
        opt.learning_rate = 0.5


def test_setting_a_callable_replaces_the_variable():
    opt = gc.optimizers.SGD(0.1)
    opt.learning_rate = lambda: 0.5
    assert opt.learning_rate == 0.5
    assert [v.name for v in opt.variables] == ["SGD/iterations:0"]    # untracked, as Keras
    w = gc.Variable(1.0)
    opt.apply_gradients([(gc.constant(1.0), w)])
    assert float(w.numpy()) == 0.5


@pytest.mark.parametrize("compiled", [False, True])
def test_exponential_decay_follows_the_iteration_count(compiled):
    sched = gc.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5)
    opt = gc.optimizers.SGD(sched)
    w = gc.Variable(1.0)

    def step():
        opt.apply_gradients([(gc.constant(1.0), w)])
    step = gc.function(step) if compiled else step
    got = []
    for _ in range(3):
        step()
        got.append((w.numpy(), opt.learning_rate.numpy()))
    # TF's, printed as float32: w after each step and the rate for the next one
    expect = [(0.9, 0.07071068), (0.8292893, 0.05), (0.7792893, 0.03535534)]
    np.testing.assert_allclose(np.array(got, np.float32), np.array(expect, np.float32),
                               rtol=1e-7)
    with pytest.raises(TypeError, match="learning rate is a `LearningRateSchedule`"):
        opt.learning_rate = 0.5


def test_exponential_decay_staircase_and_errors():
    sched = gc.optimizers.schedules.ExponentialDecay(0.1, 3, 0.5, staircase=True)
    for step in range(7):       # float32 as Keras: 0.1 * 0.5 ** floor(step / 3)
        expect = np.float32(0.1) * np.float32(0.5) ** np.floor(np.float32(step) / 3)
        assert sched(gc.constant(step, gc.int64)).numpy() == np.float32(expect)
    assert sched.get_config() == {"initial_learning_rate": 0.1, "decay_steps": 3,
                                  "decay_rate": 0.5, "staircase": True,
                                  "name": "ExponentialDecay"}
    with pytest.raises(ValueError, match="`decay_steps` must be > 0"):
        gc.optimizers.schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(NotImplementedError, match="must override `__call__"):
        gc.optimizers.SGD(gc.optimizers.schedules.LearningRateSchedule()).learning_rate


@pytest.mark.parametrize("compiled", [False, True])
def test_setting_the_rate_inside_a_compiled_step_is_an_assignment(compiled):
    w = gc.Variable(1.0)
    opt = gc.optimizers.SGD(0.5)

    def step():
        opt.apply_gradients([(gc.constant(1.0), w)])
        opt.learning_rate = opt.learning_rate * 0.5     # halves the Variable on every call
    step = gc.function(step) if compiled else step
    for _ in range(3):
        step()
    assert float(w.numpy()) == 1.0 - 0.5 - 0.25 - 0.125
    assert float(opt.learning_rate.numpy()) == 0.0625
