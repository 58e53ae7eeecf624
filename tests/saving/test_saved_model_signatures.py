"""Signatures as TF makes them: from a ConcreteFunction (`f.get_concrete_function(spec)`),
called by position or name, with TF's structured_input_signature / structured_outputs."""
import numpy as np
import pytest

import graphc as gc


class Scale(gc.Module):
    def __init__(self):
        super().__init__()
        self.w = gc.Variable(np.float32(3.0))

    @gc.function
    def __call__(self, x, y=None, k=1.0):
        out = x * self.w * k
        return out if y is None else (out, out + y)


def test_a_concrete_function_is_a_signature(tmp_path):
    m = Scale()
    cf = m.__call__.get_concrete_function(gc.TensorSpec([None, 2], gc.float32), k=2.0)
    gc.saved_model.save(m, str(tmp_path / "a"), signatures=cf)
    serve = gc.saved_model.load(str(tmp_path / "a")).signatures["serving_default"]
    x = np.array([[1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(serve(x=x)["output_0"].numpy(), x * 6)   # k baked in
    args, kwargs = serve.structured_input_signature
    assert args == () and list(kwargs) == ["x"]
    assert (kwargs["x"].shape, kwargs["x"].dtype, kwargs["x"].name) == ((None, 2), gc.float32, "x")
    assert list(serve.structured_outputs) == ["output_0"]

    cf2 = m.__call__.get_concrete_function(gc.TensorSpec([2], gc.float32, name="inp"),
                                           y=gc.TensorSpec([2], gc.float32))
    gc.saved_model.save(m, str(tmp_path / "b"), signatures={"pair": cf2, "one": cf})
    loaded = gc.saved_model.load(str(tmp_path / "b"))
    pair = loaded.signatures["pair"]
    assert list(pair.structured_input_signature[1]) == ["inp", "y"]
    out = pair(np.float32([1, 2]), y=np.float32([10, 20]))      # by position, then by name
    np.testing.assert_array_equal(out["output_1"].numpy(), [13, 26])
    gc.saved_model.save(loaded, str(tmp_path / "c"))           # saved again: kept
    again = gc.saved_model.load(str(tmp_path / "c")).signatures
    assert sorted(again) == ["one", "pair"]
    np.testing.assert_array_equal(again["pair"](inp=[1.0, 2.0], y=[0.0, 0.0])["output_0"]
                                  .numpy(), [3, 6])


def test_concrete_signature_errors(tmp_path):
    m = Scale()
    other = gc.function(lambda x: x * 2.0)
    with pytest.raises(ValueError, match="a trace of no gc.function the saved object holds"):
        gc.saved_model.save(m, str(tmp_path),
                            signatures=other.get_concrete_function(gc.TensorSpec([2])))
    m.g = gc.function(lambda d: d["a"] * 2.0)
    nested = m.g.get_concrete_function({"a": gc.TensorSpec([2])})
    with pytest.raises(ValueError, match="not single TensorSpecs"):
        gc.saved_model.save(m, str(tmp_path), signatures={"n": nested})
