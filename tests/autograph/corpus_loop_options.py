"""Corpus: loops whose state changes shape under gc.autograph.experimental.set_loop_options
(TF's directive). Eagerly the directive does nothing, so these programs use only
`shape_invariants` and bounds the loop never reaches; tests/autograph/test_loop_options.py
checks a binding maximum_iterations against TF's values."""
import numpy as np

import graphc as gc
from graphc.autograph.experimental import set_loop_options
from .corpus_base import case, f32, i32, V3, V5, M23

slo = gc.autograph.experimental.set_loop_options
V2 = np.array([2.0, 3.0], np.float32)


@case((i32(4),), (i32(0),), (i32(1),))
def grow_range(n):
    acc = gc.constant([7])
    for i in gc.range(n):
        gc.autograph.experimental.set_loop_options(shape_invariants=[(acc, [None])],
                                                   maximum_iterations=100)
        acc = gc.concat([acc, [i * i]], 0)
    return acc


@case((f32(1.0), i32(5)), (f32(3.0), i32(1)))
def grow_while_tensor_test(x, n):
    v = gc.reshape(x, [1])
    while gc.size(v) < n:
        set_loop_options(shape_invariants=[(v, (None,))])
        v = gc.concat([v, v[-1:] * 2.0], 0)
    return v, gc.reduce_sum(v)


@case((M23, i32(3)), (M23, i32(0)))
def grow_rows(m, n):
    rows = m
    total = 0.0
    for _ in gc.range(n):
        slo(shape_invariants=[(rows, [None, 3])], parallel_iterations=4, swap_memory=True)
        rows = gc.concat([rows, rows[:1] + 1.0], 0)
        total += gc.reduce_sum(rows)
    return rows, total


@case((V5,), (V3,))
def collect_positives(x):
    out = gc.zeros([0])
    for v in x:
        slo(shape_invariants=[(out, [None])])
        if v > 0:
            out = gc.concat([out, gc.reshape(v, [1])], 0)
    return out


@case((V5, f32(1.0)), (V3, f32(10.0)))
def collect_until_break(x, limit):
    out = gc.zeros([0])
    for v in x:
        slo(shape_invariants=[(out, [None])])
        if gc.reduce_sum(out) > limit:
            break
        out = gc.concat([out, gc.reshape(v, [1])], 0)
    return out


class _Growing:
    def __init__(self):
        self.seen = gc.zeros([0], gc.int32)


def _grower():
    return _Growing()


def _attr_and_item(n, g):
    d = {"log": gc.zeros([1, 0])}
    for i in gc.range(n):
        slo(shape_invariants=[(g.seen, [None]), (d["log"], [1, None])])
        g.seen = gc.concat([g.seen, [i]], 0)
        d["log"] = gc.concat([d["log"], gc.ones([1, 1])], 1)
    return g.seen, d["log"]


@case((i32(3),), (i32(0),))
def grow_attr_and_item(n):
    return _attr_and_item(n, _grower())


@case((i32(3),), (i32(1),))
def grow_nested_state(n):
    pair = (gc.zeros([1]), gc.constant(0))
    for i in gc.range(n):
        slo(shape_invariants=[(pair, ([None], []))])
        pair = (gc.concat([pair[0], gc.cast(gc.reshape(i, [1]), gc.float32)], 0), pair[1] + i)
    return pair


@case((i32(4),), (i32(2),))
def grow_inner_loop(n):
    total = 0
    lengths = gc.zeros([0], gc.int32)
    for i in gc.range(n):
        slo(shape_invariants=[(lengths, [None])])
        row = gc.zeros([0], gc.int32)
        for j in gc.range(i):
            slo(shape_invariants=[(row, [None])])
            row = gc.concat([row, [j]], 0)
        total += gc.reduce_sum(row)
        lengths = gc.concat([lengths, [gc.size(row)]], 0)
    return total, lengths


@case((V2, i32(3)))
def grow_python_loop(x, n):
    # range of a Python number stays a Python loop: the directive has no effect there
    acc = x
    for _ in range(3):
        slo(shape_invariants=[(acc, [None])], maximum_iterations=1)
        acc = gc.concat([acc, acc[-1:] + 1.0], 0)
    for _ in gc.range(n):
        slo(shape_invariants=[(acc, [None])])
        acc = gc.concat([acc, acc[:1]], 0)
    return acc


@case((i32(3),), (i32(0),))
def grow_list_item(n):
    a = [gc.zeros([0]), 0]
    for _ in gc.range(n):
        slo(shape_invariants=[(a[0], [None])])
        a[0] = gc.concat([a[0], gc.ones([1])], 0)
        a[1] += 1
    return a[0], a[1]
