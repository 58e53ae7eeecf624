"""Axis, perm and shape arguments given as tensors, as TF takes them: a value known while
tracing (a constant, or computed from constants and static shapes) is used as the Python
value would be, on every backend; one known only when the graph runs (a function argument)
is a TypeError at the user's line that says how to fix it -- never a different answer."""
import numpy as np
import pytest

import graphc as gc
from op_helpers import assert_same

X = np.arange(6, dtype=np.float32).reshape(2, 3)
X3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
C = gc.constant

# name -> (fn of x with a tensor argument, the same with a Python argument)
KNOWN = {
    "reduce_sum": (lambda x: gc.reduce_sum(x, axis=C(1)), lambda x: gc.reduce_sum(x, axis=1)),
    "reduce_sum_vector": (lambda x: gc.reduce_sum(x, axis=C([0, 2])),
                          lambda x: gc.reduce_sum(x, axis=[0, 2])),
    "reduce_mean": (lambda x: gc.reduce_mean(x, C(-1), keepdims=True),
                    lambda x: gc.reduce_mean(x, -1, keepdims=True)),
    "reduce_logsumexp": (lambda x: gc.reduce_logsumexp(x, C(0)),
                         lambda x: gc.reduce_logsumexp(x, 0)),
    "reduce_max_mixed_list": (lambda x: gc.reduce_max(x, [C(0), 1]),
                              lambda x: gc.reduce_max(x, [0, 1])),
    "transpose": (lambda x: gc.transpose(x, perm=C([1, 0, 2])),
                  lambda x: gc.transpose(x, perm=[1, 0, 2])),
    "transpose_computed": (lambda x: gc.transpose(x, perm=gc.range(gc.rank(x))[::-1]),
                           lambda x: gc.transpose(x)),
    "expand_dims": (lambda x: gc.expand_dims(x, C(0)), lambda x: gc.expand_dims(x, 0)),
    "expand_dims_vector": (lambda x: gc.expand_dims(x, C([-1])),
                           lambda x: gc.expand_dims(x, -1)),
    "squeeze": (lambda x: gc.squeeze(x[:1], C(0)), lambda x: gc.squeeze(x[:1], 0)),
    "concat": (lambda x: gc.concat([x, x], C(2)), lambda x: gc.concat([x, x], 2)),
    "stack": (lambda x: gc.stack([x, x], C(1)), lambda x: gc.stack([x, x], 1)),
    "unstack": (lambda x: gc.unstack(x, axis=C(2))[3], lambda x: gc.unstack(x, axis=2)[3]),
    "argmax": (lambda x: gc.argmax(x, C(1)), lambda x: gc.argmax(x, 1)),
    "argmin_from_shape": (lambda x: gc.argmin(x, gc.size(gc.shape(x)) - 1),
                          lambda x: gc.argmin(x, 2)),
    "cumsum": (lambda x: gc.cumsum(x, C(1)), lambda x: gc.cumsum(x, 1)),
    "gather": (lambda x: gc.gather(x, [2, 0], axis=C(1)), lambda x: gc.gather(x, [2, 0], axis=1)),
    "softmax": (lambda x: gc.nn.softmax(x, axis=C(0)), lambda x: gc.nn.softmax(x, axis=0)),
    "one_hot": (lambda x: gc.one_hot(gc.argmax(x, 2), 4, axis=C(1)),
                lambda x: gc.one_hot(gc.argmax(x, 2), 4, axis=1)),
    "boolean_mask": (lambda x: gc.boolean_mask(x, [True, False, True], axis=C(1)),
                     lambda x: gc.boolean_mask(x, [True, False, True], axis=1)),
    "reshape": (lambda x: gc.reshape(x, C([4, -1])), lambda x: gc.reshape(x, [4, -1])),
    "reshape_from_shape": (lambda x: gc.reshape(x, gc.shape(x)[::-1]),
                           lambda x: gc.reshape(x, [4, 3, 2])),
    "broadcast_to": (lambda x: gc.broadcast_to(x, C([2, 2, 3, 4])),
                     lambda x: gc.broadcast_to(x, [2, 2, 3, 4])),
}


@pytest.mark.parametrize("backend", ["numpy", "auto"])
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_a_tensor_known_while_tracing_acts_as_the_python_value(name, backend):
    with_tensor, with_python = KNOWN[name]
    want = with_python(C(X3))
    assert_same(with_tensor(C(X3)), want.numpy())                   # eagerly
    f = gc.function(with_tensor, backend=backend)
    assert_same(f(X3), want.numpy())
    # the static shape is as precise as with the Python value (TF's constant_value)
    g = gc.function(with_python, backend="numpy")
    assert f.get_concrete_function(X3).outputs[0].shape == \
        g.get_concrete_function(X3).outputs[0].shape


RUN_TIME = {
    "reduce_sum": (lambda x, a: gc.reduce_sum(x, axis=a), "reduce_sum: axis"),
    "reduce_sum_vector": (lambda x, a: gc.reduce_sum(x, axis=gc.stack([a])), "reduce_sum: axis"),
    "reduce_mean": (lambda x, a: gc.reduce_mean(x, a), "reduce_mean: axis"),
    "transpose": (lambda x, a: gc.transpose(x, gc.stack([a, 1 - a])), "transpose: perm"),
    "transpose_entry": (lambda x, a: gc.transpose(x, [a, 0]), "transpose: perm entry"),
    "expand_dims": (lambda x, a: gc.expand_dims(x, a), "expand_dims: axis"),
    "concat": (lambda x, a: gc.concat([x, x], a), "concat: axis"),
    "stack": (lambda x, a: gc.stack([x, x], a), "stack: axis"),
    "argmax": (lambda x, a: gc.argmax(x, a), "argmax: axis"),
    "cumsum": (lambda x, a: gc.cumsum(x, a), "cumsum: axis"),
    "gather": (lambda x, a: gc.gather(x, [0], axis=a), "gather: axis"),
    "softmax": (lambda x, a: gc.nn.softmax(x, axis=a), "softmax: axis"),
    "squeeze": (lambda x, a: gc.squeeze(x[None], a - 1), "squeeze: axis"),
}


@pytest.mark.parametrize("name", sorted(RUN_TIME))
def test_a_run_time_axis_is_a_clear_error_at_the_users_line(name):
    fn, words = RUN_TIME[name]
    assert fn(C(X), C(1)).shape is not None                     # eagerly it works, as in TF
    with pytest.raises(TypeError) as e:
        gc.function(fn, backend="numpy")(X, C(1))
    msg = str(e.value)
    assert msg.startswith(words) and "must be known while tracing" in msg, msg
    assert "pass a Python int" in msg and "part of the signature" in msg
    assert "test_tensor_axes.py" in msg                         # the line of the op call


def test_the_fix_the_error_suggests_works():
    f = gc.function(lambda x, a: gc.reduce_sum(x, axis=a), backend="numpy")
    for a in (0, 1):                                            # a Python int: one trace each
        np.testing.assert_array_equal(f(X, a).numpy(), X.sum(axis=a))
    assert f.tracing_count == 2


def test_other_bad_tensor_axes_keep_their_errors():
    with pytest.raises(TypeError, match="axis must be a Python int"):
        gc.reduce_sum(C(X), axis=C(1.0))
    with pytest.raises(ValueError, match="axis 5 is out of range"):
        gc.function(lambda x: gc.reduce_sum(x, axis=C(5)), backend="numpy")(X)
    with pytest.raises(ValueError, match="not a permutation"):
        gc.function(lambda x: gc.transpose(x, C([0, 0])), backend="numpy")(X)
