"""`and`, `or`, `not`: Python semantics on Python values, lazy graph logic on tensors."""
import operator

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


def and_(value, *thunks):
    """`a and b and ...`: `value` is the first operand, each later one a thunk, evaluated
    left to right up to the first false one. A symbolic operand makes the rest run inside
    a `cond` branch."""
    return _chain(value, thunks, is_and=True)


def or_(value, *thunks):
    """`a or b or ...`, stopping at the first true operand."""
    return _chain(value, thunks, is_and=False)


_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
            "eq": operator.eq, "ne": operator.ne, "is_": operator.is_,
            "is_not": operator.is_not, "in_": lambda a, b: a in b,
            "not_in": lambda a, b: a not in b}


def compare(left, op, right, *rest):
    """`left op right op2 c ...` (a chained comparison), `rest` being (op, thunk) pairs:
    every operand is evaluated once, and none after the first false comparison; on
    tensors the comparisons join with a lazy logical and."""
    first = _COMPARE[op](left, right)
    previous = [right]

    def link(op, operand):
        def run():
            value = operand()
            result = _COMPARE[op](previous[0], value)
            previous[0] = value
            return result
        return run
    return _chain(first, [link(op, operand) for op, operand in rest], is_and=True)


def _chain(value, thunks, is_and):
    for i, nxt in enumerate(thunks):
        if is_symbolic(value):
            rest = thunks[i:]
            cond = convert_to_tensor(value)

            def more(rest=rest):
                return convert_to_tensor(_chain(rest[0](), rest[1:], is_and))
            if is_and:
                return control_flow.cond(cond, more, lambda: cond, _names=["and"])
            return control_flow.cond(cond, lambda: cond, more, _names=["or"])
        if (not value) if is_and else value:
            return value
        value = nxt()
    return value
