"""Distance in units in the last place (ulp) between float arrays, for accuracy tests."""
import numpy as np

_INT = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def _ordered(a):
    """Map floats to integers that are consecutive for consecutive floats (-0.0 == +0.0)."""
    it = _INT[a.dtype]
    i = a.view(it).astype(np.int64)
    return np.where(i < 0, np.int64(np.iinfo(it).min) - i, i)


def ulp_distance(actual, expected):
    """Elementwise number of representable floats between `actual` and `expected`.

    Both must have the same float dtype (round a higher-precision reference to it first, so the
    distance is to the correctly rounded result). Two nans are 0 apart; a nan against a number,
    or two infinities of opposite sign, count as 2**62 (never within any tolerance). inf is one
    ulp above the largest finite float, so overflow one step early counts as 1.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.dtype not in _INT:
        raise TypeError(f"ulp_distance: both arrays must be float32 or float64 of one dtype, "
                        f"got {actual.dtype} and {expected.dtype}; cast the reference first")
    a, e = np.broadcast_arrays(actual, expected)
    d = np.abs(_ordered(np.ascontiguousarray(a)) - _ordered(np.ascontiguousarray(e)))
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    d = np.where(nan_a & nan_e, 0, d)
    return np.where(nan_a != nan_e, np.int64(2) ** 62, d)


def max_ulp_error(actual, expected):
    """(largest ulp distance, index of the first element that has it); (0, None) when empty."""
    d = ulp_distance(actual, expected)
    if d.size == 0:
        return 0, None
    i = int(np.argmax(d))
    return int(d.flat[i]), np.unravel_index(i, d.shape)
