"""Device memory for backend="cuda": copies between host and device (counted), device
arrays from other libraries, views, and the device copies of gc.Variables.

Every host<->device copy goes through `to_device` / `to_host`, which count them in
`TRANSFERS` (tests assert that a device result fed to the next cuda call is not copied);
every new device array through `alloc` (memory.py), which counts it in STATS.allocations.
Device arrays are never written in place once made: a variable update makes a new array,
so a value read earlier in the same call keeps its contents (as the CPU backends' copy on
write), and views share memory safely.
"""
import threading

import numpy as np

from numba import cuda

from ...runtime import tensor as _tensor
from ...runtime import variables as _variables
from ...runtime.tensor import Tensor
from .memory import alloc


class Transfers:
    """Host<->device copies made so far in this process (counted under a lock: the cuda
    plan may run in several threads)."""

    def __init__(self):
        self.h2d = self.d2h = 0
        self._lock = threading.Lock()

    def add(self, h2d=0, d2h=0):
        with self._lock:
            self.h2d += h2d
            self.d2h += d2h

    def snapshot(self):
        return self.h2d, self.d2h


TRANSFERS = Transfers()

SIMULATED = bool(cuda.config.ENABLE_CUDASIM)
if SIMULATED:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _Fake
    DEVICE_TYPES = (_Fake,)
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    DEVICE_TYPES = (DeviceNDArray,)


def is_device(x):
    return isinstance(x, DEVICE_TYPES)


def to_device(host, allocate=None):
    """A device array holding `host` (a numpy array or scalar): a new one, or the buffer
    `allocate(0, shape, dtype)` gives (e.g. one checked out of the plan's pool)."""
    a = np.asarray(host)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)      # (never for 0-d: it would make it 1-d)
    out = alloc(a.shape, a.dtype) if allocate is None else allocate(0, a.shape, a.dtype)
    TRANSFERS.add(h2d=1)
    if a.size:
        out.copy_to_device(a)
    return out


def to_host_array(dev):
    """A host copy of `dev`. The copy waits for the device, so it also reads what the
    checks launched before it found (checks.py), and raises a failed check's error."""
    upto = checks.mark()
    TRANSFERS.add(d2h=1)
    host = dev.copy_to_host()
    checks.observe(upto, dev)
    return host


def to_host(dev):
    """The host value of a device array as the numpy rules would give it (0-d: a numpy
    scalar, as eager results are)."""
    a = to_host_array(dev)
    return a[()] if a.ndim == 0 else a


def device_copy(dev):
    """A new device array with `dev`'s contents (device to device, no host copy)."""
    out = alloc(dev.shape, dev.dtype)
    if dev.size:
        out.copy_to_device(dev)
    return out


def view(dev, shape):
    """`dev` seen with `shape` without a copy, or None when it is not contiguous."""
    if not dev.is_c_contiguous():
        return None
    return dev.reshape(tuple(shape)) if tuple(shape) != tuple(dev.shape) else dev


# -- arrays from other libraries (CuPy, numba-cuda, PyTorch...) ---------------------------

class _HostInterface:
    """Simulator only: its "device" memory is host memory, so a `__cuda_array_interface__`
    pointer is read as a host array (no copy; keeps the owner alive)."""

    def __init__(self, owner):
        iface = dict(owner.__cuda_array_interface__)
        self.owner = owner
        self.__array_interface__ = {"shape": tuple(iface["shape"]), "typestr": iface["typestr"],
                                    "data": tuple(iface["data"]), "strides": iface.get("strides"),
                                    "version": 3}


def from_foreign(obj):
    """A device array sharing `obj`'s memory (`obj` has `__cuda_array_interface__`)."""
    if is_device(obj):
        return obj
    if SIMULATED:
        return _Fake(np.asarray(_HostInterface(obj)))
    return cuda.as_cuda_array(obj)


def foreign_leaf(obj, device):
    """What a compiled function is fed for `obj`: its device array for a cuda function, a
    host copy for the others."""
    dev = from_foreign(obj)
    return dev if device else to_host(dev)


def foreign_tensor(obj):
    """A device-backed gc.Tensor sharing `obj`'s memory (host copy on first host read)."""
    return Tensor._on_device(from_foreign(obj))


# -- variables ----------------------------------------------------------------------------

def variable_on_device(var):
    """The variable's live device array, uploading the host value when the host copy is the
    live one (the first cuda use, or after a host read or write). The caller holds the
    variable's lock (a compiled call does for its whole run)."""
    host = var.__dict__.get("_value")
    if host is not None:
        var._dev = to_device(host)
        del var.__dict__["_value"]        # the device copy is the live one from now on
    return var._dev


def set_variable(var, dev):
    """Make device array `dev` the variable's live value (the host copy, if any, is dropped)."""
    var._dev = dev
    var.__dict__.pop("_value", None)


def _sync_to_host(var):
    """Variable hook: a host read of a device-resident variable copies it back and makes the
    host copy the live one (the host may update it in place)."""
    host = to_host_array(var._dev)
    var._value = host
    var._dev = None


from . import checks  # noqa: E402 - it launches through launch.py, which needs this module

_tensor.enable_device_values(to_host)
_variables.enable_device_values(_sync_to_host)
