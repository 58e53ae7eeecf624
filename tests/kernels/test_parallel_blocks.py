"""codegen_parallel: a kernel's parallel variant runs its serial variant's machine code on
one block of the outer range per thread (numba's thread pool, no prange compile)."""
import numba
import numpy as np
import pytest

from graphc.kernels.cpu import groups
from graphc.kernels.cpu import kernel as cpu_kernel
from graphc.kernels.cpu.codegen_parallel import (ALL, CHUNKS, RANGE_TYPES, arg_types, run_blocks,
                                             serial_address)
from graphc.kernels.cpu.launch import PARALLEL, enter


@numba.njit
def _serial(x, scale, out, d0, outer_lo, outer_hi):
    """out[i] = x[i] * scale for rows [outer_lo, outer_hi); raises on a negative x."""
    s = scale[()]
    done = 0
    for i in range(outer_lo, min(outer_hi, d0)):
        for j in range(x.shape[1]):
            if x[i, j] < 0:
                raise ValueError("negative input")
            out[i, j] = x[i, j] * s
        done += 1
    return done


@numba.njit
def _parallel(x, scale, out, d0, serial):
    return run_blocks(serial, (x, scale), (out,), (d0,), np.int64(d0))


def _run(threads, *args):
    address = serial_address(_serial, arg_types(args) + RANGE_TYPES)
    with PARALLEL:
        enter(threads)
        return _parallel(*args, address)


@pytest.mark.parametrize("rows", [0, 1, 2, 7, 1000])
@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_cover_the_outer_range_once(rows, threads):
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("numba's pool has one thread here")
    x = np.random.default_rng(rows).uniform(0, 1, (rows, 5)).astype(np.float32)
    scale = np.array(np.float32(3.0))           # a 0-d input, passed through as an array
    out = np.full_like(x, np.nan)
    done = _run(threads, x, scale, out, rows)
    assert done == rows                         # every row in exactly one block
    np.testing.assert_array_equal(out, x * np.float32(3.0))
    ref = np.full_like(x, np.nan)
    assert _serial(x, scale, ref, rows, 0, ALL) == rows
    np.testing.assert_array_equal(out, ref)


@numba.njit
def _one_per_call(x, out, d0, outer_lo, outer_hi):
    """Marks rows [outer_lo, outer_hi) with the piece's first row; 1 per call."""
    for i in range(outer_lo, min(outer_hi, d0)):
        out[i] = outer_lo
    return 1


@numba.njit
def _pieces(x, out, d0, serial):
    return run_blocks(serial, (x,), (out,), (d0,), np.int64(d0))


@pytest.mark.parametrize("rows", [1, 3, 8, 9, 1000])
def test_workers_take_pieces_from_a_shared_counter(rows):
    """With several threads the outer range is cut into CHUNKS pieces per worker, each run
    once, in order of the counter: a descheduled worker holds back one piece only."""
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    x, out = np.zeros(rows), np.full(rows, -1.0)
    address = serial_address(_one_per_call, arg_types((x, out, rows)) + RANGE_TYPES)
    with PARALLEL:
        enter(threads)
        calls = _pieces(x, out, rows, address)
    want = 1 if threads == 1 else min(rows, threads * CHUNKS)
    assert calls == want
    starts = np.unique(out)
    assert len(starts) == want and starts[0] == 0 and (out >= 0).all()
    assert list(starts) == sorted({(c * rows) // want for c in range(want)})


def test_an_exception_in_a_block_propagates_after_the_region():
    x = np.ones((64, 3), np.float64)
    x[50, 1] = -1.0
    with pytest.raises(ValueError, match="negative input"):
        _run(min(2, numba.config.NUMBA_NUM_THREADS), x, np.array(2.0), np.empty_like(x), 64)
    out = np.empty_like(x)
    x[50, 1] = 1.0                              # the kernel still works afterwards
    assert _run(1, x, np.array(2.0), out, 64) == 64
    np.testing.assert_array_equal(out, 2.0 * x)


def test_the_serial_address_matches_the_argument_types():
    """A read-only or non-contiguous input gets the serial code compiled for its types."""
    x = np.arange(40, dtype=np.float64).reshape(8, 5)
    ro = x.copy()
    ro.flags.writeable = False
    strided = np.arange(80, dtype=np.float64).reshape(8, 10)[:, ::2]
    for arr in (x, ro, strided):
        out = np.empty(arr.shape)
        assert _run(1, arr, np.array(0.5), out, 8) == 8
        np.testing.assert_array_equal(out, arr * 0.5)
    layouts = {sig[0].layout for sig in _serial.signatures}
    assert {"C", "A"} <= layouts and any(not sig[0].mutable for sig in _serial.signatures)


def test_a_kernels_parallel_variant_uses_its_serial_machine_code(monkeypatch, all_cores_free):
    """Through the runner: the parallel variant compiles only a small wrapper; the kernel
    body is compiled once, as the serial variant."""
    import graphc as gc
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "kernel")     # forced: the parallel variant
    monkeypatch.setattr(groups, "PAR_MIN", 0)
    monkeypatch.setattr(cpu_kernel, "_KERNELS", {})
    x = np.random.default_rng(1).standard_normal((300, 70)).astype(np.float32)
    f = gc.function(lambda a: gc.exp(a - gc.reduce_max(a, axis=-1, keepdims=True)) * 2.0,
                    backend="numba")
    want = np.exp(x - x.max(axis=-1, keepdims=True)) * np.float32(2.0)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6)
    (kern,) = cpu_kernel._KERNELS.values()
    assert kern.parallel.signatures and kern.serial.signatures
    assert kern.addresses               # the parallel variant ran the serial's machine code
