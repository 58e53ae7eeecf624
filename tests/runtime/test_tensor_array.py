"""gc.TensorArray eagerly and traced in straight-line code: values against numpy, every error."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.runtime.graph import walk

function = functools.partial(gc.function, autograph=False)
DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64}


@st.composite
def elements(draw):
    """A list of n same-shaped arrays of one dtype (n may be 0)."""
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    n = draw(st.integers(0, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    values = [(rng.standard_normal(shape) * 10).astype(DTYPES[dtype]) for _ in range(n)]
    return dtype, shape, values


def _fill(ta, values, order):
    for i in order:
        ta = ta.write(i, values[i])
    return ta


def _ops(ta, n, shape):
    """Every read-side op on a filled array, as a dict of tensors."""
    out = {"stack": ta.stack(), "size": ta.size(), "gather": ta.gather(list(range(n))[::-1])}
    if n:
        out["read_last"] = ta.read(n - 1)
    if shape:
        out["concat"] = ta.concat()
    return out


def _expected(values, dtype, shape):
    n = len(values)
    stacked = np.stack(values) if n else np.zeros((0,) + shape, DTYPES[dtype])
    out = {"stack": stacked, "size": np.int32(n), "gather": stacked[::-1]}
    if n:
        out["read_last"] = values[-1]
    if shape:
        out["concat"] = stacked.reshape((-1,) + shape[1:])
    return out


def _check(got, want):
    assert set(got) == set(want)
    for k in want:
        g = got[k].numpy()
        assert g.dtype == np.asarray(want[k]).dtype, k
        np.testing.assert_array_equal(g, want[k], err_msg=k)


@settings(max_examples=25, deadline=None)
@given(elements(), st.randoms(use_true_random=False))
def test_eager_matches_numpy(case, rnd):
    dtype, shape, values = case
    order = list(range(len(values)))
    rnd.shuffle(order)   # writes in any order
    ta = gc.TensorArray(getattr(gc, dtype), size=len(values), element_shape=shape)
    ta = _fill(ta, values, order)
    _check(_ops(ta, len(values), shape), _expected(values, dtype, shape))
    assert ta.dtype is getattr(gc, dtype) and ta.element_shape == shape


@settings(max_examples=20, deadline=None)
@given(elements())
def test_traced_matches_eager_and_numpy(case):
    dtype, shape, values = case
    n = len(values)

    @function
    def f(*xs):
        ta = gc.TensorArray(getattr(gc, dtype), size=n, element_shape=shape)
        return _ops(_fill(ta, xs, range(n)), n, shape)

    got = f(*[gc.constant(v) for v in values])
    _check(got, _expected(values, dtype, shape))
    assert f.get_concrete_function(*[gc.constant(v) for v in values]).outputs[0].shape[0] == n


def test_dynamic_size_grows_and_unwritten_gap_reads_zeros():
    ta = gc.TensorArray(gc.float32, size=1, dynamic_size=True)
    ta = ta.write(0, 1.0).write(3, 4.0)
    assert int(ta.size()) == 4
    np.testing.assert_array_equal(ta.stack().numpy(), [1, 0, 0, 4])    # TF 2.21 gives this
    ta = ta.write(1, 2.0).write(2, 3.0)
    np.testing.assert_array_equal(ta.stack().numpy(), [1, 2, 3, 4])


@pytest.mark.parametrize("index", [3, 7, -1])
def test_write_out_of_range_names_index_and_size(index):
    ta = gc.TensorArray(gc.float32, size=3)
    with pytest.raises(InvalidArgumentError, match=f"index {index} is out of range.*size 3"):
        ta.write(index, 1.0)


def test_read_errors_name_the_index():
    ta = gc.TensorArray(gc.int32, size=2).write(0, 5)
    assert ta.read(1).numpy() == 0          # unwritten: zeros, as in TF
    with pytest.raises(InvalidArgumentError, match="index 2 is out of range.*size 2"):
        ta.read(2)
    with pytest.raises(InvalidArgumentError, match="index 4 is out of range"):
        ta.gather([0, 4])
    assert int(ta.read(np.int64(0))) == 5 and int(ta.read(gc.constant(0))) == 5


def test_dtype_mismatch_is_a_type_error():
    ta = gc.TensorArray(gc.float32, size=2)
    with pytest.raises(TypeError, match="holds float32 but the value is int32.*gc.cast"):
        ta.write(0, gc.constant(1))
    with pytest.raises(TypeError, match="cannot store 1.5 in a TensorArray of int32"):
        gc.TensorArray(gc.int32, size=1).write(0, 1.5)
    with pytest.raises(TypeError, match="index must be"):
        ta.write(0.5, 1.0)
    # Python numbers take the array's dtype, as in TF
    assert ta.write(0, 2).read(0).dtype is gc.float32


def test_element_shape_mismatch_is_a_value_error():
    ta = gc.TensorArray(gc.float32, size=2, element_shape=[2])
    with pytest.raises(ValueError, match=r"shape \[3\] does not match .*element shape \[2\]"):
        ta.write(0, [1.0, 2.0, 3.0])
    ta = gc.TensorArray(gc.float32, size=2).write(0, [1.0, 2.0])   # first write fixes it
    assert ta.element_shape == (2,)
    with pytest.raises(ValueError, match=r"shape \[\] does not match .*element shape \[2\]"):
        ta.write(1, 3.0)


def test_empty_stack_needs_a_known_element_shape():
    """As TF: [0, *shape] for a declared shape; eagerly [0] when nothing set it (TF's eager)."""
    ta = gc.TensorArray(gc.float64, size=0, element_shape=(2, 3))
    out = ta.stack()
    assert out.shape == (0, 2, 3) and out.dtype is gc.float64
    assert ta.concat().shape == (0, 3)
    empty = gc.TensorArray(gc.float32).stack()      # TF's eager TensorArray: shape [0]
    assert empty.shape == (0,) and empty.dtype is gc.float32
    with pytest.raises(ValueError, match="element shape is not known"):
        gc.TensorArray(gc.float32).concat()
    with pytest.raises(ValueError, match="element shape is not known"):
        gc.function(lambda: gc.TensorArray(gc.float32).stack())()     # TF's tf.function too
    with pytest.raises(InvalidArgumentError, match=r"element shape \[\?\] is not fully"):
        gc.TensorArray(gc.float32, element_shape=[None]).stack()
    with pytest.raises(ValueError, match="scalars; use stack"):
        gc.TensorArray(gc.float32, size=1).write(0, 1.0).concat()


def test_unstack_fills_rows_and_checks_size():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    ta = gc.TensorArray(gc.float32, size=3).unstack(x)
    np.testing.assert_array_equal(ta.read(2).numpy(), x[2])
    np.testing.assert_array_equal(ta.stack().numpy(), x)
    with pytest.raises(InvalidArgumentError, match="cannot unstack 3 elements into .*size 2"):
        gc.TensorArray(gc.float32, size=2).unstack(x)
    grown = gc.TensorArray(gc.float32, size=0, dynamic_size=True).unstack(x)
    assert int(grown.size()) == 3
    with pytest.raises(ValueError, match="does not match"):
        gc.TensorArray(gc.float32, size=3, element_shape=[3]).unstack(x)


def test_traced_unstack_gather_concat():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)

    @function
    def f(x, idx):
        ta = gc.TensorArray(gc.float64, size=4).unstack(x)
        return ta.gather(idx), ta.concat(), ta.read(idx[0]) * 2.0

    idx = np.array([3, 1], np.int32)
    g, c, r = f(x, idx)
    np.testing.assert_array_equal(g.numpy(), x[idx])
    np.testing.assert_array_equal(c.numpy(), x.reshape(-1))
    np.testing.assert_array_equal(r.numpy(), x[3] * 2)


