"""Corpus: while and for loops (ranges, tensor axes), break and continue."""
import graphc as gc
from .corpus_base import case, f32, i32, V3, V5, M23, I4


# -- while -------------------------------------------------------------------------------
@case((f32(1.0),), (f32(50.0),))
def while_double(x):
    while x < 100.0:
        x = x * 2.0
    return x


@case((i32(5),), (i32(0),))
def while_count(n):
    i = 0
    s = 0
    while i < n:
        s = s + i * i
        i = i + 1
    return s


@case((i32(27),), (i32(1),))
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


@case((i32(10),))
def while_python_bound(n):
    i = 0
    total = n
    while i < 4:
        total = total + i
        i += 1
    return total


@case((f32(3.0), f32(0.5)), (f32(10.0), f32(2.0)))
def while_two_vars(a, b):
    while a > b:
        a = a - b
        b = b * 1.5
    return a, b


# -- for over ranges ---------------------------------------------------------------------
@case((V3, i32(3)), (V5, i32(2)), (V5, i32(0)))
def for_range_tensor(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i]
    return s


@case((i32(6),), (i32(1),))
def for_gc_range(n):
    acc = 1
    for i in gc.range(1, n):
        acc = acc * i
    return acc


@case((V3,), (V5,))
def for_python_range_unrolled(x):
    s = 0.0
    for i in range(3):
        if x[i] > 0:
            s = s + x[i]
    return s


@case((i32(10),), (i32(3),))
def for_range_step(n):
    s = 0
    for i in range(0, n, 3):
        s = s + i
    return s


@case((i32(7),))
def for_range_negative_step(n):
    s = 0
    for i in range(n, 0, -2):
        s = s * 2 + i
    return s


@case((V5, i32(5)), (V3, i32(3)))
def for_range_if_inside(x, n):
    pos = 0.0
    neg = 0.0
    for i in range(n):
        if x[i] > 0:
            pos = pos + x[i]
        else:
            neg = neg + x[i]
    return pos, neg


# -- for over a tensor's first axis --------------------------------------------------------
@case((V3,), (V5,))
def for_over_vector(x):
    s = 0.0
    for v in x:
        s = s + v * v
    return s


@case((M23,),)
def for_over_rows(m):
    acc = m[0] * 0.0
    for row in m:
        acc = acc + row
    return acc


@case((I4,),)
def for_over_ints_count(x):
    count = 0
    for v in x:
        if v > 0:
            count += 1
    return count


@case((M23,),)
def for_rows_max(m):
    best = m[0][0]
    for row in m:
        for v in row:
            if v > best:
                best = v
    return best


# -- break / continue --------------------------------------------------------------------
@case((V5, i32(5)), (V3, i32(3)))
def break_on_negative(x, n):
    s = 0.0
    for i in range(n):
        if x[i] < 0:
            break
        s = s + x[i]
    return s


@case((V5, i32(5)), (V3, i32(3)))
def continue_on_negative(x, n):
    s = 0.0
    for i in range(n):
        if x[i] < 0:
            continue
        s = s + x[i]
    return s


@case((V5,), (V3,))
def break_and_continue(x):
    s = 0.0
    for v in x:
        if v < -2.5:
            break
        if v < 0:
            continue
        s = s + v
    return s


@case((f32(1.0),), (f32(3.0),))
def while_break(x):
    i = 0
    while i < 100:
        x = x * 2.0
        i += 1
        if x > 20.0:
            break
    return x, i


@case((i32(4),), (i32(2),))
def break_inner_loop(n):
    total = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            total = total + j
    return total


@case((i32(5),),)
def continue_nested(n):
    total = 0
    for i in range(n):
        for j in range(n):
            if (i + j) % 2 == 0:
                continue
            total = total + i * j
    return total


@case((V5,), (V3,))
def while_else_no_break(x):
    i = 0
    s = 0.0
    while i < 3:
        s = s + x[i]
        i += 1
    else:
        s = s * 10.0
    return s


@case((V5,), (V3,))
def for_else_with_break(x):
    s = 0.0
    for i in range(3):
        if x[i] > 2.5:
            break
        s = s + x[i]
    else:
        s = s - 100.0
    return s


@case((i32(9),), (i32(4),))
def break_python_loop_tensor_cond(n):
    s = 0
    for i in range(6):
        if i * i > n:
            break
        s = s + i
    return s
