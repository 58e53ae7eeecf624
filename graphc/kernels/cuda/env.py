"""One call's slots for the cuda plan: each holds a value on the device, on the host, or
both (a copy made once per call, when a step needs it). Device values the call checked out
of the pool (memory.py) are counted per slot holding them, so a buffer goes back when its
last slot is dropped."""
import numpy as np


class Env:
    """One call's slots: `d` the device values, `h` the host values (either may be missing
    until a step needs it; each copy is made once per call)."""

    __slots__ = ("plan", "mem", "d", "h")

    def __init__(self, plan, args, mem):
        dev = plan.dev
        self.plan, self.mem = plan, mem
        n = plan.n_slots
        self.d, self.h = [None] * n, [None] * n
        for i, a in enumerate(args):
            if dev.is_device(a):
                self.d[i] = a
                mem.ref(a)          # a nested plan's argument may be a pooled buffer
            elif hasattr(a, "__cuda_array_interface__"):
                self.d[i] = dev.from_foreign(a)
            else:
                self.h[i] = a
        for slot, value in plan.consts.items():
            self.h[slot] = value
            self.d[slot] = plan.const_dev.get(slot)

    def device(self, i):
        d = self.d[i]
        if d is None:
            if i in self.plan.consts:
                d = self.plan.const_device(i)
            elif i in self.plan.shapes.slots:       # uploaded once per value
                d = self.plan.shapes.device(self.plan.dev, i, self.h[i])
            else:
                h = self.h[i]
                if not isinstance(h, (np.ndarray, np.generic, bool, int, float)):
                    raise TypeError(f"a {type(h).__name__} cannot be copied to the device")
                d = self.plan.dev.to_device(h, self.allocator((i,)))
                self.mem.ref(d)
            self.d[i] = d
        return d

    def allocator(self, outs):
        """`alloc(k, shape, dtype)` for the buffer of slot `outs[k]`: new for a result of
        the top-level plan (it escapes), else checked out of the pool."""
        escapes, mem = self.plan.escapes, self.mem

        def alloc(k, shape, dtype):
            return self.plan.dev.alloc(shape, dtype) if outs[k] in escapes else \
                mem.take(shape, dtype)
        return alloc

    def host(self, i):
        h = self.h[i]
        if h is None and self.d[i] is not None:
            h = self.h[i] = self.plan.dev.to_host(self.d[i])
        return h

    def dev_value(self, i):
        return self.d[i]

    def shapes(self, ins):
        """Slots `ins` for an error message (see stand_ins)."""
        return stand_ins([self.any(i) for i in ins], self.plan.dev.is_device)

    def any(self, i):
        d = self.d[i]
        return self.h[i] if d is None else d

    def put(self, i, x):
        if self.plan.dev.is_device(x):
            self.d[i], self.h[i] = x, None
            self.mem.ref(x)
        else:
            self.h[i], self.d[i] = x, None

    def put_view(self, i, view, of):
        self.mem.alias(view, of)
        self.put(i, view)

    def put_all(self, outs, r):
        if len(outs) == 1:
            self.put(outs[0], r)
        elif outs:       # extra results are ignored, as the interpreter does
            for o, x in zip(outs, r):
                self.put(o, x)

    def drop(self, i):
        d = self.d[i]
        if d is not None:
            self.mem.unref(d)
        self.d[i] = self.h[i] = None

    def drop_all(self):
        if self.mem.holds_any():
            for i in range(len(self.d)):
                self.drop(i)


def stand_ins(values, is_device):
    """`values` for an error message: host values as they are, device arrays as
    zero-memory stand-ins of their run-time shape and dtype (no copy)."""
    return [_stand_in(v) if is_device(v) else v for v in values]


def _stand_in(v):
    """One per shape and dtype, shared: read-only views of one zero (the shape steps and
    device checks make them on every call)."""
    key = (v.dtype, tuple(v.shape))
    s = _STAND_INS.get(key)
    if s is None:
        if len(_STAND_INS) >= 1024:
            _STAND_INS.clear()
        s = _STAND_INS[key] = np.broadcast_to(np.zeros((), v.dtype), key[1])
    return s


_STAND_INS = {}
