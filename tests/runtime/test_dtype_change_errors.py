"""A loop variable changing dtype, or a tensor `if` giving one variable two dtypes, raises
gc.errors.DtypeChangeError: a ValueError as API.md says and a TypeError as TF raises, naming
the variable and the user's line, converted or written with gc.while_loop / gc.cond."""
import re

import pytest

import graphc as gc
from graphc.errors import DtypeChangeError, GraphcError

HERE = __file__


def converted_loop(n):
    s = gc.constant(0)
    i = 0
    while i < n:  # loop-line
        s = gc.cast(s, gc.float32) + 1.0
        i += 1
    return s


def converted_if(x):
    if x > 0:  # if-line
        y = x
    else:
        y = gc.cast(x, gc.int32)
    return y


def line(marker):
    with open(HERE) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}"))


CASES = [
    (converted_loop, gc.constant(3), "'s' enters the loop as int32[]", "loop-line"),
    (converted_if, gc.constant(1.0), "'y' is float32[] in the true branch but int32[]",
     "if-line"),
    (lambda n: gc.while_loop(lambda i: i < n, lambda i: gc.cast(i, gc.float32), [0]),
     gc.constant(3), "enters the loop as int32[] but the body makes it float32[]", None),
    (lambda x: gc.cond(x > 0, lambda: x, lambda: gc.cast(x, gc.int32)), gc.constant(1.0),
     "float32[] in the true branch but int32[] in the false branch", None),
]


@pytest.mark.parametrize("fn,arg,match,marker", CASES)
def test_dtype_changes_are_value_and_type_errors(fn, arg, match, marker):
    for expected in (ValueError, TypeError, DtypeChangeError, GraphcError):
        with pytest.raises(expected, match=re.escape(match)) as e:
            gc.function(fn)(arg)
    if marker:
        assert f"{HERE}:{line(marker)}" in str(e.value)
