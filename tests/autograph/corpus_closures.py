"""Corpus: closures that read names a converted loop or branch changes (item 2 of issue 11),
and names first defined inside a tensor loop, used after it (item 3).

A lambda or nested def defined before a tensor loop/branch sees the current value of the
names it reads, as in Python: the value of the current iteration, Python values and
tensors alike (a default argument, in contrast, keeps the value it was defined with).
"""
import graphc as gc
from .corpus_base import case, f32, i32, V3, V5, M23
from .corpus_attrs import Box


# -- closures (item 2) -----------------------------------------------------------------
@case((i32(3),), (i32(0),), (i32(1),))
def closure_ticks(n):
    # the example: Python gives 60 for n=3
    k = 1
    look = lambda: k * 10  # noqa: E731
    out = 0
    while k <= n:
        out = out + look()
        k += 1
    return out


@case((f32(1.0), i32(3)), (f32(-2.0), i32(2)), (f32(1.0), i32(0)))
def nested_def_reads_tensor_loop_state(x, n):
    s = x

    def scaled():
        return s * 0.5
    out = 0.0
    for i in range(n):
        out = out + scaled()
        s = s + 1.0
    return out, s


@case((f32(1.0),), (f32(40.0),))
def lambda_in_while_condition_state(x):
    y = x
    twice = lambda: y * 2.0  # noqa: E731
    steps = 0
    while twice() < 50.0:
        y = y + 3.0
        steps += 1
    return y, steps


@case((V5, i32(4)), (V3, i32(3)))
def closure_reads_loop_target(x, n):
    i = 0
    pick = lambda: x[i]  # noqa: E731
    s = 0.0
    for i in range(n):
        s = s + pick() * 2.0
    return s


@case((f32(2.0),), (f32(-2.0),))
def closure_sees_value_after_if(x):
    y = x
    triple = lambda: y * 3.0  # noqa: E731
    if x > 0:
        y = x + 1.0
    return triple()


@case((f32(2.0),), (f32(-2.0),))
def closure_called_inside_branch(x):
    y = x

    def show():
        return y + 100.0
    if x > 0:
        y = x * 5.0
        r = show()
    else:
        y = x * 7.0
        r = show() - 1.0
    return r


@case((V5, i32(5)), (V3, i32(3)))
def closure_called_in_tensor_if_in_loop(x, n):
    best = x[0]
    gap = lambda v: v - best  # noqa: E731
    total = 0.0
    for i in range(n):
        if gap(x[i]) > 0:
            total = total + gap(x[i])
            best = x[i]
    return best, total


@case((i32(4),), (i32(0),))
def nested_def_with_own_loop_reads_outer_state(n):
    m = 0

    def tri():
        t = 0
        for j in range(m + 1):
            t = t + j
        return t
    acc = 0
    while m < n:
        m += 1
        acc = acc + tri()
    return acc


@case((V5,), (V3,))
def closure_reads_dict_item_changed_in_loop(x):
    d = {"k": 1.0}
    look = lambda: d["k"] * 2.0  # noqa: E731
    out = 0.0
    for v in x:
        out = out + look()
        d["k"] = d["k"] + v
    return out


@case((V5,), (V3,))
def closure_reads_attribute_changed_in_loop(x):
    o = Box(level=0.0)

    def above(v):
        return v > o.level
    count = 0
    for v in x:
        if above(v):
            count += 1
            o.level = v
    return count, o.level


@case((i32(3),), (i32(0),))
def default_argument_keeps_definition_value(n):
    k = 1
    frozen = lambda k=k: k * 10  # noqa: E731
    live = lambda: k * 10  # noqa: E731
    out = 0
    while k <= n:
        out = out + frozen() * 100 + live()
        k += 1
    return out


@case((f32(1.0), i32(3)), (f32(0.5), i32(1)))
def two_closures_over_two_names(x, n):
    a = x
    b = x * 0.0
    fa = lambda: a + b  # noqa: E731

    def fb():
        return a * 2.0 - b
    acc = 0.0
    for i in range(n):
        acc = acc + fa() + fb()
        a, b = b + 1.0, a
    return acc


# -- names first defined in a tensor loop (item 3) -------------------------------------
@case((V5,), (V3,))
def loop_defined_last_value(x):
    for v in x:
        last = v * 2.0
    return last


@case((i32(5),), (i32(1),))
def while_defined_name(n):
    i = 0
    while i < n:
        sq = i * i
        i += 1
    return sq, i


@case((V5, i32(4)), (V3, i32(2)))
def loop_defined_in_both_branches(x, n):
    for i in range(n):
        if x[i] > 0:
            sign = 1
        else:
            sign = -1
    return sign


@case((V5,), (V3,))
def loop_defined_before_break(x):
    for v in x:
        seen = v
        if v < 0:
            break
    return seen


@case((V5,), (V3,))
def loop_defined_before_continue(x):
    total = 0.0
    for v in x:
        doubled = v + v
        if v < 0:
            continue
        total = total + doubled
    return total, doubled


@case((M23,),)
def nested_loop_defined_names(m):
    for row in m:
        for v in row:
            inner = v
        outer = inner * 10.0
    return inner, outer


@case((V5, i32(4)), (V3, i32(1)))
def loop_defined_tuple_unpack(x, n):
    for i in range(n):
        lo, hi = x[i] - 1.0, x[i] + 1.0
    return lo, hi


@case((i32(4),), (i32(2),))
def gc_range_defined_name(n):
    for i in gc.range(n):
        cube = i * i * i
    return cube


@case((V5, i32(5)), (V3, i32(3)))
def loop_defined_and_used_inside_and_after(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] * 0.5
        s = s + t
    return s, t
