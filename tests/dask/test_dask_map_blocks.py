"""graphc.dask.map_blocks on the in-process schedulers (sync, threads) and the process pool,
against numpy on the same data."""
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import graphc as gc  # noqa: E402
import graphc.dask as gd  # noqa: E402
from graphc.dask import payload  # noqa: E402
from graphc.errors import InvalidArgumentError  # noqa: E402


@gc.function
def chain(x, y):
    return gc.exp(-x) * y + gc.sqrt(gc.abs(x)) - 0.5


def chain_np(x, y):
    return np.exp(-x) * y + np.sqrt(np.abs(x)) - np.float32(0.5)


def _data(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_uneven_chunks_two_inputs(scheduler):
    x, y = _data((11, 7)), _data((11, 7), 1)
    r = gd.map_blocks(chain, da.from_array(x, chunks=(4, 3)), da.from_array(y, chunks=(5, 2)))
    assert r.dtype == np.float32 and r.shape == (11, 7)
    np.testing.assert_allclose(r.compute(scheduler=scheduler), chain_np(x, y), rtol=2e-6,
                               atol=1e-6)


def test_numba_kernels_run_in_blocks(numba_forced):
    x, y = _data((64, 9)), _data((64, 9), 1)
    r = gd.map_blocks(chain, da.from_array(x, chunks=(20, 9)), da.from_array(y, chunks=(20, 9)),
                      backend="numba")
    with numba_forced.expect(kernels=True):
        got = r.compute(scheduler="threads")
    np.testing.assert_allclose(got, chain_np(x, y), rtol=2e-6, atol=1e-6)


def test_one_trace_serves_uneven_blocks():
    f = gc.function(lambda x: x * 2.0)
    r = gd.map_blocks(f, da.from_array(_data((10, 6)), chunks=(3, 4)))
    assert f.tracing_count == 1
    (spec,) = f.concrete_functions()[0].graph.inputs
    assert spec.type.shape == (None, None)
    r.compute(scheduler="sync")


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 13), cols=st.integers(1, 6), rc=st.integers(1, 5),
       cc=st.integers(1, 4))
def test_random_chunkings_match_numpy(rows, cols, rc, cc):
    x, y = _data((rows, cols), rows), _data((cols,), cols)     # y broadcasts along rows
    fn = gc.function(chain.python_function)      # a fresh trace cache per example
    r = gd.map_blocks(fn, da.from_array(x, chunks=(rc, cc)), da.from_array(y, chunks=cc),
                      backend="numpy")
    np.testing.assert_allclose(r.compute(scheduler="sync"), chain_np(x, y), rtol=2e-6,
                               atol=1e-6)


def test_row_reduction_drops_the_single_block_axis():
    x = _data((23, 5))
    f = gc.function(lambda x: gc.reduce_sum(x * x, axis=1))
    r = gd.map_blocks(f, da.from_array(x, chunks=(6, 5)))
    assert r.chunks == ((6, 6, 6, 5),)
    np.testing.assert_allclose(r.compute(scheduler="threads"), (x * x).sum(1), rtol=1e-5)
    # and a whole-array loss is the user's dask reduction on the result
    loss = r.mean().compute(scheduler="sync")
    np.testing.assert_allclose(loss, (x * x).sum(1).mean(), rtol=1e-5)


def test_row_reduction_needs_one_block_along_the_reduced_axis():
    f = gc.function(lambda x: gc.reduce_sum(x, axis=1))
    with pytest.raises(ValueError, match="rechunk"):
        gd.map_blocks(f, da.from_array(_data((8, 6)), chunks=(4, 3)))
    r = gd.map_blocks(f, da.from_array(_data((8, 6)), chunks=(4, 3)), drop_axis=1)
    np.testing.assert_allclose(r.compute(scheduler="sync"), _data((8, 6)).sum(1), rtol=1e-5)


def test_slicing_changes_each_block_shape():
    x = _data((10, 7))
    r = gd.map_blocks(gc.function(lambda x: x[1:, :2]), da.from_array(x, chunks=(4, 3)))
    expect = np.concatenate([np.concatenate([x[i:i + 4][1:, j:j + 3][:, :2]
                                             for j in range(0, 7, 3)], 1)
                             for i in range(0, 10, 4)], 0)
    assert r.chunks == ((3, 3, 1), (2, 2, 1))
    np.testing.assert_array_equal(r.compute(scheduler="sync"), expect)


