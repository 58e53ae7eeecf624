"""Differential harness: a function run in plain Python on numpy values and through
@gc.function on tensors must give the same value, dtype and shape."""
import numpy as np

import graphc as gc


def to_graph_args(args):
    """numpy arrays and numpy scalars become tensors; Python values stay Python."""
    return [gc.constant(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args]


def as_expected(value):
    """A plain-Python result in TF's dtype rules (Python int -> int32, float -> float32)."""
    if isinstance(value, (tuple, list)):
        return type(value)(as_expected(v) for v in value)
    if isinstance(value, gc.Tensor):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    return gc.constant(value).numpy()


def assert_same(got, expected, where=""):
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), \
            f"{where}: structure {got!r} vs {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]")
        return
    got = got.numpy() if isinstance(got, gc.Tensor) else np.asarray(got)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype} vs {expected.dtype}"
    assert got.shape == expected.shape, f"{where}: shape {got.shape} vs {expected.shape}"
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=where)


def check(fn, *args):
    """Run `fn` both ways on `args` and compare."""
    expected = as_expected(fn(*args))
    got = gc.function(fn)(*to_graph_args(args))
    assert_same(got, expected, fn.__name__)
    return got


def marker_line(path, marker):
    """The line number in `path` of the line ending with `# <marker>`."""
    with open(path) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return i
    raise AssertionError(marker)
