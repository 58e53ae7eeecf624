"""Corpus: Python values inside tensor loops, deep nesting, loop-carried nests, super()."""
import numpy as np

import graphc as gc
from .corpus_base import case, f32, i32, V3, V5, M23



# -- Python values inside tensor loops, mixed nesting --------------------------------------
@case((V5, i32(5), True), (V5, i32(5), False))
def python_branch_in_tensor_loop(x, n, square):
    s = 0.0
    for i in range(n):
        if square:
            s = s + x[i] * x[i]
        else:
            s = s + x[i]
    return s


@case((V5, i32(4)),)
def python_list_index_in_loop(x, n):
    weights = [1.0, 2.0]
    s = 0.0
    for i in range(n):
        s = s + x[i] * weights[0] + weights[1]
    return s


@case((i32(4), i32(3)), (i32(2), i32(5)))
def nested_tensor_loops(n, m):
    total = 0
    for i in range(n):
        for j in range(m):
            total = total + i * j
    return total


@case((i32(5),),)
def while_in_for(n):
    total = 0
    for i in range(n):
        j = i
        while j > 0:
            total = total + 1
            j = j - 2
    return total


@case((i32(4),),)
def for_in_while(n):
    total = 0
    k = 0
    while k < n:
        for i in range(k):
            total = total + i
        k = k + 1
    return total


@case((V5,), (V3,))
def if_in_while_in_if(x):
    s = 0.0
    if x[0] > 0:
        i = 0
        while i < 3:
            if x[i] > 0:
                s = s + x[i]
            else:
                s = s - 1.0
            i += 1
    else:
        s = -100.0
    return s


@case((V5,), (V3,))
def loop_with_ternary(x):
    s = 0.0
    for v in x:
        s = s + (v * 2.0 if v > 0 else v)
    return s


@case((V5,), (V3,))
def loop_with_and(x):
    c = 0
    for v in x:
        if v > 0 and v < 3.0:
            c = c + 1
    return c


@case((V5,), (V3,))
def loop_max_and_argmax(x):
    best = x[0]
    idx = 0
    for i in range(1, 3):
        if x[i] > best:
            best = x[i]
            idx = i
    return best, idx


@case((f32(0.3),), (f32(0.9),))
def newton_sqrt(a):
    x = a
    for _ in range(6):
        x = 0.5 * (x + a / x)
    return x


@case((f32(2.0), i32(5)), (f32(0.5), i32(3)))
def power_loop(base, n):
    r = base * 0.0 + 1.0
    i = 0
    while i < n:
        r = r * base
        i = i + 1
    return r


@case((i32(10),), (i32(1),))
def fib(n):
    a = 0
    b = 1
    for _ in range(n):
        a, b = b, a + b
    return a


@case((i32(12), i32(18)), (i32(7), i32(5)))
def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


@case((i32(17),), (i32(15),))
def is_prime(n):
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


@case((V5,),)
def vector_state_loop(x):
    acc = x * 0.0
    for i in range(3):
        acc = acc + x * float(i)
    return acc


@case((V5, i32(3)),)
def vector_state_tensor_loop(x, n):
    acc = x * 0.0
    for i in range(n):
        acc = acc + x
    return acc


@case((M23,),)
def matrix_rows_if(m):
    out = m[0] * 0.0
    for row in m:
        if row[0] > 0:
            out = out + row
        else:
            out = out - row
    return out


@case((f32(1.0),), (f32(-1.0),))
def assert_passes(x):
    assert x * x >= 0, "square is negative"
    return x + 1.0


@case((f32(2.0), 3), (f32(-2.0), 2))
def python_loop_tensor_if(x, k):
    y = x
    for i in range(k):
        if y > 0:
            y = y - 1.0
        else:
            y = y + 0.5
    return y


@case((f32(2.0),), (f32(-2.0),))
def reassign_in_both_with_different_ops(x):
    if x > 0:
        y = gc.exp(x * 0.0) if isinstance(x, gc.Tensor) else np.exp(x * 0.0)
    else:
        y = x * 0.0 + 1.0
    return y


@case((V5, i32(5)), (V3, i32(3)))
def count_sign_changes(x, n):
    changes = 0
    prev = x[0]
    for i in range(1, n):
        if (x[i] > 0) != (prev > 0):
            changes += 1
        prev = x[i]
    return changes


@case((V5,), (V3,))
def cumulative_positive(x):
    total = 0.0
    steps = 0
    for v in x:
        steps += 1
        if v <= 0:
            continue
        total += v
        if total > 4.0:
            break
    return total, steps


