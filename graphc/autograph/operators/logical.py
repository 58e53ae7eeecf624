"""`and`, `or`, `not`: Python semantics on Python values, lazy graph logic on tensors."""
from ... import dtypes as _dt
from ...runtime import control_flow
from ...runtime.dispatch import bind, convert_to_tensor
from ...runtime.tensor import Tensor, is_symbolic


def not_(value):
    """`not value`: logical_not for a tensor, Python `not` otherwise."""
    if type(value) is Tensor or is_symbolic(value):
        t = convert_to_tensor(value)
        if t.dtype is _dt.bool_:
            return bind("logical_not", t)
        if t.is_symbolic:      # Python truthiness of a number: equal to zero
            return bind("equal", t, convert_to_tensor(0, t.dtype))
    return not value


def and_(*thunks):
    """`a and b and ...` with each operand a thunk: evaluated left to right, stopping at the
    first false one. A symbolic operand makes the rest run inside a `cond` branch."""
    return _chain(thunks, is_and=True)


def or_(*thunks):
    """`a or b or ...` with each operand a thunk, stopping at the first true one."""
    return _chain(thunks, is_and=False)


def _chain(thunks, is_and):
    value = thunks[0]()
    for i, nxt in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            rest = thunks[i:]
            cond = convert_to_tensor(value)

            def more(rest=rest):
                return convert_to_tensor(_chain(rest, is_and))
            if is_and:
                return control_flow.cond(cond, more, lambda: cond, _names=["and"])
            return control_flow.cond(cond, lambda: cond, more, _names=["or"])
        if (not value) if is_and else value:
            return value
        value = nxt()
    return value
