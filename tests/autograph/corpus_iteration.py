"""Corpus: iteration helpers over tensors (item 5 of issue 11) and TensorArray as the state
of tensor loops and branches (item 6).

`enumerate(t)`, `enumerate(t, start)`, `zip(t1, t2, ...)` (stopping at the shortest),
`enumerate(zip(...))`, `zip(range(n), t)`, `enumerate(range(lo, n))` with tensor bounds,
`enumerate(ta)`, `reversed(gc.range(n))`; `ta.write(i, v)` with and without
reassignment, in loops and branches; `ta.gather([0, k])` with a tensor in the list.
"""
import numpy as np

import graphc as gc
from .corpus_base import case, f32, i32, V3, V5, I4

I5 = np.array([1, 2, 0, -3, 5], np.int32)
W3 = np.array([3.0, 4.0, 6.0], np.float32)


# -- enumerate / zip / reversed (item 5) -------------------------------------------------
@case((V5,), (V3,))
def enumerate_tensor(x):
    pos_idx = 0
    s = 0.0
    for i, v in enumerate(x):
        if v > 0:
            pos_idx += i
            s = s + v
    return pos_idx, s


@case((V5,), (V3,))
def enumerate_tensor_with_start(x):
    acc = 0
    for i, v in enumerate(x, 1):
        if v < 0:
            acc = acc * 10 + i
    return acc


@case((V5, V5), (V3, W3))
def zip_two_tensors(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b
    return s


@case((V5, V3, I4), (V3, W3, I4))
def zip_three_tensors_shortest(x, y, k):
    s = 0.0
    n = 0
    for a, b, c in zip(x, y, k):
        n += 1
        if c > 0:
            s = s + a - b
    return s, n


@case((V5, V5 * 0.5), (V3, W3))
def enumerate_zip(x, y):
    last = -1
    for i, (a, b) in enumerate(zip(x, y)):
        if a > b:
            last = i
    return last


@case((V5, i32(3)), (V3, i32(7)), (V3, i32(0)))
def zip_tensor_range_and_tensor(x, n):
    s = 0.0
    idx = 0
    for i, v in zip(range(n), x):
        s = s + v * 0.5
        idx = idx + i
    return s, idx


@case((i32(2), i32(6)), (i32(3), i32(3)))
def enumerate_tensor_range(lo, n):
    s = 0
    for k, i in enumerate(range(lo, n)):
        s = s + k * i
    return s


@case((V5,), (V3,))
def enumerate_tensor_break(x):
    first_neg = -1
    for i, v in enumerate(x):
        if v < 0:
            first_neg = i
            break
    return first_neg


@case((i32(4),), (i32(1),), (i32(0),))
def reversed_gc_range(n):
    digits = 0
    for i in reversed(gc.range(n)):
        digits = digits * 10 + i
    return digits


@case((V5, i32(5)), (V5, i32(3)), (V3, i32(2)))
def reversed_gc_range_return(x, n):
    for i in reversed(gc.range(n)):
        if x[i] > 1.0:
            return i
    return -1


@case((V3,), (W3,))
def enumerate_tensor_array(x):
    ta = gc.TensorArray(gc.float32, size=3)
    for i in range(3):
        ta = ta.write(i, x[i] * 2.0)
    s = 0.0
    idx = 0
    for i, v in enumerate(ta):
        if v > 0:
            s = s + v
            idx = idx + i
    return s, idx


# -- TensorArray as state (item 6) ----------------------------------------------------------
@case((V5, i32(5)), (V3, i32(2)))
def ta_bare_write_in_for(x, n):
    ta = gc.TensorArray(gc.float32, size=n)
    for i in range(n):
        ta.write(i, x[i] + 1.0)
    return ta.stack()


@case((f32(1.0),), (f32(10.0),))
def ta_reassigned_in_while(x):
    ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
    i = 0
    v = x
    while v < 50.0:
        ta = ta.write(i, v)
        v = v * 3.0
        i += 1
    return ta.stack(), i


@case((V5,),)
def ta_bare_write_in_branch_python_loop(x):
    ta = gc.TensorArray(gc.float32, size=5)
    for i in range(5):
        if x[i] > 0:
            ta.write(i, x[i])
        else:
            ta.write(i, -x[i] * 10.0)
    return ta.stack()


@case((V5, i32(5)), (V3, i32(3)))
def ta_bare_write_in_branch_tensor_loop(x, n):
    ta = gc.TensorArray(gc.float32, size=n)
    for i in range(n):
        if x[i] > 0:
            ta.write(i, x[i])
        else:
            ta = ta.write(i, x[i] * 0.5)
    return ta.stack()


@case((V5, i32(3)), (V5, i32(4)))
def ta_gather_list_with_tensor(x, k):
    ta = gc.TensorArray(gc.float32, size=5)
    for i in range(5):
        ta = ta.write(i, x[i] * 2.0)
    return ta.gather([0, k])


@case((f32(2.0),), (f32(-2.0),))
def ta_bare_write_in_if(x):
    ta = gc.TensorArray(gc.float32, size=2)
    ta.write(0, x)
    if x > 0:
        ta.write(1, x * 2.0)
    else:
        ta.write(1, -x)
    return ta.stack()


@case((V5, i32(5)), (V3, i32(2)))
def ta_prefix_sums(x, n):
    ta = gc.TensorArray(gc.float32, size=n)
    ta = ta.write(0, x[0])
    for i in range(1, n):
        ta = ta.write(i, ta.read(i - 1) + x[i])
    return ta.stack()


@case((V5,), (V3,))
def ta_two_arrays_mixed_style(x):
    pos = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
    neg = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
    n_pos = 0
    n_neg = 0
    for v in x:
        if v > 0:
            pos = pos.write(n_pos, v)
            n_pos += 1
        else:
            neg.write(n_neg, v)
            n_neg += 1
    return pos.stack(), neg.stack()


@case((I5,),)
def ta_write_then_break(x):
    ta = gc.TensorArray(gc.int32, size=0, dynamic_size=True)
    i = 0
    while i < 5:
        if x[i] < 0:
            break
        ta.write(i, i * i)
        i += 1
    return ta.stack(), ta.size()


@case((V5, i32(4)), (V3, i32(3)))
def ta_bare_write_read_in_same_loop(x, n):
    ta = gc.TensorArray(gc.float32, size=n)
    s = 0.0
    for i in range(n):
        ta.write(i, x[i] * x[i])
        s = s + ta.read(i)
    return ta.stack(), s
