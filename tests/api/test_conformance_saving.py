"""API.md conformance of gc.saved_model.load / checkpoint restore errors (found by the s8 API
audit): the error classes a test written from API.md or from TensorFlow would catch."""
import os

import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cuda import availability


def _saved(tmp_path):
    m = gc.Module()
    m.v = gc.Variable([1.0, 2.0])
    m.f = gc.function(lambda x: x * m.v, input_signature=[gc.TensorSpec([2], gc.float32)])
    path = str(tmp_path / "sm")
    gc.saved_model.save(m, path)
    return path


def test_load_with_cuda_missing_is_the_value_error_naming_it(tmp_path, monkeypatch):
    # API.md: without a GPU, "cuda" raises ValueError naming what is missing -- on
    # gc.saved_model.load as on gc.function (it was a GraphcError "malformed SavedModel")
    path = _saved(tmp_path)
    monkeypatch.setattr(availability, "missing",
                        lambda: "backend 'cuda' found no CUDA device (test)")
    with pytest.raises(ValueError, match="found no CUDA device") as e:
        gc.saved_model.load(path, backend="cuda")
    assert not isinstance(e.value, gc.errors.GraphcError)
    # the same directory still loads on the CPU
    out = gc.saved_model.load(path, backend="numpy").f(gc.constant([3.0, 4.0]))
    np.testing.assert_array_equal(out.numpy(), np.array([3.0, 8.0], np.float32))


def test_missing_saved_model_is_graphc_error_and_os_error(tmp_path):
    # TF raises OSError ("SavedModel file does not exist at ..."); API.md names GraphcError
    # for graphc's own errors: the class is both
    for path in (str(tmp_path / "nowhere"), str(tmp_path)):     # no dir; dir without json
        with pytest.raises(OSError) as e:
            gc.saved_model.load(path)
        assert isinstance(e.value, gc.errors.GraphcError)
        assert isinstance(e.value, FileNotFoundError)


def test_restore_of_missing_checkpoint_is_not_found(tmp_path):
    # TF: tf.errors.NotFoundError; here FileNotFoundError (as before) and a GraphcError
    ckpt = gc.train.Checkpoint(v=gc.Variable(1.0))
    with pytest.raises(FileNotFoundError) as e:
        ckpt.restore(os.path.join(str(tmp_path), "ckpt-3"))
    assert isinstance(e.value, gc.errors.GraphcError)
    assert isinstance(e.value, gc.errors.NotFoundError)
