"""The differential corpus: small functions with control flow, each with argument sets.

Every function runs in plain Python on numpy values and through @gc.function on tensors
(numpy arguments become tensors, Python arguments stay Python); results must match.
"""
import numpy as np

import graphc as gc

CORPUS = []


def case(*arg_sets):
    def deco(fn):
        CORPUS.append((fn, arg_sets))
        return fn
    return deco


f32 = np.float32
i32 = np.int32
V3 = np.array([1.5, -2.0, 3.0], np.float32)
V5 = np.array([0.5, 2.0, -1.0, 4.0, -3.0], np.float32)
M23 = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
I4 = np.array([3, -1, 4, -5], np.int32)


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


@case((f32(1.0), f32(2.0), f32(3.0)), (f32(1.0), f32(-2.0), f32(3.0)))
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


# -- return anywhere -------------------------------------------------------------------
@case((f32(2.0),), (f32(-2.0),))
def early_return(x):
    if x < 0:
        return x * 0.0
    return x * x


@case((f32(2.0),), (f32(-2.0),), (f32(0.5),))
def return_in_elif(x):
    if x > 1.0:
        return 1.0
    elif x < -1.0:
        return -1.0
    return x


@case((V5,), (V3,))
def return_in_loop(x):
    for v in x:
        if v < 0:
            return v
    return x[0] * 0.0 + 99.0


@case((V5, i32(5)), (V3, i32(3)))
def return_index_in_loop(x, n):
    for i in range(n):
        if x[i] > 2.5:
            return i
    return -1


@case((i32(3),), (i32(10),))
def return_in_while(n):
    i = 0
    while i < 20:
        if i * i >= n:
            return i
        i += 1
    return -1


@case((M23, f32(4.5)), (M23, f32(100.0)))
def return_from_nested_loops(m, t):
    for row in m:
        for v in row:
            if v > t:
                return v
    return t


@case((f32(1.0),), (f32(-1.0),))
def return_both_branches(x):
    if x > 0:
        return x + 1.0
    else:
        return x - 1.0


@case((f32(1.0),), (f32(-1.0),))
def return_tuple_early(x):
    if x > 0:
        return x, x * 2.0
    return -x, x


@case((f32(3.0),), (f32(-3.0),))
def return_after_loop_python(x):
    for k in range(3):
        if x > k:
            return x - k
    return x


# -- helpers, closures, lambdas, methods -----------------------------------------------
def _clip_positive(v):
    if v < 0:
        return v * 0.0
    return v


def _count_down(n):
    c = 0
    while n > 0:
        n = n - 1
        c = c + 2
    return c


@case((f32(2.0),), (f32(-2.0),))
def call_helper(x):
    return _clip_positive(x) + 1.0


@case((i32(3),), (i32(0),))
def call_helper_loop(n):
    return _count_down(n) + 1


@case((V5,), (V3,))
def helper_in_loop(x):
    s = 0.0
    for v in x:
        s = s + _clip_positive(v)
    return s


@case((f32(2.0),), (f32(-2.0),))
def nested_function(x):
    def inner(v):
        if v > 0:
            return v * 3.0
        return v
    return inner(x) + inner(-x)


@case((f32(2.0), f32(1.0)), (f32(-2.0), f32(1.0)))
def closure_reads_outer(x, scale):
    def scaled(v):
        if v > 0:
            return v * scale
        return v / scale
    return scaled(x)


@case((f32(2.0),), (f32(-2.0),))
def lambda_ternary(x):
    f = lambda v: v * 2.0 if v > 0 else v * -2.0  # noqa: E731
    return f(x)


@case((f32(2.0),), (f32(-2.0),))
def recursive_helper_call(x):
    return _clip_positive(_clip_positive(x) - 1.0)


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        if x > 0:
            return x * self.k
        return x

    def __call__(self, x):
        y = x
        for _ in range(2):
            y = self.apply(y)
        return y


_SCALER = Scaler(3.0)


@case((f32(2.0),), (f32(-2.0),))
def method_call(x):
    return _SCALER.apply(x)


@case((f32(2.0),), (f32(-2.0),))
def callable_object(x):
    return _SCALER(x)


def _make_adder(k):
    def add(v):
        if v > 0:
            return v + k
        return v - k
    return add


_ADD5 = _make_adder(5.0)


@case((f32(1.0),), (f32(-1.0),))
def call_closure_factory(x):
    return _ADD5(x)


def _abs_sum(x):
    s = 0.0
    for v in x:
        s = s + (v if v > 0 else -v)
    return s


@case((V5,), (V3,))
def helper_with_loop_and_ternary(x):
    return _abs_sum(x)


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
