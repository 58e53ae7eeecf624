"""input_signature entries may be nests (dict, list, tuple, namedtuple) of TensorSpecs, as
in TF: one trace, Python data converted leaf by leaf, structure errors naming the argument,
and the nest kept by gc.saved_model."""
import collections

import numpy as np
import pytest

import graphc as gc

Pair = collections.namedtuple("Pair", "a b")


def make(backend="numpy"):
    @gc.function(input_signature=[{"w": gc.TensorSpec([None]), "b": gc.TensorSpec([])},
                                  [gc.TensorSpec([], gc.int32), gc.TensorSpec([], gc.int32)],
                                  Pair(gc.TensorSpec([]), gc.TensorSpec([]))],
                 backend=backend)
    def f(params, ks, pair):
        scale = gc.cast(ks[0] + ks[1], gc.float32)
        return params["w"] * scale + params["b"] + pair.a * pair.b
    return f


def eager(w, b, k0, k1, a, c):
    return np.asarray(w, np.float32) * np.float32(k0 + k1) + np.float32(b) + np.float32(a * c)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_one_trace_for_nested_arguments(backend, numba_forced):
    f = make(backend)
    got = [f({"w": [1.0, 2.0], "b": 0.5}, [1, 2], Pair(3.0, 4.0)),
           f({"b": gc.constant(0.5), "w": gc.constant([1.0, 2.0, 3.0])}, (1, 2),
             Pair(gc.constant(3.0), 4.0))]
    if backend == "numba":
        with numba_forced.expect():
            got.append(f({"w": np.ones(4, np.float32), "b": 1.0}, [0, 1], Pair(1.0, 1.0)))
    assert f.tracing_count == 1
    np.testing.assert_allclose(got[0].numpy(), eager([1, 2], 0.5, 1, 2, 3, 4))
    np.testing.assert_allclose(got[1].numpy(), eager([1, 2, 3], 0.5, 1, 2, 3, 4))
    args, kwargs = f.get_concrete_function().structured_input_signature
    assert args[0] == {"w": gc.TensorSpec([None]), "b": gc.TensorSpec([])} and kwargs == {}
    assert args[2] == Pair(gc.TensorSpec([]), gc.TensorSpec([]))


@pytest.mark.parametrize("call,error,match", [
    (lambda f: f({"w": [1.0]}, [1, 2], Pair(1.0, 1.0)), TypeError,
     r"argument 'params' must be a dict with keys \['b', 'w'\]"),
    (lambda f: f({"w": [1.0], "b": 1.0}, [1], Pair(1.0, 1.0)), TypeError,
     "argument 'ks' must be a list or tuple of 2 items"),
    (lambda f: f({"w": [1.0], "b": 1.0}, [1, 2], (1.0, 1.0)), TypeError,
     "argument 'pair' must be Pair of 2 items"),
    (lambda f: f({"w": gc.constant([1, 2]), "b": 1.0}, [1, 2], Pair(1.0, 1.0)), TypeError,
     r"argument 'params\['w'\]' has dtype int32"),
    (lambda f: f({"w": [[1.0]], "b": 1.0}, [1, 2], Pair(1.0, 1.0)), ValueError,
     r"argument 'params\['w'\]' has shape \[1, 1\]"),
    (lambda f: f({"w": [1.0], "b": 1.0}, [1.5, 2], Pair(1.0, 1.0)), TypeError,
     r"argument 'ks\[0\]'=1.5 cannot be converted"),
])
def test_nested_signature_errors_name_the_leaf(call, error, match):
    with pytest.raises(error, match=match):
        call(make())


@pytest.mark.parametrize("bad,match", [
    (gc.TensorSpec([None]), "must be a list or tuple with one gc.TensorSpec"),
    ([[]], r"got \[\]"),
    ([{"a": 3}], "got 3"),
])
def test_bad_input_signatures(bad, match):
    with pytest.raises(TypeError, match=match):
        gc.function(lambda x: x, input_signature=bad)


def test_nested_signature_saves_and_loads(tmp_path):
    m = gc.Module()
    m.f = make()
    m.f({"w": [1.0, 2.0], "b": 0.5}, [1, 2], Pair(3.0, 4.0))
    gc.saved_model.save(m, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path))
    out = loaded.f({"w": gc.constant([1.0, 2.0, 3.0]), "b": 0.5}, [1, 2], Pair(3.0, 4.0))
    np.testing.assert_allclose(out.numpy(), eager([1, 2, 3], 0.5, 1, 2, 3, 4))
    with pytest.raises(TypeError, match="argument 'pair' must be Pair"):
        loaded.f({"w": [1.0], "b": 0.5}, [1, 2], (3.0, 4.0))
    with pytest.raises(ValueError, match="signature 's' takes a nest of TensorSpecs"):
        gc.saved_model.save(m, str(tmp_path / "sig"), signatures={"s": m.f})
