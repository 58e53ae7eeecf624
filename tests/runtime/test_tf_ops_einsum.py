"""gc.einsum as TF 2.21's tf.einsum: values against np.einsum and TF's literal results,
eagerly and compiled (numpy, auto, kernels forced), gradients against numerical
differences, hypothesis over shapes, and TF's error cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from tf_ops_helpers import agree, f32, forced, grad_of, numeric_grad

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij->", [(2, 3)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ji", [(2, 3)]), ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("i,i", [(3,), (3,)]),
    ("...,...->...", [(2,), ()]), ("i...->...", [(2, 3, 4)]), ("...i", [(2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("iij->ji", [(3, 3, 2)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("...i,...i->...", [(1, 3), (5, 3)]),
    ("abc,cd->", [(2, 3, 4), (4, 5)]), ("i,i->", [(0,), (0,)]),
    ("ij,kj->ikj", [(2, 3), (4, 3)]), ("iji->j", [(2, 3, 2)]), ("i j -> j i", [(2, 3)]),
    ("IJ->JI", [(2, 3)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
]


@pytest.mark.parametrize("eq, shapes", CASES)
def test_einsum_matches_numpy(eq, shapes):
    r = np.random.default_rng(len(eq))
    xs = [r.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(eq.replace(" ", ""), *xs)
    agree(lambda *a: gc.einsum(eq, *a), want.astype(np.float32), *xs, rtol=1e-5, atol=1e-5)


def test_einsum_literals_and_dtypes_as_tf():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # TF: tf.einsum('ji', x) (implicit output: labels sorted) is the transpose
    agree(lambda a: gc.einsum("ji", a), f32([[0, 3], [1, 4], [2, 5]]), x)
    # TF: int32 stays int32; tf.einsum('i,i', [1, 2], [3, 4]) is 11
    agree(lambda a, b: gc.einsum("i,i", a, b), np.int32(11), np.array([1, 2], np.int32),
          np.array([3, 4], np.int32))
    agree(lambda a: gc.einsum("ij->", a), np.float64(15.0), x.astype(np.float64))


def test_einsum_with_unknown_dims():
    sig = [gc.TensorSpec([None, 3]), gc.TensorSpec([3, None])]
    r = np.random.default_rng(1)
    a, b = r.standard_normal((2, 3)).astype(np.float32), \
        r.standard_normal((3, 4)).astype(np.float32)
    agree(lambda x, y: gc.einsum("ij,jk->ki", x, y), (a @ b).T, a, b, signature=sig,
          rtol=1e-5)
    agree(lambda x: gc.einsum("ii->i", x), np.diag(a @ a.T), a @ a.T,
          signature=[gc.TensorSpec([None, None])])


def test_einsum_ellipsis_broadcast_with_unknown_dims():
    # eagerly [2, 1, 3] and [4, 3] broadcast their ellipsis dims to [2, 4] (TF and numpy);
    # compiled with those dims unknown, the matmul batch dims broadcast the same way
    r = np.random.default_rng(2)
    a, b = r.standard_normal((2, 1, 3)).astype(np.float32), \
        r.standard_normal((4, 3)).astype(np.float32)
    for eq, want in (("...i,...i->...", np.einsum("...i,...i->...", a, b)),
                     ("...ij,...jk->...ik", np.einsum("...ij,...jk->...ik", a, b.T))):
        bb = b if eq.startswith("...i,") else b.T
        agree(lambda x, y: gc.einsum(eq, x, y), want, a, bb, rtol=1e-5, atol=1e-6,
              signature=[gc.TensorSpec([None, None, None]), gc.TensorSpec([None, None])])


def test_einsum_unequal_label_dims_known_at_run_time_raise():
    # eagerly a ValueError (TF: "Expected dimension 3 ... but got dimension 2"); compiled
    # with unknown dims, b of 3 and 2 (j of 2 and 3: equal element counts) once reshaped
    # silently into a [3, 2, 4] result
    a, b = np.ones((3, 2, 2), np.float32), np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="label 'b'"):
        gc.einsum("bij,bjk->bik", a, b)
    f = gc.function(lambda x, y: gc.einsum("bij,bjk->bik", x, y),
                    input_signature=[gc.TensorSpec([None, None, None])] * 2)
    with pytest.raises(gc.errors.InvalidArgumentError, match="label 'b' must have one size"):
        f(a, b)
    with pytest.raises(gc.errors.InvalidArgumentError, match="label 'b'"):
        f(np.ones((1, 2, 3), np.float32), np.ones((4, 3, 2), np.float32))   # no broadcast
    np.testing.assert_allclose(f(a, np.ones((3, 2, 4), np.float32)).numpy(),
                               np.full((3, 2, 4), 2, np.float32))


@pytest.mark.parametrize("eq, shapes, k", [
    ("ij,jk->ik", [(2, 3), (3, 4)], 0), ("ij,jk->ik", [(2, 3), (3, 4)], 1),
    ("ii->i", [(3, 3)], 0), ("bij,bkj->bik", [(2, 2, 3), (2, 4, 3)], 1),
    ("...i,...i->...", [(1, 3), (4, 3)], 0), ("ij,j->", [(2, 3), (3,)], 1)])
def test_einsum_gradients_match_numerical_differences(eq, shapes, k):
    r = np.random.default_rng(7)
    xs = [r.standard_normal(s) for s in shapes]
    out = np.einsum(eq, *xs)
    w = r.standard_normal(out.shape)

    def fn(v):
        args = [gc.constant(x) for x in xs]
        args[k] = v
        return gc.einsum(eq, *args)
    want = numeric_grad(fn, xs[k], w)
    for got in grad_of(fn, xs[k], weights=gc.constant(w)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(0, 3), st.integers(1, 3), st.integers(0, 3),
       st.integers(0, 2 ** 31 - 1))
def test_einsum_batched_matmul_over_shapes(b, i, j, k, seed):
    r = np.random.default_rng(seed)
    x = r.standard_normal((b, i, j)).astype(np.float32)
    y = r.standard_normal((b, j, k)).astype(np.float32)
    agree(lambda p, q: gc.einsum("bij,bjk->bki", p, q), np.einsum("bij,bjk->bki", x, y),
          x, y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eq, shapes, error, words", [
    ("ij,jk->ik", [(2, 3), (4, 4)], ValueError, "label 'j' has size 3"),  # TF: Expected dim
    ("i,i->i", [(2,), (3,)], ValueError, "label 'i' has size 2"),
    ("ij,ij->ij", [(2, 3), (1, 3)], ValueError, "label 'i'"),          # labels never broadcast
    ("ij->k", [(2, 3)], ValueError, "label k not present in the input"),
    ("ij->ii", [(2, 3)], ValueError, "appearing more than once"),
    ("ij", [(2, 3), (2, 3)], ValueError, 'Got 2 inputs for equation "ij", expecting 1'),
    ("ijk", [(2, 3)], ValueError, "has rank 2"),
    ("i1", [(2, 3)], ValueError, "invalid subscript"),
])
def test_einsum_errors_as_tf(eq, shapes, error, words):
    for fn in (gc.einsum, gc.function(gc.einsum)):
        with pytest.raises(error, match=words):
            fn(eq, *[gc.ones(s) for s in shapes])


def test_einsum_dtype_errors():
    with pytest.raises(TypeError, match="different dtypes"):   # TF: InvalidArgumentError
        gc.einsum("ij,jk->ik", gc.ones([2, 3]), gc.ones([3, 4], gc.int32))
    with pytest.raises(TypeError, match="numeric"):            # TF: no bool Einsum kernel
        gc.einsum("ij->ji", gc.constant([[True]]))


def test_einsum_with_kernels_forced(numba_forced):
    r = np.random.default_rng(3)
    a = r.standard_normal((2, 3, 4)).astype(np.float32)
    b = r.standard_normal((2, 5, 4)).astype(np.float32)
    want = np.einsum("bqd,bkd->bqk", a * 2 + 1, b) * 0.5 - 1
    forced(numba_forced, lambda x, y: gc.einsum("bqd,bkd->bqk", x * 2.0 + 1.0, y) * 0.5 - 1.0,
           want, a, b, rtol=1e-5)
