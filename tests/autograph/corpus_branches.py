"""Corpus: if/elif/else, ternaries, and/or/not on tensors and Python values."""
import graphc as gc
from .corpus_base import case, f32, i32, V3, V5


# -- if / elif / else and ternary ----------------------------------------------------------
@case((f32(2.0),), (f32(-1.0),))
def if_else(x):
    if x > 0:
        y = x * 2.0
    else:
        y = -x
    return y


@case((f32(2.0),), (f32(-1.0),), (f32(0.0),))
def if_elif_else(x):
    if x > 1.0:
        y = x + 10.0
    elif x < 0.0:
        y = x - 10.0
    else:
        y = x * 0.5
    return y


@case((f32(3.0),), (f32(-3.0),))
def if_without_else(x):
    y = x
    if x < 0:
        y = -x
    return y


@case((f32(3.0), f32(1.0)), (f32(-3.0), f32(2.0)))
def if_two_outputs(x, y):
    if x > y:
        a, b = x, y
    else:
        a, b = y, x
    return a, b


@case((f32(1.0),), (f32(-1.0),))
def ternary(x):
    return x * 3.0 if x > 0 else x - 3.0


@case((f32(1.0),), (f32(-1.0),))
def ternary_nested(x):
    return 1.0 if x > 0.5 else (2.0 if x > -0.5 else 3.0)


@case((f32(2.0),), (f32(-2.0),), (f32(7.0),))
def nested_ifs(x):
    if x > 0:
        if x > 5:
            r = x * 100.0
        else:
            r = x * 10.0
    else:
        r = x
    return r


@case((f32(2.0), True), (f32(2.0), False), (f32(-2.0), True))
def python_flag_branch(x, flag):
    if flag:
        y = x + 1.0
    else:
        y = x - 1.0
    if y > 0:
        y = y * 2.0
    return y


@case((f32(1.0),), (f32(-1.0),))
def if_unused_temp(x):
    if x > 0:
        t = x * 2.0
        y = t + 1.0
    else:
        t = x * 3.0
        y = t - 1.0
    return y


@case((V3,), (V5,))
def if_on_reduction(x):
    if gc.reduce_sum(gc.convert_to_tensor(x)) > 0:
        return x * 2.0
    return x


# -- and / or / not --------------------------------------------------------------------
@case((f32(1.0), f32(2.0)), (f32(-1.0), f32(2.0)), (f32(1.0), f32(-2.0)))
def and_cond(x, y):
    if x > 0 and y > 0:
        return x + y
    return x - y


@case((f32(1.0), f32(-2.0)), (f32(-1.0), f32(-2.0)))
def or_cond(x, y):
    if x > 0 or y > 0:
        return x * y
    return x + y


@case((f32(1.0),), (f32(-1.0),))
def not_cond(x):
    if not x > 0:
        return -x
    return x


# no Python form: on Python values `ok` is a bool and the program returns a numpy scalar,
# which gc.function does not accept as a return value
@case((f32(1.0), f32(2.0), f32(3.0)), (f32(1.0), f32(-2.0), f32(3.0)), py=())
def and_chain(x, y, z):
    ok = x > 0 and y > 0 and z > 0
    return gc.cast(ok, gc.float32) if isinstance(ok, gc.Tensor) else f32(ok)


@case((f32(1.0), 0), (f32(-1.0), 3))
def python_and_tensor(x, k):
    if k > 1 and x < 0:
        return x * 5.0
    return x


@case((f32(2.0),), (f32(0.0),))
def lazy_and(x):
    # the right operand must not run when the left is false (division by zero)
    if x != 0 and 4.0 / x > 1.0:
        return x
    return x - 1.0


# -- `del` inside converted blocks (TF converts these; the generated branch/body function
# must unbind the enclosing variable, not a fresh local of its own)
@case((f32(2.0),), (f32(-1.0),))
def del_outer_in_branch(x):
    y = x * 2.0
    if x > 0:
        del y
    return x


@case((f32(2.0),), (f32(-1.0),))
def del_after_read_in_branch(x):
    y = x * 2.0
    if x > 0:
        w = y + 1.0
        del y
    else:
        w = x
    return w


@case((i32(3),), (i32(0),))
def del_outer_in_loop_branch(n):
    tmp = n
    i = 0
    while i < n:
        if i == 1:
            del tmp
            tmp = i
        i += 1
    return i


@case((i32(3),), (i32(1),))
def del_loop_state_then_rebind(n):
    y = 0
    s = 0
    for i in range(n):
        s += y
        del y
        y = i * 2
    return s, y
