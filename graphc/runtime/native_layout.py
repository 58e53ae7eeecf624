"""Where CPython and numpy keep the fields a native entry reads (native_entry.py).

Each offset is found by probing live objects, never assumed: the slot of a Tensor field is
where a fresh sentinel's address appears in the object's memory; an array's `nd`,
`dimensions`, `descr` and `flags` are read back and compared with what numpy reports for
arrays of several ranks and flags. Anything unexpected (another interpreter, a
free-threaded build, a numpy whose struct moved) gives None: no native entries, the
generated Python entries serve every call as before.
"""
import ctypes
import os
import sys
import sysconfig

import numpy as np

_PTR = ctypes.sizeof(ctypes.c_void_p)
_cached = []


class Layout:
    """Byte offsets (and the addresses of the C functions) a native entry uses."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def layout():
    """The probed Layout, or None where native entries are off or the probe failed."""
    if not after_calls():
        return None
    if not _cached:
        _cached.append(_probe() if _supported() else None)
    return _cached[0]


def after_calls():
    """How many calls an entry takes in Python before its native version is compiled
    (GRAPHC_NATIVE_ENTRY; 0: never). ~4 ms of compiling saves ~1 us per call: worth it
    for a function called thousands of times, not for one called twice."""
    try:
        return max(0, int(os.environ.get("GRAPHC_NATIVE_ENTRY", "1000")))
    except ValueError:
        return 1000


def _supported():
    return (sys.implementation.name == "cpython" and _PTR == 8 and sys.version_info >= (3, 9)
            and not sysconfig.get_config_var("Py_GIL_DISABLED"))


def _word(obj, offset, kind=ctypes.c_void_p):
    return kind.from_address(id(obj) + offset).value


def _slot_offset(cls, name, size):
    """Offset of slot `name` in instances of `cls`: where a sentinel stored there shows."""
    obj = cls.__new__(cls)
    sentinel = object()
    setattr(obj, name, sentinel)
    hits = [off for off in range(2 * _PTR, size, _PTR) if _word(obj, off) == id(sentinel)]
    return hits[0] if len(hits) == 1 else None


def _array_offsets():
    """(nd, dims, descr, flags) offsets of numpy's array struct, checked on several arrays."""
    base = 2 * _PTR                      # after ob_refcnt and ob_type: data, nd, dims...
    offs = dict(nd=base + _PTR, dims=base + 2 * _PTR, descr=base + 5 * _PTR,
                flags=base + 6 * _PTR)
    samples = [np.zeros((3, 5), np.float32), np.zeros(7, np.int64)[::2],
               np.zeros((2, 1, 4), np.float64).T, np.frombuffer(b"abcd", np.uint8),
               np.zeros((), np.int32)]
    for a in samples:
        if _word(a, offs["nd"], ctypes.c_int) != a.ndim or _word(a, offs["descr"]) != id(a.dtype):
            return None
        dims = _word(a, offs["dims"])
        if a.ndim and [ctypes.c_ssize_t.from_address(dims + 8 * i).value
                       for i in range(a.ndim)] != list(a.shape):
            return None
        flags = _word(a, offs["flags"], ctypes.c_int)
        want = [a.flags.c_contiguous, a.flags.aligned, a.flags.writeable]
        if [bool(flags & 0x1), bool(flags & 0x100), bool(flags & 0x400)] != want:
            return None
    return offs


def _probe():
    from .tensor import Tensor
    try:
        size = Tensor.__basicsize__
        slots = {n: _slot_offset(Tensor, n, size) for n in ("_np", "_sym", "_graph", "_dev")}
        arrays = _array_offsets()
        busy = [0]
        items = _word(busy, 3 * _PTR)            # PyListObject: ob_item after the var head
        if None in slots.values() or arrays is None or \
                ctypes.c_void_p.from_address(items).value != id(0) or \
                _word(np.zeros(1), _PTR) != id(np.ndarray):
            return None
        api = ctypes.pythonapi
        funcs = {n: ctypes.cast(getattr(api, n), ctypes.c_void_p).value
                 for n in ("PyObject_Vectorcall", "Py_IncRef", "Py_DecRef", "PyNumber_Multiply",
                           "PyType_GenericAlloc", "PyErr_ExceptionMatches",
                           "PyObject_GetItem", "PyMem_Malloc", "PyMem_Free",
                           "PyErr_NoMemory")}
        if sys.version_info >= (3, 12):
            funcs["PyErr_GetRaisedException"] = ctypes.cast(
                api.PyErr_GetRaisedException, ctypes.c_void_p).value
        else:
            for n in ("PyErr_Fetch", "PyErr_NormalizeException", "PyException_SetTraceback"):
                funcs[n] = ctypes.cast(getattr(api, n), ctypes.c_void_p).value
    except (AttributeError, ValueError, OSError):
        return None
    return Layout(ob_type=_PTR, list_items=3 * _PTR, tuple_size=2 * _PTR, slots=slots,
                  funcs=funcs, exception=id(ctypes.py_object.in_dll(api, "PyExc_Exception").value),
                  **{f"array_{k}": v for k, v in arrays.items()})
