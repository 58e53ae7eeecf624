"""ConcreteFunction as in TF: structured_input_signature names a top-level tensor
argument's spec after the argument (or keeps the name it was given), and a concrete
function takes its tensor arguments by name too (`cf(x=t)`)."""
import numpy as np
import pytest

import graphc as gc


@gc.function
def affine(x, n, y, *, z):
    return x * n + y * z


def concrete():
    return affine.get_concrete_function(gc.TensorSpec([2], gc.float32), 3,
                                        gc.TensorSpec([], gc.float32),
                                        z=gc.TensorSpec([], gc.float32))


def test_specs_are_named_after_the_arguments():
    args, kwargs = concrete().structured_input_signature
    assert [a.name for a in args if isinstance(a, gc.TensorSpec)] == ["x", "y"]
    assert args[1] == 3 and kwargs["z"].name == "z"
    # a spec without a name still compares equal (TensorSpec([2]) is the spec of 'x')
    assert args == (gc.TensorSpec([2], gc.float32), 3, gc.TensorSpec([], gc.float32))
    assert args[0] == gc.TensorSpec([2], gc.float32, name="x")
    assert args[0] != gc.TensorSpec([2], gc.float32, name="other")
    assert args[0] != gc.TensorSpec([3], gc.float32)
    assert len({gc.TensorSpec([2], gc.float32), args[0]}) == 1      # hash agrees with ==


def test_given_spec_names_and_input_signature_names():
    @gc.function
    def f(x):
        return x + 1
    cf = f.get_concrete_function(gc.TensorSpec([None], gc.float32, name="inp"))
    assert cf.structured_input_signature[0][0].name == "inp"

    @gc.function(input_signature=[gc.TensorSpec([None], gc.float32),
                                  gc.TensorSpec([], gc.int32)])
    def g(a, b):
        return a * gc.cast(b, gc.float32)
    g(np.ones(2, np.float32), 2)
    args, _ = g.get_concrete_function().structured_input_signature
    assert [s.name for s in args] == ["a", "b"]


def test_concrete_function_takes_tensor_arguments_by_name():
    cf = concrete()
    x, y, z = gc.constant([1.0, 2.0]), gc.constant(1.0), gc.constant(2.0)
    want = np.array([5.0, 8.0], np.float32)
    for call in (lambda: cf(x, y, z), lambda: cf(x=x, y=y, z=z), lambda: cf(x, z=z, y=y),
                 lambda: cf(x, y, z=z)):
        np.testing.assert_array_equal(call().numpy(), want)


@pytest.mark.parametrize("kwargs,match", [
    ({"x": 1, "y": 1}, r"missing argument\(s\) \['z'\]"),
    ({"x": 1, "y": 1, "z": 1, "w": 1}, "unexpected keyword argument\\(s\\) 'w'"),
    ({"n": 1}, "unexpected keyword argument\\(s\\) 'n'.*'x', 'y', 'z'.*baked in"),
])
def test_bad_keywords_name_the_tensor_arguments(kwargs, match):
    with pytest.raises(TypeError, match=match):
        concrete()(**kwargs)


