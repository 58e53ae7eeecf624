"""`assert` on tensors: a graph op that raises InvalidArgumentError when it runs."""
import numpy as np

from ...errors import InvalidArgumentError
from ...runtime import context
from ...runtime.dispatch import bind, convert_to_tensor
from ...runtime.registry import register, IO
from ...runtime.tensor import Tensor


def _assert_infer(types, message):
    if types[0].dtype.name != "bool":
        raise TypeError(f"assert: the condition must be a bool tensor, got {types[0]}; compare "
                        "it first (e.g. `assert x > 0`)")
    if tuple(types[0].shape) != () and context.current_graph() is not None:
        # Python's `assert t` on more than one element raises ("truth value ... is
        # ambiguous"); TF's Assert wants a scalar. Reducing silently would pass a program
        # that fails in Python. (Eagerly the op still raises on any false element.)
        raise TypeError(f"assert: the condition must be a scalar bool tensor, got {types[0]} "
                        "(Python's assert on a tensor of several elements raises: its truth "
                        "value is ambiguous); reduce it first: `assert gc.reduce_all(x > 0)`")
    return []


def _assert_impl(condition, message):
    if not np.all(condition):
        raise InvalidArgumentError(message)   # a graph's runner appends the user's line


register("assert", _assert_infer, _assert_impl, kind=IO, effectful=True, nondiff=True)


def assert_(condition, message=None):
    """`assert condition, message`: Python's assert on Python values; on a tensor an
    `assert` op that raises gc.errors.InvalidArgumentError (with `message`, ending
    with the user's file:line and function) whenever it runs with a false element."""
    if type(condition) is not Tensor and not hasattr(condition, "_as_tensor"):
        if not condition:
            raise AssertionError(*(() if message is None else (message(),)))
        return None
    text = "" if message is None else message()
    if type(text) is Tensor:
        text = "<tensor message>" if text.is_symbolic else str(text.numpy())
    full = "assertion failed" + (f": {text}" if text != "" else "")
    if context.current_graph() is None:       # eager: no runner to add the location
        full += f" at {context.format_location(context.user_site())}"
    bind("assert", convert_to_tensor(condition), message=full)
    return None
