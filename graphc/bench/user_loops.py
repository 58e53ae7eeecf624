"""The loop workloads as a user writes them: plain Python `while`/`for`/`if` on tensors.

AutoGraph never converts graphc's own modules, so `workloads.py` loads this file as a
separate top-level module (`graphc_bench_user_loops`): its functions are converted exactly
as functions in the user's own file would be.
"""
import graphc as gc


def scalar_loop(n):
    """`s += i * i % 7` for i below n, on int32 scalars."""
    s = gc.constant(0)
    i = gc.constant(0)
    while i < n:
        s += i * i % 7
        i += 1
    return s


def branchy_loop(x):
    """A data-dependent branch per element, inside `for i in gc.range(n)`."""
    acc = gc.constant(0.0)
    for i in gc.range(gc.size(x)):
        if x[i] > 0:
            acc += x[i] ** 2
        else:
            acc -= x[i]
    return acc
