"""Python protocols of gc.Tensor against TF 2.21's EagerTensor (TF's answers as literals)."""
import copy
import pickle

import numpy as np
import pytest

import graphc as gc


def test_truth_value_of_an_empty_tensor_is_false_as_tf():
    # TF 2.21: bool(tf.constant([], tf.float32)) is False (numpy 2 raises for an empty array)
    assert bool(gc.constant([], gc.float32)) is False
    assert bool(gc.constant(np.zeros((0, 3), np.int32))) is False
    assert bool(gc.constant([1.0])) is True and bool(gc.constant(0.0)) is False
    with pytest.raises(ValueError, match="ambiguous"):
        bool(gc.constant([1.0, 2.0]))


def test_bytes_is_the_raw_buffer_as_tf():
    # TF 2.21: bytes(tf.constant([1, 2])) == b'\x01\x00\x00\x00\x02\x00\x00\x00' (graphc gave
    # b'\x01\x02', one byte per element through __index__)
    assert bytes(gc.constant([1, 2])) == b"\x01\x00\x00\x00\x02\x00\x00\x00"
    assert bytes(gc.constant([[1.5]], gc.float64)) == np.float64(1.5).tobytes()
    assert bytes(gc.constant([[1, 2], [3, 4]])[:, 0]) == np.array([1, 3], np.int32).tobytes()


def test_copy_and_deepcopy_are_the_tensor_itself_as_tf():
    # TF 2.21: copy.copy(t) is t and copy.deepcopy(t) is t (tensors are immutable)
    t = gc.constant([1.0, 2.0])
    assert copy.copy(t) is t and copy.deepcopy(t) is t
    nest = {"a": [t, 1]}
    assert copy.deepcopy(nest)["a"][0] is t
    seen = []

    @gc.function
    def f(x):
        seen.append(copy.deepcopy(x) is x and copy.copy(x) is x)   # was a copy of its graph
        return x + 1.0
    np.testing.assert_array_equal(f(t).numpy(), [2.0, 3.0])
    assert seen == [True]


@pytest.mark.parametrize("value", [2.5, [[1, 2]], True, np.zeros(0, np.float64),
                                   np.arange(6, dtype=np.int64).reshape(2, 3)])
def test_concrete_tensors_pickle_by_value_as_tf(value):
    # TF 2.21: pickle.loads(pickle.dumps(eager_tensor)) is an equal tensor (EagerTensor
    # __reduce__ is convert_to_tensor(numpy value)); graphc never unpickles files it reads
    t = gc.constant(value)
    for protocol in (0, pickle.HIGHEST_PROTOCOL):
        u = pickle.loads(pickle.dumps(t, protocol))
        assert type(u) is gc.Tensor and u.dtype == t.dtype and u.shape == t.shape
        np.testing.assert_array_equal(u.numpy(), t.numpy())
        np.testing.assert_array_equal(gc.reshape(u, [-1]).numpy(), np.ravel(t.numpy()))
    r = gc.constant([1.0]) * 3.0                      # an op's result, not a constant
    assert pickle.loads(pickle.dumps(r)).numpy().tolist() == [3.0]


def test_symbolic_tensors_do_not_pickle():
    # TF 2.21: pickling a tf.function's symbolic tensor raises TypeError (graphc pickled the
    # whole graph into something meaningless)
    @gc.function
    def f(x):
        with pytest.raises(TypeError, match="cannot pickle symbolic tensor 'x'"):
            pickle.dumps(x)
        return x
    f(gc.constant(1.0))


def test_as_dtype_aliases_follow_tf_and_python_scalars():
    # TF 2.21: tf.as_dtype('float') is float32 (numpy's 'float' is float64); 'double' float64.
    # 'int' (TF raises) is int32, as gc.as_dtype(int) and Python ints
    assert gc.as_dtype("float") is gc.float32 and gc.as_dtype(float) is gc.float32
    assert gc.as_dtype("double") is gc.float64 and gc.as_dtype(np.dtype("float")) is gc.float64
    assert gc.as_dtype("int") is gc.int32 and gc.as_dtype(int) is gc.int32
    assert gc.zeros([2], dtype="float").dtype == gc.float32
    with pytest.raises(TypeError, match="does not support dtype 'foo'"):
        gc.as_dtype("foo")


def test_protocols_that_already_matched_tf():
    # TF 2.21 answers on the same inputs
    v, m, i = gc.constant([1.0, 2.0, 3.0]), gc.constant([[1, 2], [3, 4]]), gc.constant(2)
    with pytest.raises(TypeError, match="unhashable"):
        hash(v)
    assert len(v) == 3 and [r.numpy().tolist() for r in m] == [[1, 2], [3, 4]]
    assert [10, 20, 30][i] == 30 and list(range(i)) == [0, 1]
    assert f"{gc.constant(2.5):.2f}" == "2.50" and f"{v}" == "[1. 2. 3.]"
    assert 1.0 in v and 5.0 not in v
    assert [float(x) for x in reversed(v)] == [3.0, 2.0, 1.0]
    a = v.numpy()
    a[0] = 9.0                               # a writable copy: the tensor is unchanged
    assert v.numpy().tolist() == [1.0, 2.0, 3.0] and not np.asarray(v).flags.writeable
    assert v.dtype == np.float32 and v.dtype == "float32" and v.dtype != np.float64
    assert np.dtype("float32") == v.dtype and gc.float32.as_numpy_dtype is np.float32
    with pytest.raises(TypeError, match="0-dimensional"):
        float(gc.constant([1.5]))
    with pytest.raises(TypeError, match="divmod"):
        divmod(gc.constant(7), 2)
    assert (gc.constant([[1, 2], [3, 4]]) @ [[1], [1]]).numpy().tolist() == [[3], [7]]
    assert ([1.0, 1.0, 1.0] + v).numpy().tolist() == [2.0, 3.0, 4.0]