def test_runtime_errors_inside_compiled_functions():
    @function
    def overflow(n):
        ta = gc.TensorArray(gc.float32, size=2)
        _, ta = gc.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, 1.0)),
                              [0, ta])
        return ta.stack()

    np.testing.assert_array_equal(overflow(gc.constant(2)).numpy(), [1, 1])
    with pytest.raises(InvalidArgumentError, match="index 2 is out of range.*size 2.*dynamic_size"):
        overflow(gc.constant(3))

    @function
    def unwritten(i):
        return gc.TensorArray(gc.float32, size=3, element_shape=[]).write(0, 1.0).read(i)

    assert float(unwritten(gc.constant(0))) == 1.0
    assert float(unwritten(gc.constant(1))) == 0.0       # unwritten: zeros, as in TF

    @function
    def unknown_shape(i):
        ta = gc.TensorArray(gc.float32, size=3, element_shape=[None])
        return ta.write(i, gc.ones([2])).read(1)
    np.testing.assert_array_equal(unknown_shape(gc.constant(1)).numpy(), [1, 1])
    np.testing.assert_array_equal(unknown_shape(gc.constant(0)).numpy(), [0, 0])


def test_trace_time_errors():
    @function
    def bad_shape(x):
        return gc.TensorArray(gc.float32, size=2, element_shape=[3]).write(0, x).stack()

    with pytest.raises(ValueError, match=r"TensorArray.write: value of shape \[2\]"):
        bad_shape(np.zeros(2, np.float32))

    @function
    def bad_dtype(x):
        return gc.TensorArray(gc.float32, size=2).write(0, x).stack()

    with pytest.raises(TypeError, match="holds float32 but the value is float64"):
        bad_dtype(np.zeros(2))

    @function
    def unknown_shape():
        return gc.TensorArray(gc.float32, size=2).read(0)

    with pytest.raises(ValueError, match="element shape is not known.*element_shape="):
        unknown_shape()


