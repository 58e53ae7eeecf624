"""gc.debugging: run-time checks, as TF 2.21's tf.debugging.check_numerics and
assert_equal / assert_less / assert_greater.

Both are effectful graph ops (kept and run in order even when nothing uses them) that raise
gc.errors.InvalidArgumentError when they run on bad values: eagerly at once, in a compiled
function when it runs, with the user's file:line appended by the graph's runner as for
every run-time error. An assert whose operands are both known while tracing is decided
then, as TF's (InvalidArgumentError at the call).
"""
import numpy as np

from .errors import InvalidArgumentError
from .runtime import context
from .runtime.context import located_errors
from .runtime.dispatch import bind, convert_like, convert_to_tensor
from .runtime.ops._rules import FLOAT, broadcast_shapes, check_kind, same_dtype
from .runtime.registry import register, IO, OPAQUE
from .runtime.static_value import static_value


# -- check_numerics ---------------------------------------------------------------------
def _numerics_infer(types, message):
    check_kind("check_numerics", types[0], FLOAT, "tensor")
    return [types[0]]


def _numerics_impl(x, message):
    for test, what in ((np.isnan, "NaN"), (np.isinf, "Inf")):
        if test(x).any():               # TF's words
            raise InvalidArgumentError(f"{message} : Tensor had {what} values")
    return x


register("check_numerics", _numerics_infer, _numerics_impl, kind=OPAQUE, effectful=True,
         vjp=lambda gs, outs, ins, message: [bind(
             "check_numerics", gs[0], message="Not a number (NaN) or infinity (Inf) values "
             f"detected in gradient. {message}")])


def check_numerics(tensor, message, name=None):
    """`tensor` itself, after checking it holds no NaN or inf (else InvalidArgumentError
    "<message> : Tensor had NaN values"); its gradient is checked the same way, as TF's."""
    x = convert_to_tensor(tensor)
    if not isinstance(message, str):
        raise TypeError(f"check_numerics: message must be a string, got {message!r}")
    return bind("check_numerics", x, message=message)


# -- assert_equal / assert_less / assert_greater ----------------------------------------
_RELATIONS = {"equal": ("==", np.equal), "less": ("<", np.less), "greater": (">", np.greater)}


def _compare_infer(types, relation, message, summarize):
    x, y = types
    same_dtype(f"assert_{relation}", types)
    broadcast_shapes(f"assert_{relation}", x.shape, y.shape)
    return []


def _first(v, n):
    return np.array2string(np.asarray(v).ravel()[:n], separator=" ")


def _compare_impl(x, y, relation, message, summarize):
    sign, test = _RELATIONS[relation]
    try:
        ok = test(x, y)
    except ValueError as e:
        raise InvalidArgumentError(f"assert_{relation}: {e}") from None
    if ok.all():
        return ()
    n = summarize
    text = (message + " " if message else "") + f"Condition x {sign} y did not hold."
    if relation == "equal" and np.shape(x) == np.shape(y):
        bad = np.argwhere(~ok)[:n]
        text += (f" Indices of first {len(bad)} different values: {bad.tolist()} "
                 f"Corresponding x values: {_first(np.asarray(x)[tuple(bad.T)], n)} "
                 f"Corresponding y values: {_first(np.asarray(y)[tuple(bad.T)], n)}")
    text += (f" First {min(n, np.size(x))} elements of x: {_first(x, n)} First "
             f"{min(n, np.size(y))} elements of y: {_first(y, n)}")
    raise InvalidArgumentError(text)


register("assert_compare", _compare_infer, _compare_impl, kind=IO, effectful=True,
         nondiff=True)


def _assert(relation):
    op = f"assert_{relation}"

    def fn(x, y, message=None, summarize=None, name=None):
        a, b = convert_like([x, y], op)
        n = 3 if summarize is None else int(summarize)
        text = "" if message is None else str(message)
        same_dtype(op, [a.type, b.type])
        broadcast_shapes(op, a.shape, b.shape)
        known = static_value(a), static_value(b)
        if all(k is not None for k in known):   # eagerly, or known while tracing (as TF)
            try:
                _compare_impl(known[0], known[1], relation, text, n)
            except InvalidArgumentError as e:   # no runner to add the location: add it here
                raise InvalidArgumentError(
                    f"{e} at {context.format_location(context.user_site())}") from None
            return None
        bind("assert_compare", a, b, relation=relation, message=text, summarize=n)
        return None
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"Raise InvalidArgumentError unless x {_RELATIONS[relation][0]} y holds "
                  f"for every element (broadcast; empty passes), as tf.debugging.{op}: "
                  "eagerly at once, in a compiled function when it runs.")
    return located_errors(fn)


check_numerics = located_errors(check_numerics)
assert_equal = _assert("equal")
assert_less = _assert("less")
assert_greater = _assert("greater")

__all__ = ["check_numerics", "assert_equal", "assert_less", "assert_greater"]