@case((i32(6),), (i32(3),))
def triangle_with_early_exit(n):
    s = 0
    i = 0
    while True:
        if i >= n:
            break
        s = s + i
        i = i + 1
    return s


@case((f32(5.0),), (f32(-5.0),))
def augmented_assignments(x):
    y = x
    y += 1.0
    y *= 2.0
    if y > 0:
        y -= 3.0
    else:
        y /= 2.0
    return y


@case((f32(2.0), f32(3.0)), (f32(3.0), f32(2.0)))
def swap_if_greater(a, b):
    if a > b:
        a, b = b, a
    return a, b


@case((f32(1.0),), (f32(-1.0),))
def return_none_branchless(x):
    y = x * 2.0
    if x > 5.0:
        y = y + 1.0
    return y


@case((V5, i32(5)), (V3, i32(3)))
def first_index_above_mean(x, n):
    mean = 0.0
    for i in range(n):
        mean = mean + x[i]
    mean = mean / 5.0
    for i in range(n):
        if x[i] > mean:
            return i
    return n


@case((f32(1.5),), (f32(-1.5),))
def deep_nesting(x):
    r = 0.0
    if x > 0:
        for i in range(2):
            if x > 1.0:
                j = 0
                while j < 2:
                    r = r + x
                    j += 1
            else:
                r = r - 1.0
    else:
        r = x
    return r


@case((V5,),)
def tensor_array_collect(x):
    ta = gc.TensorArray(gc.float32, size=5)
    i = 0
    for v in gc.convert_to_tensor(x):
        ta = ta.write(i, v * 2.0)
        i += 1
    return ta.stack()


@case((i32(4),),)
def gc_range_sum_squares(n):
    s = 0
    for i in gc.range(n):
        s += i * i
    return s


@case((f32(4.0),), (f32(-4.0),))
def not_in_ternary(x):
    return x if not x < 0 else -x


@case((V5,), (V3,))
def nested_break_outer_flag(x):
    found = 0.0
    for i in range(3):
        for j in range(3):
            if x[i] * x[j] < -5.0:
                found = x[i] * x[j]
                break
        if found < 0:
            break
    return found


@case((f32(2.0),), (f32(-2.0),))
def default_arg_helper(x):
    return _with_default(x) + _with_default(x, 10.0)


def _with_default(v, k=1.0):
    if v > 0:
        return v * k
    return v


@case((f32(3.0),), (f32(-3.0),))
def kwargs_helper(x):
    return _kw_only(x, scale=2.0)


def _kw_only(v, *, scale):
    return v * scale if v > 0 else v


class _Base:
    def transform(self, x):
        return x + 1.0


class _Child(_Base):
    def transform(self, x):
        if x > 0:
            return super().transform(x) * 2.0
        return super().transform(x)


_CHILD = _Child()


@case((f32(1.0),), (f32(-5.0),))
def method_with_super(x):
    return _CHILD.transform(x)


@case((f32(2.0),), (f32(-2.0),))
def lambdas_in_python_loop(x):
    fs = [lambda v, i=i: v * i if v > 0 else v - i for i in range(3)]
    s = x * 0.0
    for fn in fs:
        s = s + fn(x)
    return s


@case((V5, i32(5)), (V3, i32(2)))
def assert_in_loop(x, n):
    s = 0.0
    for i in range(n):
        assert x[i] > -10.0, "value out of range"
        s = s + x[i]
    return s


@case((V5,), (V3,))
def while_with_ternary_test(x):
    i = 0
    s = 0.0
    while (x[i] > 0 if i < 2 else False) or i < 1:
        s = s + x[i]
        i += 1
    return s, i


@case((f32(1.5), i32(3)), (f32(-1.0), i32(0)))
def dict_loop_variable(x, n):
    state = {"a": x, "b": x * 0.0}
    for i in range(n):
        state = {"a": state["a"] * 2.0, "b": state["b"] + state["a"]}
    return state["a"], state["b"]


@case((f32(1.5), i32(3)), (f32(-1.0), i32(1)))
def tuple_loop_variable(x, n):
    pair = (x, x + 1.0)
    i = 0
    while i < n:
        pair = (pair[1], pair[0] + pair[1])
        i += 1
    return pair


@case((f32(2.0),), (f32(-2.0),))
def enumerate_python_list(x):
    total = x * 0.0
    for i, w in enumerate([0.5, 1.5, -1.0]):
        if x * w > 0:
            total = total + x * w * i
    return total


@case((V5, V5), (V3, V3))
def zip_python_and_tensor_rows(x, y):
    s = 0.0
    for a, b in zip([0, 1, 2], [2, 1, 0]):
        s = s + (x[a] if x[a] > y[b] else y[b])
    return s
