"""Shared checks for op tests: eager vs numpy, traced (numpy backend) vs eager, errors in both."""
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc

SMALL = dict(min_dims=0, max_dims=3, min_side=0, max_side=4)


def traced(fn, *arrays):
    """Run fn inside a fresh @gc.function (numpy backend) on tensors made from `arrays`."""
    f = gc.function(lambda *xs: fn(*xs), backend="numpy")
    return f(*[gc.constant(a) for a in arrays])


def eager(fn, *arrays):
    return fn(*[gc.constant(a) for a in arrays])


def assert_same(got, want, rtol=1e-6, atol=0.0):
    """`got` (a tensor, None, or a list/tuple of them) equals `want` (array-likes where got
    has tensors, None where got has None) in value, dtype and shape."""
    if isinstance(want, (list, tuple)) or isinstance(got, (list, tuple)):
        assert isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)) and \
            len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
        return
    if want is None:
        assert got is None
        return
    assert isinstance(got, gc.Tensor), got
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got.numpy(), want)


def check(fn, want, *arrays, rtol=1e-6, atol=0.0):
    """fn on tensors of `arrays` matches `want` eagerly, and traced matches too."""
    assert_same(eager(fn, *arrays), want, rtol, atol)
    assert_same(traced(fn, *arrays), want, rtol, atol)


def raises_both(fn, exc, must_name, *arrays):
    """fn raises `exc` eagerly and while tracing; the message names every string in must_name."""
    for run in (eager, traced):
        with pytest.raises(exc) as info:
            run(fn, *arrays)
        for word in must_name:
            assert word in str(info.value), (word, str(info.value))


def out_shape(fn, *specs):
    """Static output shape(s) of fn traced with TensorSpecs."""
    f = gc.function(fn, input_signature=list(specs), backend="numpy")
    outs = f.get_concrete_function().outputs
    return [tuple(o.shape) for o in outs] if len(outs) > 1 else tuple(outs[0].shape)


def arrays(dtype, shape=None, **kw):
    """Hypothesis arrays of small finite values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        elements = st.floats(-10, 10, width=32)
    elif dtype.kind == "b":
        elements = st.booleans()
    else:
        elements = st.integers(-20, 20)
    shape = hnp.array_shapes(**{**SMALL, **kw}) if shape is None else shape
    return hnp.arrays(dtype, shape, elements=elements)


def axes_for(ndim):
    """Strategy: None, a single axis (maybe negative) or a tuple of distinct axes."""
    if ndim == 0:
        return st.just(None)
    single = st.integers(-ndim, ndim - 1)
    many = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
    return st.one_of(st.just(None), single, many)
