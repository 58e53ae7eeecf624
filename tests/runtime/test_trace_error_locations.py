"""Bad arguments caught by an op's own checks (not only by its type rule) name the user's
line while tracing, for the ops, gc.nn and gc.random alike; eager errors are unchanged."""
import numpy as np
import pytest

import graphc as gc

HERE = __file__

CASES = {   # one line each: the error must name this line
    "tensordot": lambda x: gc.tensordot(x, x, 3),
    "stack": lambda x: gc.stack([x, x[0]]),
    "reduce_sum": lambda x: gc.reduce_sum(x, 5),
    "argmax": lambda x: gc.argmax(x, 5),
    "cumsum": lambda x: gc.cumsum(x, 3),
    "unstack": lambda x: gc.unstack(x, axis=3),
    "expand_dims": lambda x: gc.expand_dims(x, 5),
    "one_hot": lambda x: gc.one_hot(x, 3),
    "range": lambda x: gc.range(0, 1, 0),
    "zeros": lambda x: gc.zeros([-1]),
    "eye": lambda x: gc.eye(-1),
    "cast": lambda x: gc.cast(x, "float16"),
    "softmax": lambda x: gc.nn.softmax(x, axis=4),
    "cross_entropy": lambda x: gc.nn.softmax_cross_entropy_with_logits(labels=x[:, :2],
                                                                       logits=x),
    "random": lambda x: gc.random.normal([-1]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trace_time_argument_errors_name_the_user_line(name):
    fn = CASES[name]
    x = gc.constant(np.zeros((2, 3), np.float32))
    with pytest.raises((TypeError, ValueError)) as eager:
        fn(x)
    assert "while tracing" not in str(eager.value)
    with pytest.raises(type(eager.value)) as traced:
        gc.function(fn, backend="numpy")(x)
    message = str(traced.value)
    assert message.startswith(str(eager.value))            # same error, same words
    assert message.count("(while tracing") == 1
    assert f"{HERE}:{fn.__code__.co_firstlineno}" in message


def test_errors_from_type_rules_keep_one_location():
    f = gc.function(lambda x: gc.reshape(x, [5]), backend="numpy")
    with pytest.raises(ValueError, match=r"into shape \[5\]") as e:
        f(gc.constant(np.zeros((2, 3), np.float32)))
    assert str(e.value).count("(while tracing") == 1


def test_wrapped_ops_keep_their_names_and_docs():
    assert gc.reduce_sum.__name__ == "reduce_sum" and "axis" in (gc.reduce_sum.__doc__ or "")
    assert gc.nn.softmax.__name__ == "softmax" and gc.random.normal.__name__ == "normal"