def test_eager_array_cannot_enter_a_graph():
    ta = gc.TensorArray(gc.float32, size=1)

    @function
    def f(x):
        return ta.write(0, x).stack()

    with pytest.raises(ValueError, match="created eagerly cannot be used inside a compiled"):
        f(gc.constant(1.0))


def test_symbolic_size_and_graph_text():
    @function
    def f(x):
        ta = gc.TensorArray(gc.float32, size=gc.shape(x)[0]).unstack(x)
        return ta.read(0), ta.size()

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    first, size = f(x)
    np.testing.assert_array_equal(first.numpy(), x[0])
    assert int(size) == 3
    graph = f.get_concrete_function(x).graph
    kinds = [op.type for op in walk(graph)]
    for t in ("tensor_list_new", "tensor_list_unstack", "tensor_list_read", "tensor_list_size"):
        assert t in kinds
    text = str(graph)
    assert "list<float32[2]> = tensor_list_unstack(" in text
    assert "dynamic_size=False" in text


def test_runtime_element_shape_check_for_unknown_dims():
    @function(input_signature=[gc.TensorSpec([None], gc.float32)] * 2)
    def f(x, y):
        return gc.TensorArray(gc.float32, size=2).write(0, x).write(1, y).stack()

    np.testing.assert_array_equal(f([1.0, 2.0], [3.0, 4.0]).numpy(), [[1, 2], [3, 4]])
    with pytest.raises(InvalidArgumentError, match=r"shape \[3\] does not match .*shape \[2\]"):
        f([1.0, 2.0], [3.0, 4.0, 5.0])
    ta = gc.TensorArray(gc.float32, size=2, element_shape=[None, 2]).write(0, [[1.0, 2.0]])
    assert ta.element_shape == (1, 2)
    with pytest.raises(ValueError, match=r"shape \[2,2\] does not match .*shape \[1,2\]"):
        ta.write(1, np.zeros((2, 2), np.float32))


