"""Run-time checks on the device without a host sync per call (check_class_ids).

A check is one kernel launch: every block scans its share of the ids, the first bad index
goes into a per-thread scratch word by atomic min, and the last block to finish (a counter,
the CUDA samples' threadFenceReduction pattern) writes the first bad id's record -- index,
value, depth, which check, which launch -- into the process's `GUARD` (device memory) and
into `RECORD` (host memory the device writes through, `cuda.mapped_array`), unless an
earlier failure is already recorded there (the first one wins).

Nothing waits for it. The host learns of a failure the next time it waits for the device
anyway: every copy to the host (`device.to_host_array`: reading a result, a variable, a
fallback op's inputs, a cond/while predicate) reads `RECORD` after its copy (no extra copy
or sync) and raises the check's error -- the numpy rule's `InvalidArgumentError`, located
at the user's line -- there. Until then a failed check freezes every variable on the
device: variable updates (updates.py) keep the old value while `GUARD[0]` is set, so the
variables end as eager's do when the check raises (no update of the failing call, nor of
later calls made before the host read). Results of calls whose checks ran before the
failure was seen raise the same error when read, every time (`poisoned`).

TensorFlow's GPU kernels do not check (sparse cross-entropy gives NaN, one_hot an all-off
row); PyTorch's device asserts report at the next sync and end the CUDA context. Here the
error is numpy's, and the process goes on.
"""
import itertools
import threading

import numpy as np
from numba import cuda, int64

from . import device
from .codegen import THREADS, blocks_for
from .launch import Launcher

NONE = 1 << 62          # "no bad index yet" in the scratch word
FIELDS = 6              # failed, index, value (int64 bits), depth, check id, launch number


def _check(ids, depth, guard, record, scratch, check_id, seq):
    """ids (flat) outside [0, depth[0]): the first one's record, once, by the last block."""
    n = ids.size
    d = depth[0]
    first = int64(NONE)
    i = int64(cuda.grid(1))
    step = int64(cuda.gridsize(1))
    while i < n:
        v = ids[i]
        if v < 0 or v >= d:
            first = i
            break
        i += step
    if first != NONE:
        cuda.atomic.min(scratch, 0, first)
    cuda.threadfence()
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        if cuda.atomic.add(scratch, 1, 1) == cuda.gridDim.x - 1:   # every block is done
            cuda.threadfence()
            first = cuda.atomic.min(scratch, 0, NONE)      # read through the atomics
            if first != NONE and guard[0] == 0:
                value = int64(ids[first])
                guard[1] = record[1] = first
                guard[2] = record[2] = value
                guard[3] = record[3] = int64(d)
                guard[4] = record[4] = check_id
                guard[5] = record[5] = seq
                cuda.threadfence_system()   # the fields before the flags, for the host too
                guard[0] = record[0] = 1
            scratch[0] = NONE
            scratch[1] = 0


KERNEL_SOURCES = {"check_ids": _check}      # compiled to PTX in tests/cuda
_KERNEL = cuda.jit(_check)


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.guard = self.record = self.host = None    # host: RECORD as numpy sees it
        self.launched = self.observed = 0      # launch numbers (host side)
        self.sites = {}         # check id -> (op, input stand-ins) of its last launch
        self.poisoned = []      # (first, last launch number, error) of failed stretches
        self.launchers = {}     # (blocks, threads) -> Launcher
        self.tls = threading.local()


_S = _State()
_IDS = itertools.count(1)


def new_check_id():
    return next(_IDS)


def guard():
    """The device flag variable updates read (allocated on first use)."""
    if _S.guard is None:
        with _S.lock:
            if _S.guard is None:
                rec = cuda.mapped_array(FIELDS, np.int64)
                _S.host = rec._ary if device.SIMULATED else rec.view(np.ndarray)
                _S.host[:] = 0
                _S.record = rec
                _S.guard = device.to_device(np.zeros(FIELDS, np.int64))
    return _S.guard


def pending():
    """Whether a check may have failed unseen (variable assignments then keep the old
    value on the device while the guard is set)."""
    return _S.launched > _S.observed


def launch(check_id, op, ids, depth, stand_ins):
    """Check `ids` (device) against 0-d `depth` (device): one launch, nothing waits.
    Returns its launch number."""
    g = guard()
    n = ids.size
    if n == 0:
        return 0
    scratch = getattr(_S.tls, "scratch", None)
    if scratch is None:
        scratch = _S.tls.scratch = device.to_device(np.array([NONE, 0], np.int64))
    blocks = blocks_for(n)
    run = _S.launchers.get(blocks)
    if run is None:
        run = _S.launchers[blocks] = Launcher(_KERNEL, blocks, THREADS)
    with _S.lock:
        _S.launched += 1
        seq = _S.launched
        _S.sites[check_id] = (op, stand_ins)
    run([ids, depth, g, _S.record, scratch], (check_id, seq), flat=True)
    return seq


def mark():
    """The last launch number a copy to the host that starts now will wait for."""
    return _S.launched


def observe(upto, array=None):
    """After a copy to the host that waited for launches up to `upto`: raise the first
    failed check's error, if any; `array`: the device array just copied (a result of a
    call whose checks failed raises too)."""
    if upto > _S.observed:
        with _S.lock:
            err = _failure(upto)
            _S.observed = max(_S.observed, upto)
        if err is not None:
            raise err
    seq = getattr(array, "_graphc_check_seq", 0) if _S.poisoned else 0
    for lo, hi, err in _S.poisoned:
        if lo <= seq <= hi:
            raise _error(*err)


def _failure(upto):
    rec = _S.host
    if rec is None or rec[0] == 0:
        return None
    index, value, depth, check_id, seq = (int(x) for x in rec[1:])
    rec[:] = 0
    _S.guard.copy_to_device(np.zeros(FIELDS, np.int64))    # variables update again
    op, stand_ins = _S.sites[check_id]
    dtype = stand_ins[0].dtype
    err = (op, stand_ins, index, _as(value, dtype), _as(depth, dtype))
    _S.poisoned.append((seq, upto, err))
    del _S.poisoned[:-16]       # the latest stretches are the ones still read
    return _error(*err)


def _as(bits, dtype):
    """The `dtype` value the kernel stored as int64 (uint64: its bits)."""
    return np.array(bits, np.int64).view(np.uint64).astype(dtype)[()] if dtype.kind == "u" \
        else np.array(bits, np.int64).astype(dtype)[()]


def _error(op, stand_ins, index, value, depth):
    """The numpy rule's error for these ids, at the user's line."""
    from ...runtime.registry import REGISTRY
    from ...runtime.run_errors import located
    rule = REGISTRY[op.type].numpy
    try:
        rule(np.full(1, value), depth, **op.attrs)
    except Exception as e:  # noqa: BLE001 - located as the host path's would be
        err = located(op, e, stand_ins)
        if err is None:
            return e
        err.__cause__ = e
        return err
    raise AssertionError(f"{op.type}: the device check failed at index {index} but the "
                         "numpy rule accepts its value")


def tag(results, seq):
    """Mark a call's results with its last check's launch number (see observe)."""
    for x in results:
        d = getattr(x, "__dict__", None)
        if d is not None:
            d["_graphc_check_seq"] = seq
