"""gc.TensorArray carried through while loops, conds and AutoGraph loops; graph passes."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.runtime.graph import walk

function = functools.partial(gc.function, autograph=False)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 6), st.lists(st.floats(-10, 10, width=32), min_size=2, max_size=2))
def test_while_loop_writes_with_symbolic_counter(n, x0):
    x = np.array(x0, np.float32)

    def build(x, n):
        ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True, element_shape=[2])

        def body(i, acc, ta):
            acc = acc * 0.5 + x
            return i + 1, acc, ta.write(i, acc)

        _, _, ta = gc.while_loop(lambda i, acc, ta: i < n, body, [0, gc.zeros([2]), ta])
        return ta.stack(), ta.size()

    traced = function(build)(gc.constant(x), gc.constant(n))
    eager = build(gc.constant(x), gc.constant(n))
    acc, rows = np.zeros(2, np.float32), []
    for _ in range(n):
        acc = acc * np.float32(0.5) + x
        rows.append(acc)
    want = np.stack(rows) if rows else np.zeros((0, 2), np.float32)
    for stacked, size in (traced, eager):
        np.testing.assert_allclose(stacked.numpy(), want, rtol=1e-6)
        assert int(size) == n


def test_element_shape_learned_in_loop_body_and_fresh_list_per_call():
    @function
    def f(x):
        ta = gc.TensorArray(gc.float32, size=3)   # element shape unknown until the body writes

        def body(i, ta):
            return i + 1, ta.write(i, x * gc.cast(i, gc.float32))
        _, ta = gc.while_loop(lambda i, ta: i < 3, body, (0, ta))
        return ta.stack(), ta.read(2), ta

    x = np.array([1.0, -2.0], np.float32)
    for _ in range(2):   # a second call must not see the first call's list
        stacked, last, returned = f(x)
        np.testing.assert_array_equal(stacked.numpy(), np.outer([0, 1, 2], x))
        np.testing.assert_array_equal(returned.numpy(), stacked.numpy())
        np.testing.assert_array_equal(last.numpy(), 2 * x)
    cf = f.get_concrete_function(x)
    assert cf.outputs[0].shape == (3, 2)      # static size and element shape survive the loop
    assert [op.type for op in cf.graph.operations].count("tensor_list_new") == 1


def test_tensor_array_through_cond_branches():
    @function
    def f(x, flag):
        ta = gc.TensorArray(gc.float32, size=2)
        ta = gc.cond(flag, lambda: ta.write(0, x).write(1, x + 1.0),
                     lambda: ta.write(0, -x).write(1, x * 3.0))
        return ta.stack()

    for flag, want in ((True, [[2, 3], [3, 4]]), (False, [[-2, -3], [6, 9]])):
        np.testing.assert_array_equal(f(np.array([2.0, 3.0], np.float32), flag).numpy(), want)
        np.testing.assert_array_equal(
            f(np.array([2.0, 3.0], np.float32), gc.constant(flag)).numpy(), want)


def test_read_inside_loop_of_previous_element():
    """Fibonacci through a TensorArray: the body reads what earlier iterations wrote."""
    def fib(n):
        ta = gc.TensorArray(gc.int64, size=0, dynamic_size=True, element_shape=[])
        ta = ta.write(0, np.int64(0)).write(1, np.int64(1))

        def body(i, ta):
            return i + 1, ta.write(i, ta.read(i - 1) + ta.read(i - 2))
        _, ta = gc.while_loop(lambda i, ta: i < n, body, [2, ta])
        return ta.stack()

    want = [0, 1]
    while len(want) < 12:
        want.append(want[-1] + want[-2])
    np.testing.assert_array_equal(function(fib)(gc.constant(12)).numpy(), want)
    np.testing.assert_array_equal(fib(gc.constant(12)).numpy(), want)


def test_optimized_graph_keeps_list_ops_and_agrees():
    from graphc.runtime.executor import run_graph
    from graphc.runtime.passes import optimize

    @function
    def f(x):
        ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True)

        def body(i, ta):
            ta = ta.write(i, x * 2.0)
            ta.size()                        # unused result: still a kept (effectful) op
            return i + 1, ta.write(i, x * 2.0)
        _, ta = gc.while_loop(lambda i, ta: i < 3, body, [0, ta])
        return ta.stack()

    x = np.array([1.0, 2.0], np.float32)
    graph = f.get_concrete_function(x).graph
    opt = optimize(graph)
    before = sorted(op.type for op in walk(graph) if op.type.startswith("tensor_list"))
    after = sorted(op.type for op in walk(opt) if op.type.startswith("tensor_list"))
    assert before == after
    np.testing.assert_array_equal(run_graph(opt, [x])[0], f(x).numpy())


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 5))
def test_array_carried_through_nested_loops_and_conds(n):
    def run(n):
        ta = gc.TensorArray(gc.int32, size=0, dynamic_size=True, element_shape=[])

        def outer(i, k, ta):
            def inner(j, k, ta):
                value = gc.cond(j % 2 == 0, lambda: i * 10 + j, lambda: -(i * 10 + j))
                return j + 1, k + 1, gc.cond(i > 2, lambda: ta.write(k, value * 100),
                                             lambda: ta.write(k, value))
            _, k, ta = gc.while_loop(lambda j, k, ta: j < i, inner, [0, k, ta])
            return i + 1, k, ta
        _, k, ta = gc.while_loop(lambda i, k, ta: i < n, outer, [0, 0, ta])
        return ta.stack(), k

    want = [(i * 10 + j) * (1 if j % 2 == 0 else -1) * (100 if i > 2 else 1)
            for i in range(n) for j in range(i)]
    for stacked, k in (run(gc.constant(n)), function(run)(gc.constant(n))):
        np.testing.assert_array_equal(stacked.numpy(), np.array(want, np.int32).reshape(-1))
        assert int(k) == len(want)


def test_cond_branches_writing_different_element_shapes_merge_to_none_dims():
    @function
    def f(p):
        ta = gc.TensorArray(gc.float32, size=1)
        ta = gc.cond(p, lambda: ta.write(0, [1.0, 2.0]), lambda: ta.write(0, [1.0, 2.0, 3.0]))
        return ta.read(0)

    assert f.get_concrete_function(gc.constant(True)).outputs[0].shape == (None,)
    np.testing.assert_array_equal(f(gc.constant(True)).numpy(), [1, 2])
    np.testing.assert_array_equal(f(gc.constant(False)).numpy(), [1, 2, 3])


def test_with_autograph_loops():
    """The TF tutorial patterns: fill a TensorArray in a `for`, iterate over one."""
    @gc.function
    def squares(x, n):
        ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
        for i in gc.range(n):
            ta = ta.write(i, x * gc.cast(i * i, gc.float32))
        return ta.stack()

    @gc.function
    def column_sums(m):
        total = gc.zeros([2])
        for row in gc.TensorArray(gc.float32, size=3).unstack(m):
            total += row
        return total

    x = np.array([1.0, -1.0], np.float32)
    np.testing.assert_array_equal(squares(x, gc.constant(4)).numpy(),
                                  np.outer(np.arange(4) ** 2, x))
    m = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(column_sums(m).numpy(), m.sum(0))


def test_zero_iterations_agree_with_eager():
    """A loop that writes [2] elements ran zero times. With element_shape=[2]: [0, 2] eagerly
    and compiled (TF). Without it eagerly nothing knows the element shape and stack() is TF's
    eager empty vector [0]; TF's tf.function gives [0, 2] from the body it traced, which
    eager cannot: compiled raises there instead (scalar elements: [0] on both)."""
    def build(x, n, shape):
        ta = gc.TensorArray(x.dtype, size=0, dynamic_size=True, element_shape=shape)
        _, ta = gc.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x)),
                              [0, ta])
        return ta.stack()

    x = gc.constant([1.0, 2.0])
    for backend in ("numpy", "auto"):
        f = function(build, backend=backend)
        for n in (0, 2):
            want = np.tile(x.numpy(), (n, 1)).reshape(n, 2)
            for fn in (build, f):
                np.testing.assert_array_equal(fn(x, gc.constant(n), [2]).numpy(), want)
        assert build(x, gc.constant(0), None).shape == (0,)
        np.testing.assert_array_equal(f(x, gc.constant(2), None).numpy(),
                                      np.tile(x.numpy(), (2, 1)))
        with pytest.raises(gc.errors.InvalidArgumentError,
                           match=r"no element_shape was given.*element_shape=\[2\]"):
            f(x, gc.constant(0), None)
        s = gc.constant(3.0)
        for fn in (build, f):
            out = fn(s, gc.constant(0), None)
            assert out.shape == (0,) and out.dtype == gc.float32


def test_zero_iterations_concat_needs_an_element_shape():
    @function
    def f(x, n):
        ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
        _, ta = gc.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x)),
                              [0, ta])
        return ta.concat()

    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(f(x, gc.constant(2)).numpy(), np.tile(x, 2))
    with pytest.raises(gc.errors.InvalidArgumentError, match="no element_shape was given"):
        f(x, gc.constant(0))        # eagerly: ValueError, the element shape is not known
