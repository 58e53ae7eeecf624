"""Flat fast-trig kernels (codegen_chunks): one flat loop over a call's blocks of chunks, and
a redo that rewrites only the chunks where a trig argument was beyond the fast range."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cpu import codegen_chunks, groups
from graphc.kernels.cpu.codegen_parallel import ALL
from agreement_helpers import agree

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py

CHUNK = codegen_chunks.CHUNK


def _chain(a):
    y = gc.tanh(1.5 * a + 0.25) * gc.exp(-a * a) + 0.5 * gc.sin(a)
    return [y, gc.cos(a * 3.0) - y]         # one group, two outputs


def _kernel(fn, x):
    """The checked (chunked) kernel that `fn` ran on x, and its outputs."""
    compiled = gc.function(fn, backend="numba")
    out = [t.numpy() for t in compiled(gc.constant(x))]
    plan = compiled.get_concrete_function(gc.constant(x)).graph._numba_plan
    (kern,) = [k for r in plan.groups for k in r.used.values()]
    assert kern.fast is not None and kern.checked
    return compiled, kern, out


def _args(compiled, kern, x):
    """The arguments the fast variant gets for x, without the outer range."""
    seen = []
    fast, par = kern.fast

    def spy(*args):
        seen.append(args[:-2])
        return fast(*args)
    kern.fast = (spy, par)
    try:
        compiled(gc.constant(x))
    finally:
        kern.fast = (fast, par)
    return seen[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_variant_writes_only_its_chunks(dtype):
    """The serial fast variant over outer iterations [lo, hi) (a parallel block) writes
    exactly the elements of those chunks, the tail chunk included, and nothing beyond."""
    n = 3 * CHUNK + 17
    x = np.random.default_rng(1).uniform(-6, 6, n).astype(dtype)
    compiled, kern, want = _kernel(_chain, x)
    fast = kern.fast[0]
    args = _args(compiled, kern, x)
    nin = len(kern.spec.group.inputs)
    for lo, hi, first, last in [(0, ALL, 0, n), (1, 3, CHUNK, 3 * CHUNK),
                                (3, ALL, 3 * CHUNK, n), (2, 2, 0, 0), (4, ALL, 0, 0),
                                (9, 12, 0, 0)]:
        outs = [np.full(n, 7.0, dtype) for _ in want]
        assert fast(*args[:nin], *outs, *args[nin + len(outs):], lo, hi) == 0
        for got, ref in zip(outs, want):
            np.testing.assert_array_equal(got[first:last], ref[first:last])
            assert (np.delete(got, np.s_[first:last]) == 7.0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("par", [False, True])
def test_missed_chunks_are_rewritten_and_the_rest_kept(monkeypatch, all_cores_free,
                                                       dtype, par):
    """Huge arguments in chunks 1 and 3 (the tail): those two chunks are rewritten with the
    whole-range trig (eager's values), every other element is bit for bit what the kernel
    computes on the same chunk without them; NaN, inf and -0.0 pass through."""
    monkeypatch.setattr(groups, "PAR_MIN", 0 if par else 1 << 62)
    n = 3 * CHUNK + 100
    rng = np.random.default_rng(2)
    x = rng.uniform(-8, 8, n).astype(dtype)
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    compiled, kern, clean = _kernel(_chain, x)
    huge = x.copy()
    big = 2.0 ** 17 if dtype == "float32" else 2.0 ** 47
    huge[CHUNK + 5] = big
    huge[CHUNK + 9] = -1e30 if dtype == "float32" else -1e300
    huge[n - 2] = 3 * big
    before = kern.slow_chunks
    agree(_chain, huge)                       # eager and the numpy backend
    got = [t.numpy() for t in compiled(gc.constant(huge))]
    assert kern.slow_chunks - before >= 2
    before = kern.slow_chunks
    got = [t.numpy() for t in compiled(gc.constant(huge))]
    assert kern.slow_chunks - before == 2     # one call: chunks 1 and 3, not 0 and 2
    keep = np.ones(n, bool)
    keep[CHUNK:2 * CHUNK] = keep[3 * CHUNK:] = False
    eager = [t.numpy() for t in _chain(gc.constant(huge))]
    for g, c, e in zip(got, clean, eager):
        np.testing.assert_array_equal(g[keep], c[keep])
        assert np.isfinite(g[CHUNK + 5]) and np.isfinite(g[n - 2])
        tol = 2e-6 if dtype == "float32" else 1e-13
        np.testing.assert_allclose(g[~keep], e[~keep], rtol=tol, atol=tol, equal_nan=True)


def test_chunked_kernel_on_2d_contiguous_input():
    """2-d contiguous inputs run the flat kernel on their 1-d view, huge arguments too."""
    x = np.random.default_rng(3).uniform(-5, 5, (37, 300)).astype(np.float32)
    agree(_chain, x)
    x[20, 7] = 1e25
    agree(_chain, x)


def _redone():
    from graphc.kernels.cpu import kernel as cpu_kernel
    return sum(k.redone + k.slow_chunks for k in cpu_kernel._KERNELS.values() if k.fast)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [
    lambda a, r: gc.sin(a * r) + gc.cos(a),                          # broadcast: loop nest
    lambda a, r: gc.reduce_sum(gc.sin(a) * r, axis=1),               # row reduction
    lambda a, r: gc.reduce_sum(gc.cos(a * 2.0) - r, axis=0),         # column layout
    lambda a, r: gc.transpose(a) * gc.tan(gc.transpose(a) * 0.5) + r[0, :33]],  # strided
    ids=["broadcast", "rows", "columns", "strided"])
def test_non_flat_fast_trig_flags_misses(dtype, fn):
    """Fast-trig kernels OR their checks into bools: nothing redone on ordinary inputs; one
    huge argument anywhere (first, middle or last element) redoes the call (or its chunk)."""
    rng = np.random.default_rng(6)
    x = rng.uniform(-5, 5, (33, 70)).astype(dtype)
    row = rng.uniform(-1, 1, (1, 70)).astype(dtype)
    before = _redone()
    agree(fn, x, row)
    assert _redone() == before
    big = 2.0 ** 17 if dtype == "float32" else 2.0 ** 47
    for where in [(0, 0), (16, 35), (32, 69)]:
        y = x.copy()
        y[where] = -4 * big        # every trig argument here is beyond the range
        before = _redone()
        agree(fn, y, row)
        assert _redone() > before
