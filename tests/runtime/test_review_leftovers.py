"""Small TF 2.21 behaviours found by the 8 Dec review: deepcopy of variables and modules,
depth-0 scatter indices, the empty compiled TensorArray.concat() message."""
import copy

import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError


def test_deepcopy_of_a_variable_is_a_new_variable_with_its_value_name_and_trainability():
    v = gc.Variable([1.0, 2.0], name="w", trainable=False)
    d = copy.deepcopy(v)
    assert d is not v and d.name == "w:0" and d.trainable is False     # TF: 'w:0', False
    assert d.dtype == v.dtype and d.numpy().tolist() == [1.0, 2.0]
    d.assign([5.0, 6.0])
    assert v.numpy().tolist() == [1.0, 2.0]
    assert copy.copy(v) is v                                            # TF: the same object


def test_deepcopy_of_a_module_copies_its_variables():
    class M(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = gc.Variable(3.0)
    m = M()
    m2 = copy.deepcopy(m)
    m2.w.assign(4.0)
    assert (float(m.w.numpy()), float(m2.w.numpy())) == (3.0, 4.0)
    assert m2.trainable_variables[0] is m2.w


def test_deepcopy_keeps_shared_variables_shared_and_is_eager_only_as_tf():
    class M(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = gc.Variable(3.0, name="w")
            self.alias = self.w
    m2 = copy.deepcopy(M())
    assert m2.alias is m2.w and len(m2.trainable_variables) == 1      # TF: the same, 1
    v = gc.Variable([1.0, 2.0])

    @gc.function
    def f():
        return copy.deepcopy(v)
    # TF 2.21: NotImplementedError "__deepcopy__() is only available when eager execution
    # is enabled"
    with pytest.raises(NotImplementedError, match="only available eagerly"):
        f()


@pytest.mark.parametrize("call", [
    lambda i, u: gc.scatter_nd(i, u, [3]),
    lambda i, u: gc.tensor_scatter_nd_update(gc.zeros([3]), i, u),
    lambda i, u: gc.tensor_scatter_nd_add(gc.zeros([3]), i, u)])
@pytest.mark.parametrize("rows", [2, 0])
def test_depth_zero_scatter_indices_raise_as_in_tf(call, rows):
    # TF 2.21: InvalidArgumentError ("Only indices.shape[-1] values between 1 and 5", or
    # "Indices and updates specified for empty output shape"); graphc wrote [2, 2, 2]
    with pytest.raises(InvalidArgumentError, match="index depth 0"):
        call(gc.zeros([rows, 0], gc.int32), gc.ones([rows, 3]))
    with pytest.raises(InvalidArgumentError, match="index depth 0"):
        gc.function(call)(gc.zeros([rows, 0], gc.int32), gc.ones([rows, 3]))


def test_gather_nd_with_depth_zero_indices_takes_the_whole_tensor_as_tf():
    got = gc.gather_nd(gc.constant([1.0, 2.0, 3.0]), gc.zeros([2, 0], gc.int32))
    assert got.numpy().tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]     # TF's value


def test_empty_compiled_concat_names_concat():
    @gc.function
    def f(n):
        ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
        for i in gc.range(n):
            ta = ta.write(i, gc.ones([3]))
        return ta.concat()
    assert f(gc.constant(2)).numpy().tolist() == [1.0] * 6
    with pytest.raises(InvalidArgumentError, match=r"concat\(\) fails") as e:
        f(gc.constant(0))
    assert "stack()" not in str(e.value) and "element_shape=[3]" in str(e.value)
