"""The rest of tf.summary's surface a TF user reaches for: record_if (a tensor condition
read on each call of a compiled function), should_record_summaries, experimental.set_step,
set_as_default(step=...), writer.init() and text tables. Expected values are TF 2.21's."""
import numpy as np
import pytest

import graphc as gc
from .events import load, scalars, values


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_record_if_with_a_tensor_condition_in_a_compiled_function(tmp_path, backend):
    w = gc.summary.create_file_writer(tmp_path)
    step = gc.Variable(np.int64(0))

    @gc.function(backend=backend)
    def f(x):
        with gc.summary.record_if(lambda: step % 2 == 0):
            gc.summary.scalar("even", x, step=step)
        with gc.summary.record_if(False):                 # a Python bool: at trace time
            gc.summary.scalar("never", x, step=step)
        gc.summary.scalar("always", x, step=step)
        step.assign_add(np.int64(1))
        return x

    with w.as_default():
        for i in range(5):
            f(gc.constant(float(i)))
    w.close()
    ea = load(tmp_path)
    assert scalars(ea, "even") == [(0, 0.0), (2, 2.0), (4, 4.0)]
    assert [s for s, _ in scalars(ea, "always")] == [0, 1, 2, 3, 4]
    assert "never" not in ea.Tags()["tensors"]


def test_record_if_eagerly_and_should_record_summaries(tmp_path):
    w = gc.summary.create_file_writer(tmp_path)
    assert gc.summary.should_record_summaries() is True      # TF: True, writer or not
    with w.as_default():
        with gc.summary.record_if(False):
            assert gc.summary.should_record_summaries() is False
            assert gc.summary.scalar("a", 1.0, step=1) is False
        with gc.summary.record_if(lambda: gc.constant(True)):
            assert gc.summary.scalar("b", 2.0, step=1) is True
        with pytest.raises(ValueError, match="scalar bool"):
            with gc.summary.record_if(gc.constant([True, False])):
                gc.summary.scalar("c", 3.0, step=1)
    w.close()
    ea = load(tmp_path)
    assert "a" not in ea.Tags()["tensors"] and scalars(ea, "b") == [(1, 2.0)]


def test_default_step_spellings(tmp_path):
    w = gc.summary.create_file_writer(tmp_path)
    assert w.init() is None
    gc.summary.experimental.set_step(3)
    try:
        assert gc.summary.experimental.get_step() == 3 and gc.summary.get_step() == 3
        with w.as_default():
            gc.summary.scalar("a", 1.0)
        w.set_as_default(step=4)
        gc.summary.scalar("b", 2.0)
    finally:
        gc.summary.experimental.set_step(None)
        w.close()
    ea = load(tmp_path)
    assert scalars(ea, "a") == [(3, 1.0)] and scalars(ea, "b") == [(4, 2.0)]


def test_text_list_is_a_string_tensor_as_tf(tmp_path):
    w = gc.summary.create_file_writer(tmp_path)
    with w.as_default():
        assert gc.summary.text("table", [["a", "b"], ["c", "d"]], step=1) is True
        assert gc.summary.text("row", ("x", b"y"), step=1) is True
        with pytest.raises(TypeError, match="str or a list of them"):
            gc.summary.text("bad", [1, 2], step=1)
    w.close()
    ea = load(tmp_path)
    assert values(ea, "table")[0][1].tolist() == [[b"a", b"b"], [b"c", b"d"]]
    assert values(ea, "row")[0][1].tolist() == [b"x", b"y"]
