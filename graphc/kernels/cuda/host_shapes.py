"""Run-time shape arithmetic of a graph traced with None dims, on the host.

A `shape` op gives a small host vector (no copy of its input's data). Ops computing only
from such vectors (and constants) -- a gather or slice of the batch dim, the product that
is a mean's count, a cast -- run their numpy rules on the host: their inputs are already
there, so a kernel would first need an upload per call. Such an op is taken when it has no
effects, every input is a run-time shape value or a constant (one at least a shape value),
and every output has a static shape of at most SMALL elements (a fill or range of a
run-time size is not small: it stays on the device path).

When a device kernel reads one of these values, its upload is kept per value (`device`):
the batch size changes rarely, so a steady-state call copies nothing to the device.
Device arrays are never written in place (device.py), so a kept upload stays valid.
"""
import math
import threading

import numpy as np

from ...runtime.registry import REGISTRY

SMALL = 64          # elements: shape-vector sized
KEEP = 4            # uploads kept per slot (the run-time values seen last)
KINDS = ("elementwise", "reduce", "shape", "opaque")    # not control, io, random, state
NOT_TAKEN = ("while", "cond", "check_class_ids", "check_shape", "constant")


class HostShapes:
    """Which values of one plan are run-time shape values (by id(Value) while planning,
    by slot after), and their kept uploads."""

    def __init__(self, graph):
        self.ids = set()
        self.consts = {id(op.outputs[0]) for op in graph.operations
                       if op.type == "constant" and not op.inputs}
        self.slots = frozenset()
        self._kept = {}             # slot -> {(dtype, shape, bytes): device array}
        self._lock = threading.Lock()

    def add_shape(self, op):
        """A `shape` op's result is a host shape vector."""
        self.ids.add(id(op.outputs[0]))

    def takes(self, ops):
        """Whether `ops` (a group's, in program order) all run on the host; their results
        are then shape values."""
        inside = set()
        for op in ops:
            if not self._takes(op, inside):
                return False
            inside.update(id(v) for v in op.outputs)
        self.ids |= inside
        return True

    def _takes(self, op, inside):
        entry = REGISTRY.get(op.type)
        if entry is None or entry.effectful or entry.kind not in KINDS or \
                op.type in NOT_TAKEN:
            return False
        known = self.ids | inside
        if not op.inputs or not all(id(v) in known or id(v) in self.consts
                                    for v in op.inputs):
            return False
        if not any(id(v) in known for v in op.inputs):
            return False        # constants only: the optimizer's (or a kernel's) job
        return all(_small(v) for v in op.outputs)

    def settle(self, index, outputs):
        """Slots of the shape values; a plan output is not kept (it leaves the call)."""
        self.slots = frozenset(index[i] for i in self.ids if i in index) - set(outputs)
        del self.ids, self.consts

    def device(self, dev, slot, host):
        """`host` (slot's value this call) on the device: the upload of an equal value
        before, else a new one kept in place of the oldest."""
        a = np.asarray(host)
        key = (a.dtype.str, a.shape, a.tobytes())
        kept = self._kept.get(slot)
        d = kept.get(key) if kept else None
        if d is None:
            with self._lock:
                kept = self._kept.setdefault(slot, {})
                d = kept.get(key)
                if d is None:
                    d = dev.to_device(a)
                    if len(kept) >= KEEP:
                        del kept[next(iter(kept))]
                    kept[key] = d
        return d


def _small(v):
    shape = getattr(v.type, "shape", None)
    return shape is not None and None not in shape and math.prod(shape) <= SMALL
