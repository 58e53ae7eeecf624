"""Property tests of the summary encodings: PNG round trip, histogram buckets."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from graphc.summary import encode
from tensorboard.util import tensor_util
from .events import decode_png


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.uint8, st.tuples(st.integers(1, 9), st.integers(1, 9),
                                      st.sampled_from([1, 3, 4]))))
def test_png_round_trip(pixels):
    np.testing.assert_array_equal(decode_png(encode.png(pixels)), pixels)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 50),
                  elements=st.floats(-1e6, 1e6) | st.sampled_from([np.nan, np.inf, -np.inf])),
       st.integers(1, 12))
def test_histogram_counts_every_finite_value_once(data, buckets):
    summary = encode.histogram("h", data, buckets, "")
    h = tensor_util.make_ndarray(summary.value[0].tensor)
    finite = data[np.isfinite(data)]
    assert h.shape == (buckets, 3)
    assert h[:, 2].sum() == finite.size
    if finite.size and finite.min() < finite.max():
        np.testing.assert_allclose(h[0, 0], finite.min())
        np.testing.assert_allclose(h[-1, 1], finite.max())
        np.testing.assert_allclose(h[:-1, 1], h[1:, 0])
        # every value is counted in the bucket whose edges hold it (up to rounding at edges)
        eps = 1e-9 * (finite.max() - finite.min())
        for i in range(1, buckets):
            before = h[:i, 2].sum()
            assert (finite < h[i, 0] - eps).sum() <= before <= (finite <= h[i, 0] + eps).sum()
