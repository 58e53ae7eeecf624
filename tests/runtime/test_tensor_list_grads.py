"""The tensor_list_* primitives that gradients use (list gradients, where an unwritten element
means zeros, and the lists a differentiated while loop pushes to): their numpy rules against
a reference model of index -> summed gradient, their type rules, and every error."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.runtime.registry import REGISTRY
from graphc.runtime.tensor_list import TensorList
from graphc.runtime.types import ListType, TensorType

F32, I32 = gc.float32, gc.int32


def rule(name, *args):
    return REGISTRY[name].numpy(*args)


def infer(name, *types):
    return REGISTRY[name].infer(list(types))


def new_list(n=0, element_shape=None, dtype=F32, dynamic=True):
    return REGISTRY["tensor_list_new"].numpy(np.int32(n), dtype=dtype,
                                            element_shape=element_shape, dynamic_size=dynamic)


def grad_list(entries, n=None):
    """A list gradient holding {index: row} (other indices unwritten)."""
    lst = new_list()
    for i, g in entries.items():
        lst = rule("tensor_list_write", lst, np.int32(i), g)
    if n is not None and len(lst) < n:
        lst.extend([None] * (n - len(lst)))
    return lst


def as_dict(lst):
    return {i: g for i, g in enumerate(lst) if g is not None}


rows = st.lists(st.floats(-1e3, 1e3, width=32, allow_subnormal=False), min_size=2,
                max_size=2).map(lambda v: np.array(v, np.float32))
entries = st.dictionaries(st.integers(0, 5), rows, max_size=5)


@settings(max_examples=60, deadline=None)
@given(entries, entries)
def test_add_sums_by_index_with_unwritten_as_zero(a, b):
    la, lb = grad_list(a), grad_list(b)
    out = rule("tensor_list_add", la, lb)
    want = dict(a)
    for i, g in b.items():
        want[i] = g if i not in want else want[i] + g
    got = as_dict(out)
    assert got.keys() == want.keys()
    for i in want:
        assert got[i].tobytes() == want[i].tobytes()
    assert as_dict(la).keys() == a.keys() and as_dict(lb).keys() == b.keys()   # inputs kept


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=6), st.data())
def test_scatter_add_adds_repeated_indices_in_order(indices, data):
    value = np.array([data.draw(rows) for _ in indices], np.float32).reshape(-1, 2)
    base = grad_list({1: np.array([0.5, -0.0], np.float32)})
    out = rule("tensor_list_scatter_add", base, np.array(indices, np.int32), value)
    want = {1: np.array([0.5, -0.0], np.float32)}
    for k, i in enumerate(indices):
        want[i] = value[k] if i not in want else want[i] + value[k]
    got = as_dict(out)
    assert got.keys() == want.keys()
    for i in want:
        assert got[i].tobytes() == want[i].tobytes()
    assert list(as_dict(base)) == [1]                                          # input kept


@settings(max_examples=60, deadline=None)
@given(entries, st.integers(-2, 7))
def test_read_or_zeros_reads_or_gives_zeros(a, i):
    like = np.full(2, 7.0, np.float32)
    got = rule("tensor_list_read_or_zeros", grad_list(a), np.int32(i), like)
    want = a.get(i, np.zeros(2, np.float32))
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()


@settings(max_examples=60, deadline=None)
@given(entries, st.integers(1, 6))
def test_stack_or_zeros_fills_zeros_and_drops_rows_past_like(a, n):
    like = np.ones((n, 2), np.float32)
    got = rule("tensor_list_stack_or_zeros", grad_list(a, n=3), like)
    want = np.zeros((n, 2), np.float32)
    for i, g in a.items():
        if i < n:
            want[i] += g
    assert got.tobytes() == want.tobytes()


def test_push_back_appends_and_keeps_the_declared_element_shape():
    lst = new_list(element_shape=(None,))
    for n in (1, 3):
        assert rule("tensor_list_push_back", lst, np.ones(n, np.float32)) is lst
    assert [len(x) for x in lst] == [1, 3] and lst.element_shape == (None,)
    assert rule("tensor_list_size", lst) == 2
    assert rule("tensor_list_read", lst, np.int32(1)).shape == (3,)


def test_type_rules():
    f2, fn, f = ListType(F32, (2,)), ListType(F32, None), ListType(F32, (None,))
    assert infer("tensor_list_add", f2, f2) == [f2]
    assert infer("tensor_list_add", f2, fn) == [fn]       # an untyped gradient stays untyped
    assert infer("tensor_list_add", f2, ListType(F32, (3,))) == [f]
    assert infer("tensor_list_add", f2, ListType(F32, (2, 1))) == [fn]
    v = TensorType(F32, (4, 2))
    assert infer("tensor_list_scatter_add", fn, TensorType(I32, (4,)), v) == [fn]
    assert infer("tensor_list_scatter_add", f2, TensorType(I32, (4,)), v) == [f2]
    assert infer("tensor_list_read_or_zeros", fn, TensorType(I32, ()), v) == [v]
    assert infer("tensor_list_stack_or_zeros", fn, v) == [v]
    assert infer("tensor_list_push_back", f, TensorType(F32, (5,))) == [f]


@pytest.mark.parametrize("name,types,error,message", [
    ("tensor_list_add", [ListType(F32, None), ListType(I32, None)], TypeError,
     "cannot add a list of int32 to a list of float32"),
    ("tensor_list_add", [ListType(F32, None), TensorType(F32, ())], TypeError,
     "expects a TensorArray"),
    ("tensor_list_scatter_add", [ListType(F32, None), TensorType(I32, ()),
                                 TensorType(F32, (1, 2))], TypeError, "indices must be a 1-D"),
    ("tensor_list_scatter_add", [ListType(F32, None), TensorType(I32, (1,)),
                                 TensorType(I32, (1, 2))], TypeError, "use gc.cast"),
    ("tensor_list_scatter_add", [ListType(F32, None), TensorType(I32, (1,)),
                                 TensorType(F32, ())], ValueError, "rank >= 1"),
    ("tensor_list_read_or_zeros", [ListType(F32, None), TensorType(F32, ()),
                                   TensorType(F32, (2,))], TypeError, "index must be a scalar"),
    ("tensor_list_read_or_zeros", [TensorType(F32, (2,)), TensorType(I32, ()),
                                   TensorType(F32, (2,))], TypeError, "expects a TensorArray"),
    ("tensor_list_stack_or_zeros", [ListType(F32, None), TensorType(F32, ())], ValueError,
     "like must have rank >= 1"),
    ("tensor_list_stack_or_zeros", [ListType(F32, None), TensorType(F32, (2,)).__class__(
        gc.float64, (2,))], TypeError, "holds float32"),
    ("tensor_list_push_back", [ListType(F32, (2,)), TensorType(F32, (3,))], ValueError,
     "does not match the TensorArray's element shape"),
    ("tensor_list_push_back", [ListType(F32, (2,)), TensorType(I32, (2,))], TypeError,
     "holds float32"),
])
def test_type_rule_errors(name, types, error, message):
    with pytest.raises(error, match=message) as info:
        REGISTRY[name].infer(types)
    assert name in str(info.value)


def test_runtime_errors():
    with pytest.raises(InvalidArgumentError, match="tensor_list_scatter_add: index -1"):
        rule("tensor_list_scatter_add", new_list(), np.array([0, -1], np.int32),
             np.ones((2, 2), np.float32))
    with pytest.raises(InvalidArgumentError, match="index 2 is out of range"):
        rule("tensor_list_read", TensorList([np.ones(1)] * 2), np.int32(2))


def _list_grads(x):
    with gc.GradientTape() as tape:
        tape.watch(x)
        ta = gc.TensorArray(gc.float32, size=3).unstack(x)
        y = ta.read(0) * 2.0 + ta.read(2) + gc.reduce_sum(ta.gather([2, 2]))
    return tape.gradient(y, x)


@pytest.mark.parametrize("mode", ["eager", "numpy", "numba"])
def test_list_gradients_add_up_eagerly_and_traced(mode):
    x = gc.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    fn = _list_grads if mode == "eager" else gc.function(_list_grads, backend=mode)
    # sum(y) = 2 sum(x0) + sum(x2) + 2 * 2 sum(x2): the reads and the repeated gather add up
    np.testing.assert_array_equal(fn(x).numpy(), [[2.0, 2.0], [0.0, 0.0], [5.0, 5.0]])


def _loop_grads(x):
    with gc.GradientTape() as tape:
        tape.watch(x)
        s = x
        for _ in gc.range(2):
            s = gc.sin(s)
    return tape.gradient(s, x)


def test_a_differentiated_loop_saves_its_iterations_on_tensor_lists():
    cf = gc.function(_loop_grads, backend="numpy").get_concrete_function(
        gc.TensorSpec([2], gc.float32))
    text = str(cf.graph)
    for line in ["list<float32[2]> = tensor_list_new(%constant_",
                 "{dtype=float32, dynamic_size=True, element_shape=(2,)}",
                 "list<float32[2]> = tensor_list_push_back(%stack_1, %s)",
                 "float32[2] = tensor_list_read(%tensor_list_new_", "= tensor_list_size("]:
        assert line in text, line
    assert "loop_stack" not in text and "list_grad" not in text
    x = np.array([0.5, -1.25], np.float32)
    np.testing.assert_allclose(cf(gc.constant(x)).numpy(),
                               np.cos(np.sin(x)) * np.cos(x), rtol=1e-6)
