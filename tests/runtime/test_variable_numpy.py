"""Variable.numpy() gives what Tensor.numpy() gives (and TF's Variable.numpy()): a numpy
scalar for a 0-d variable, an array copy otherwise, whichever way it was last written."""
import numpy as np

import graphc as gc


def test_scalar_variable_numpy_is_a_numpy_scalar_after_eager_and_compiled_updates():
    v = gc.Variable(1.0)
    assert type(v.numpy()) is np.float32 and v.numpy() == 1.0
    v.assign_add(1.0)
    assert type(v.numpy()) is np.float32 and v.numpy() == 2.0

    @gc.function
    def bump():
        v.assign_add(1.0)
    bump()
    assert type(v.numpy()) is np.float32 and v.numpy() == 3.0
    assert type(v.numpy()) is type(v.read_value().numpy())


def test_array_variable_numpy_is_a_copy():
    v = gc.Variable(np.arange(3, dtype=np.int32))
    a = v.numpy()
    a[0] = 7
    assert v.numpy().tolist() == [0, 1, 2] and a.dtype == np.int32