def test_constructor_arguments():
    with pytest.raises(InvalidArgumentError, match="size must be >= 0, got -1"):
        gc.TensorArray(gc.float32, size=-1)
    with pytest.raises(TypeError, match="size must be an integer"):
        gc.TensorArray(gc.float32, size=1.5)
    with pytest.raises(TypeError, match="element_shape must be a list of ints"):
        gc.TensorArray(gc.float32, element_shape=["a"])
    with pytest.raises(TypeError, match="does not support dtype"):
        gc.TensorArray("complex64")
    ta = gc.TensorArray("float64", size=gc.constant(2), element_shape=3)
    assert ta.dtype is gc.float64 and ta.element_shape == (3,) and not ta.dynamic_size
    assert repr(ta) == "<gc.TensorArray dtype=float64 size=2 element_shape=[3]>"


def test_iteration_is_eager_only():
    ta = gc.TensorArray(gc.int32, size=3).unstack([4, 5, 6])
    assert [int(x) for x in ta] == [4, 5, 6]

    @function
    def f():
        return [x for x in gc.TensorArray(gc.int32, size=1).write(0, 1)]

    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError, match="ta.read"):
        f()


@pytest.mark.parametrize("compiled", [False, True])
def test_unwritten_elements_read_as_zeros_as_tf(compiled):
    """TF 2.21, eagerly and in tf.function: an element never written reads as zeros of the
    element shape (declared, or set by any write); with that shape not fully known it is an
    error. Writing an element twice keeps the last value."""
    def body():
        partial = gc.TensorArray(gc.float32, size=3).write(0, gc.constant([1.0, 2.0]))
        declared = gc.TensorArray(gc.float32, size=3, element_shape=[2])
        twice = gc.TensorArray(gc.int32, size=2).write(0, 1).write(0, 2)
        return (partial.stack(), partial.read(2), declared.read(1),
                declared.gather([0, 2]), partial.concat(), twice.stack())
    run = gc.function(body, backend="numpy") if compiled else body
    stack, read, declared, gathered, concat, twice = run()
    np.testing.assert_array_equal(stack.numpy(), [[1, 2], [0, 0], [0, 0]])
    np.testing.assert_array_equal(read.numpy(), [0, 0])
    np.testing.assert_array_equal(declared.numpy(), [0, 0])
    np.testing.assert_array_equal(gathered.numpy(), [[0, 0], [0, 0]])
    np.testing.assert_array_equal(concat.numpy(), [1, 2, 0, 0, 0, 0])
    np.testing.assert_array_equal(twice.numpy(), [2, 0])

    def unknown(i):
        ta = gc.TensorArray(gc.float32, size=3, element_shape=[None])
        return ta.read(i)
    run = gc.function(unknown, backend="numpy") if compiled else unknown
    with pytest.raises(InvalidArgumentError, match=r"element 1 .*not fully known"):
        run(gc.constant(1))


@pytest.mark.parametrize("compiled", [False, True])
def test_scatter_writes_rows_at_indices_as_tf(compiled):
    """TF's TensorArray.scatter (rows of value at indices; the rest reads as zeros), with
    gradients flowing back to the scattered value."""
    def body(v):
        with gc.GradientTape() as tape:
            tape.watch(v)
            ta = gc.TensorArray(gc.float32, size=4).scatter([1, 3], v)
            y = ta.stack()
            loss = gc.reduce_sum(y * gc.constant([[1.0], [2.0], [3.0], [4.0]]))
        return y, tape.gradient(loss, v)
    run = gc.function(body, backend="numpy") if compiled else body
    y, g = run(gc.constant([[5.0, 6.0], [7.0, 8.0]]))
    np.testing.assert_array_equal(y.numpy(), [[0, 0], [5, 6], [0, 0], [7, 8]])
    np.testing.assert_array_equal(g.numpy(), [[2, 2], [4, 4]])
    with pytest.raises(ValueError, match="2 indices for a value of shape \\[3\\]"):
        gc.TensorArray(gc.float32, size=4).scatter([0, 1], gc.constant([1.0, 2.0, 3.0]))
