"""How often compiled code actually ran: fused-group kernels and natively compiled loops.

Counted at the call sites that enter numba-compiled code (never on the numpy paths), so a
test can assert that a "numba agrees" check really ran a kernel and not the numpy rules.
An integer increment per kernel call: nothing next to the kernel's own work. Machine-code
callers (runtime/native_entry.py) increment a C integer of their own (`native_counter`),
which the count includes.
"""
import ctypes

_NAMES = ("kernel_calls", "loop_calls")
_NATIVE = (ctypes.c_int64 * len(_NAMES))()      # incremented by native entries (GIL held)


def native_counter(name):
    """The address of the C int64 that native code increments for `name`."""
    return ctypes.addressof(_NATIVE) + _NAMES.index(name) * ctypes.sizeof(ctypes.c_int64)


class Counts:
    """Python call sites increment `_kernel_calls` / `_loop_calls` (plain slots: the cheapest
    increment); the public counts add the native ones."""
    __slots__ = ("_kernel_calls", "_loop_calls")

    def __init__(self):
        self._kernel_calls = 0
        self._loop_calls = 0

    @property
    def kernel_calls(self):     # fused group kernels entered
        return self._kernel_calls + _NATIVE[0]

    @property
    def loop_calls(self):       # natively compiled while/cond loops entered
        return self._loop_calls + _NATIVE[1]

    def snapshot(self):
        return (self.kernel_calls, self.loop_calls)

    def __repr__(self):
        return f"<compiled code runs: {self.kernel_calls} kernels, {self.loop_calls} loops>"


COUNTS = Counts()