def _wrap(x):
    return x * 65536 + 7


def _third(x):
    return x / 3.0


def _positive(x):
    return x > 0.0


def _half(x):
    return gc.cast(x, gc.float32) * 0.5


@pytest.mark.parametrize("dtype,fn,ref", [
    (np.int32, _wrap, lambda x: x * np.int32(65536) + np.int32(7)),
    (np.float64, _third, lambda x: x / 3.0),
    (np.float32, _positive, lambda x: x > 0),
    (np.int64, _half, lambda x: x.astype(np.float32) * np.float32(0.5)),
])
def test_dtypes_as_numpy(dtype, fn, ref):
    x = (np.arange(-40, 41).reshape(9, 9) * 977).astype(dtype)     # int32 wraps as numpy's
    r = gd.map_blocks(gc.function(fn), da.from_array(x, chunks=(4, 5)))
    with np.errstate(over="ignore"):
        expect = ref(x)
    assert r.dtype == expect.dtype and r._meta.dtype == expect.dtype
    np.testing.assert_array_equal(r.compute(scheduler="threads"), expect)


def test_wrong_chunks_given_are_an_error_not_a_wrong_array():
    x = da.from_array(_data((8, 6)), chunks=(4, 3))
    f = gc.function(lambda x: x[:, :2])
    with pytest.raises(gc.errors.GraphcError, match=r"block \(\d, \d\).*shape \[4, 2\].*\[4, 3\]"):
        gd.map_blocks(f, x, chunks=((4, 4), (3, 3))).compute(scheduler="sync")
    with pytest.raises(ValueError, match="has 1 axes"):
        gd.map_blocks(f, x, chunks=((4, 4),))
    r = gd.map_blocks(f, x, chunks=((4, 4), (2, 2)))
    np.testing.assert_array_equal(r.compute(scheduler="sync"),
                                  np.concatenate([_data((8, 6))[:, :2], _data((8, 6))[:, 3:5]], 1))


def _first_task_bytes(r):
    """Pickled size of the output's block-0 task, as distributed sends each task alone."""
    graph = dict(r.__dask_graph__())
    return len(pickle.dumps(graph[(r.name,) + (0,) * r.ndim]))


def test_a_task_does_not_grow_with_the_block_count():
    f = gc.function(lambda x: x * 2.0)
    small, big = (gd.map_blocks(f, da.ones((n * 7 - 2, 3), dtype=np.float32, chunks=(7, 3)))
                  for n in (4, 20_000))
    assert _first_task_bytes(big) - _first_task_bytes(small) <= 16    # sizes' int widths
    # uneven chunks along an axis are carried as they are, and still checked per block
    x = da.from_array(_data((12, 6)), chunks=((2, 5, 3, 2), 3))
    with pytest.raises(gc.errors.GraphcError, match=r"block \(3, \d\).*shape \[2, 2\].*\[3, 2\]"):
        gd.map_blocks(gc.function(lambda x: x[:, :2]), x,
                      chunks=((2, 5, 3, 3), (2, 2))).compute(scheduler="sync")
    # even chunks: the last block's size is checked too
    y = da.from_array(_data((10, 2)), chunks=(3, 2))
    with pytest.raises(gc.errors.GraphcError, match=r"block \(3, 0\).*shape \[1, 2\].*\[2, 2\]"):
        gd.map_blocks(gc.function(lambda x: x + 1.0), y,
                      chunks=((3, 3, 3, 2), (2,))).compute(scheduler="sync")


def test_transposed_and_broadcast_blocks():
    x, y = _data((7, 5)), _data((1, 7), 2)
    r = gd.map_blocks(chain, da.from_array(x, chunks=(3, 2)).T, da.from_array(y, chunks=(1, 2)))
    np.testing.assert_allclose(r.compute(scheduler="sync"), chain_np(x.T, y), rtol=2e-6,
                               atol=1e-6)


def test_python_keywords_are_baked_into_the_trace():
    @gc.function
    def scale(x, factor):
        return x * factor
    x = _data((6, 4))
    r = gd.map_blocks(scale, da.from_array(x, chunks=3), factor=3.0)
    np.testing.assert_allclose(r.compute(scheduler="sync"), x * 3.0, rtol=1e-6)
    with pytest.raises(TypeError, match="keyword 'factor' is an array"):
        gd.map_blocks(scale, da.from_array(x, chunks=3), factor=x)