def test_get_concrete_function_checks_specs_against_the_input_signature():
    """TF: get_concrete_function(spec) on a function with an input_signature raises when the
    spec does not fit it (graphc returned the signature's trace for any spec)."""
    @gc.function(input_signature=[gc.TensorSpec([None, 2], gc.float32)])
    def f(x):
        return x * 2.0
    cf = f.get_concrete_function()
    assert f.get_concrete_function(gc.TensorSpec([None, 2], gc.float32)) is cf
    assert f.get_concrete_function(gc.TensorSpec([5, 2], gc.float32)) is cf   # fits
    assert f.get_concrete_function(gc.ones([3, 2])) is cf
    with pytest.raises(TypeError, match=r"argument 'x'.*float64"):
        f.get_concrete_function(gc.TensorSpec([None, 2], gc.float64))
    with pytest.raises(ValueError, match=r"argument 'x'.*\[None, 3\]"):
        f.get_concrete_function(gc.TensorSpec([None, 3], gc.float32))
    with pytest.raises(ValueError, match="argument 'x'"):
        f.get_concrete_function(gc.TensorSpec([2], gc.float32))
    assert f.tracing_count == 1


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_concrete_function_called_inside_a_trace(backend):
    """As a tf ConcreteFunction, one can be called inside another compiled function (its ops
    join that trace, variables included); graphc ran it on the symbolic inputs' missing
    values and failed with 'unsupported operand type(s) for *: NoneType'."""
    v = gc.Variable(2.0)

    @gc.function
    def inner(x):
        s = x * v
        for _ in gc.range(2):
            s = s + 1.0
        return s
    cf = inner.get_concrete_function(gc.TensorSpec([], gc.float32))
    outer = gc.function(lambda x: cf(x) * 3.0, backend=backend)
    assert outer(gc.constant(2.0)).numpy() == 18.0
    v.assign(1.0)
    assert outer(gc.constant(2.0)).numpy() == 12.0      # reads the variable on each call

    @gc.function(backend=backend)
    def grads(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = cf(x)
        return tape.gradient(y, [x, v])
    np.testing.assert_array_equal([g.numpy() for g in grads(gc.constant(3.0))], [1.0, 3.0])


def test_concrete_function_under_an_eager_tape():
    """An eager GradientTape records a ConcreteFunction's call (graphc gave None)."""
    v = gc.Variable(2.0)
    cf = gc.function(lambda x: x * x * v).get_concrete_function(gc.TensorSpec([], gc.float32))
    x = gc.constant(3.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = cf(x)
    assert y.numpy() == 18.0
    np.testing.assert_array_equal([g.numpy() for g in tape.gradient(y, [x, v])], [12.0, 9.0])
    assert cf(gc.constant(1.0)).numpy() == 2.0           # a plain eager call as before


def test_full_call_with_the_baked_python_values_as_tf():
    """TF's concrete functions also take every positional argument of the trace, Python
    values included (they must be the traced ones); the tensor-only call stays."""
    @gc.function
    def scale(x, k):
        return x * k
    cf = scale.get_concrete_function(gc.TensorSpec([], gc.float32), 3.0)
    assert float(cf(gc.constant(2.0))) == 6.0
    assert float(cf(gc.constant(2.0), 3.0)) == 6.0
    with pytest.raises(TypeError, match=r"argument 1 was traced as the Python value 3.0.*4.0"):
        cf(gc.constant(2.0), 4.0)
    with pytest.raises(TypeError, match="Python value 3.0"):
        cf(gc.constant(2.0), 3)                  # another type is another trace, as a key
    # (x, n=3, y) with z by keyword: three positional tensors are the tensor-only form
    np.testing.assert_array_equal(concrete()(gc.constant([1.0, 2.0]), 3, gc.constant(1.0),
                                             z=gc.constant(2.0)).numpy(), [5.0, 8.0])


def test_structured_outputs_are_specs_in_the_returned_nest():
    @gc.function
    def f(x):
        return {"a": x, "b": (gc.reduce_sum(x), None)}
    outs = f.get_concrete_function(gc.TensorSpec([None, 2], gc.float32)).structured_outputs
    assert outs == {"a": gc.TensorSpec([None, 2], gc.float32),
                    "b": (gc.TensorSpec([], gc.float32), None)}


def test_calling_the_function_with_a_spec_is_a_clear_error():
    """A TensorSpec traces through get_concrete_function; passed to the call itself it has
    no value (TF: ValueError). graphc ran the trace with that input missing."""
    @gc.function(backend="numpy")
    def f(x, ys):
        return x * 2.0
    spec = gc.TensorSpec([2], gc.float32)
    with pytest.raises(ValueError, match=r"argument 'x' is \(or holds\) a gc.TensorSpec"):
        f(spec, [])
    with pytest.raises(ValueError, match=r"argument 'ys' .*get_concrete_function"):
        f(gc.constant([1.0, 2.0]), [spec])
