"""API.md conformance of op signatures (found by the s8 API audit): API.md writes
`fill(shape, value)` and `eye(n, dtype=gc.float32)`; TF's keywords (`dims`, `num_rows`) keep
working beside them."""
import numpy as np
import pytest

import graphc as gc


def test_fill_takes_api_md_shape_keyword_and_tf_dims():
    np.testing.assert_array_equal(gc.fill(shape=[2, 3], value=5).numpy(), np.full([2, 3], 5))
    np.testing.assert_array_equal(gc.fill(dims=[2], value=1.5).numpy(),
                                  np.full([2], 1.5, np.float32))
    assert gc.fill(shape=[2], value=5).dtype == gc.int32
    with pytest.raises(TypeError, match="exactly once"):
        gc.fill([2], 1, shape=[2])


def test_eye_takes_api_md_n_keyword_and_tf_num_rows():
    np.testing.assert_array_equal(gc.eye(n=3).numpy(), np.eye(3, dtype=np.float32))
    out = gc.eye(n=2, dtype=gc.int32)
    assert out.dtype == gc.int32
    np.testing.assert_array_equal(out.numpy(), np.eye(2, dtype=np.int32))
    np.testing.assert_array_equal(gc.eye(num_rows=2, num_columns=3).numpy(), np.eye(2, 3))
    with pytest.raises(TypeError, match="exactly once"):
        gc.eye(2, n=2)


def test_keywords_work_while_tracing():
    @gc.function
    def f(k):
        return gc.fill(shape=[k], value=2.0), gc.eye(n=k)
    a, b = f(gc.constant(3))
    np.testing.assert_array_equal(a.numpy(), np.full([3], 2.0, np.float32))
    np.testing.assert_array_equal(b.numpy(), np.eye(3, dtype=np.float32))