@gc.function
def checked_sqrt(x):
    assert gc.reduce_all(x >= 0.0), "negative input"
    return gc.sqrt(x)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_bad_block_raises_the_graphc_error_naming_the_block(scheduler):
    x = np.abs(_data((8, 6)))
    x[5, 4] = -1.0                      # in block (1, 1) of 4x3 chunks
    r = gd.map_blocks(checked_sqrt, da.from_array(x, chunks=(4, 3)))
    with pytest.raises(InvalidArgumentError, match=r"block \(1, 1\).*negative input"):
        r.compute(scheduler=scheduler)


def test_bad_calls_are_clear_errors():
    x = da.from_array(_data((6, 4)), chunks=3)
    with pytest.raises(TypeError, match="one tensor per block"):
        gd.map_blocks(gc.function(lambda x: (x, x)), x)
    v = gc.Variable(np.float32(2.0))
    with pytest.raises(TypeError, match="reads gc.Variables"):
        gd.map_blocks(gc.function(lambda x: x * v), x)
    with pytest.raises(ValueError, match="new_axis"):
        gd.map_blocks(gc.function(lambda x: gc.expand_dims(x, 0)), x)
    with pytest.raises(TypeError, match="at least one array"):
        gd.map_blocks(chain)


def test_the_graph_holds_bytes_not_the_users_function():
    @gc.function
    def marked(x):
        "MARKER_ONLY_IN_PYTHON_SOURCE_93817"
        return x + 1.0
    r = gd.map_blocks(marked, da.from_array(_data((6, 4)), chunks=3))
    import cloudpickle
    blob = cloudpickle.dumps(dict(r.__dask_graph__()))
    assert b"MARKER_ONLY_IN_PYTHON_SOURCE_93817" not in blob
    _, digest, _ = payload.dumps(marked.concrete_functions()[0])
    assert digest.encode() in blob and b"graphc.dask.blocks" in blob and b"BlockFunction" in blob
    runner = gd.blocks.BlockFunction(b"bytes", digest, "auto", "marked", 0, ((3, 3), (3, 1)))
    assert pickle.loads(pickle.dumps(runner)).__dict__ == runner.__dict__


def test_processes_scheduler():
    x, y = _data((9, 5)), _data((9, 5), 1)
    r = gd.map_blocks(chain, da.from_array(x, chunks=(4, 5)), da.from_array(y, chunks=(4, 5)),
                      backend="numpy")
    with dask.config.set(num_workers=2):
        got = r.compute(scheduler="processes")
    np.testing.assert_allclose(got, chain_np(x, y), rtol=2e-6, atol=1e-6)


def test_payload_is_checked_and_loaded_once():
    cf = chain.get_concrete_function(gc.TensorSpec([None], gc.float32),
                                     gc.TensorSpec([None], gc.float32))
    data, digest, variables = payload.dumps(cf)
    assert variables == []
    payload.clear_cache()
    a = payload.load(data, digest, "numpy")
    assert payload.load(data, digest, "numpy") is a and payload.cache_size() == 1
    x, y = _data((5,)), _data((5,), 1)
    np.testing.assert_allclose(a.run([x, y])[0], chain_np(x, y), rtol=2e-6)
    with pytest.raises(gc.errors.GraphcError, match="does not match its digest"):
        payload.load(data + b"x", digest)
    bad = bytearray(data)
    bad[20] ^= 0xFF
    import hashlib
    with pytest.raises(gc.errors.GraphcError, match="graphc.dask payload"):
        payload.load(bytes(bad), hashlib.sha256(bytes(bad)).hexdigest())
    with pytest.raises(gc.errors.GraphcError, match="not a graphc.dask payload"):
        payload.load(b"junk", hashlib.sha256(b"junk").hexdigest())


def test_big_constants_travel_in_the_payload():
    table = np.linspace(-1, 1, 3000).astype(np.float32)      # over the inline limit
    f = gc.function(lambda x: x * gc.constant(table))
    x = _data((4, 3000))
    r = gd.map_blocks(f, da.from_array(x, chunks=(3, 3000)))
    np.testing.assert_allclose(r.compute(scheduler="sync"), x * table, rtol=1e-6)


def test_importing_graphc_does_not_import_dask():
    code = ("import sys, graphc; assert 'dask' not in sys.modules, 'dask imported'; "
            "import graphc.dask; assert 'dask.array' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
