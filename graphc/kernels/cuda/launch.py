"""Kernel launches without numba-cuda's per-launch argument handling.

numba-cuda spends most of a small launch in Python: typing every argument, building a
view per 0-d or flattened array, marshalling each field (~30 us per launch on an H100 VM,
more than the kernel). A `Launcher` is one kernel at one launch shape: its first call goes
through numba-cuda (which compiles the overload), and from then on it packs the arguments
itself -- numba's kernel ABI: per array meminfo, parent, size, itemsize, data pointer,
shape, strides; per integer an int64 -- and calls the driver's cuLaunchKernel through
ctypes with a parameter block kept per thread (`GRAPHC_CUDA_LAUNCH=direct`, the default),
or cuda.core's `launch` (`core`), or numba-cuda every time (`numba`; the simulator always).

Before the first direct launch the packing is compared with what numba-cuda itself would
pass for the same arguments; any difference (another numba-cuda ABI, an argument that is
not a C-contiguous device array or an integer) keeps that launcher on numba's path, and
`Launcher.why` says why.
"""
import ctypes
import os
import threading

from . import codegen
from .records import STATS
from .scalar import SIMULATOR

MODES = ("direct", "core", "numba")
CUDA_ERROR_INVALID_CONTEXT = 201


def mode():
    m = os.environ.get("GRAPHC_CUDA_LAUNCH", "direct")
    if m not in MODES:
        raise ValueError(f"GRAPHC_CUDA_LAUNCH={m!r}: expected one of {', '.join(MODES)}")
    return "numba" if SIMULATOR else m


def _as_vector(a, flat):
    """Whether the kernel takes `a` as a 1-d vector of its elements: a 0-d array (as 1
    element), and with `flat` every array of rank > 1."""
    return a.ndim == 0 or (flat and a.ndim > 1)


def views(arrays, flat):
    """The arrays as numba-cuda's kernels take them (`_as_vector` ones as 1-d views)."""
    return [a.reshape(a.size) if _as_vector(a, flat) else a for a in arrays]


def params(a, flat):
    """numba's parameters for array `a` (as `views` gives it)."""
    return _params(a)[1 if flat else 0]


def _params(a):
    """Both forms of `params(a, flat)`, (not flat, flat), kept on the array: its shape,
    strides and memory never change."""
    d = getattr(a, "__dict__", None)
    p = d.get(_KEY) if d is not None else None
    if p is None:
        item, ptr = a.dtype.itemsize, a.device_ctypes_pointer.value
        vector = (0, 0, a.size, item, ptr, a.size, item)
        full = (0, 0, a.size, item, ptr, *a.shape, *a.strides)
        p = (vector if _as_vector(a, False) else full, vector if _as_vector(a, True) else full)
        if d is not None:
            d[_KEY] = p
    return p


_KEY = "_graphc_params"
_NO_DICT = {}


def pack(arrays, ints, flat):
    """The kernel's parameters for `views(arrays, flat)` then `ints`, as numba-cuda's
    `_Kernel._prepare_args` lays them out, without making the views."""
    k = 1 if flat else 0
    out = []
    for a in arrays:
        out += _params(a)[k]
    out += ints
    return out


def numba_params(kernel, arrays, ints, flat):
    """What numba-cuda's own launch would pass (its ctypes scalars as plain ints)."""
    args = views(arrays, flat) + list(ints)
    out = []
    for ty, v in zip(kernel.argument_types, args):
        kernel._prepare_args(ty, v, 0, [], out)
    return [getattr(x, "value", x) for x in out]


def abi_mismatch(kernel, arrays, ints, flat):
    """Why `pack` cannot stand in for numba's launch of `kernel` (an overload), or ''."""
    from numba.core import types
    if getattr(kernel, "debug", False) or getattr(kernel, "extensions", None):
        return "a debug kernel or one with argument extensions"
    args = views(arrays, flat)
    tys = kernel.argument_types
    if len(tys) != len(args) + len(ints):
        return "argument count differs from the overload's"
    for ty, a in zip(tys, args):
        if not (isinstance(ty, types.Array) and ty.layout == "C" and ty.ndim == a.ndim
                and a.is_c_contiguous()):
            return f"argument of type {ty} is not a C-contiguous array"
    for ty in tys[len(args):]:
        if ty != types.int64:
            return f"argument of type {ty} is not an int64"
    mine, theirs = pack(arrays, ints, flat), numba_params(kernel, arrays, ints, flat)
    if mine != theirs:
        return f"packed parameters differ from numba-cuda's: {mine} != {theirs}"
    return ""


class _Driver:
    """cuLaunchKernel from libcuda through ctypes (the library numba-cuda has loaded)."""

    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1")
        self.fn = lib.cuLaunchKernel
        u = ctypes.c_uint
        self.fn.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p,
                            ctypes.c_void_p, ctypes.c_void_p]
        self.fn.restype = ctypes.c_int
        self.name = lib.cuGetErrorName
        self.name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]

    def error(self, rc):
        s = ctypes.c_char_p()
        self.name(rc, ctypes.byref(s))
        return f"cuLaunchKernel failed: {(s.value or b'?').decode()} ({rc})"


_DRIVER = []
_DRIVER_LOCK = threading.Lock()


def driver():
    if not _DRIVER:
        with _DRIVER_LOCK:
            if not _DRIVER:
                _DRIVER.append(_Driver())
    return _DRIVER[0]


def _dims(d):
    d = tuple(d) if isinstance(d, (tuple, list)) else (d,)
    return (tuple(int(x) for x in d) + (1, 1))[:3]


class Launcher:
    """`launcher(arrays, ints, flat=False)` launches `kernel[blocks, threads]` on the
    default stream with `views(arrays, flat)` and `ints`. Its own launches are for the
    overload of its first call's dtypes and ranks; other arguments take numba-cuda's path
    (which compiles what they need)."""

    def __init__(self, kernel, blocks, threads):
        self.kernel, self.blocks, self.threads = kernel, blocks, threads
        self.configured = _configured(kernel, blocks, threads)
        self.mode, self.why = mode(), ""
        self.fast, self.dtypes, self.n = None, None, 0
        self._lock = threading.Lock()
        self._tls = threading.local()

    def __call__(self, arrays, ints=(), flat=False):
        STATS.add("launches")
        fast = self.fast
        if fast is not None and len(arrays) == len(self.dtypes):
            k = 1 if flat else 0
            out = []
            for a, dtype in zip(arrays, self.dtypes):      # pack(), inline
                if a.dtype is not dtype and a.dtype != dtype:     # (`is`: the usual case)
                    break
                # (a new result has none yet: a get, not a KeyError raised per call)
                p = getattr(a, "__dict__", _NO_DICT).get(_KEY)
                out += (_params(a) if p is None else p)[k]
            else:
                out += ints
                if len(out) == self.n:      # and the same ranks: the overload's signature
                    return fast(out)
        with codegen.launching():
            self.configured(*views(arrays, flat), *ints)
        if self.mode != "numba":
            with self._lock:
                if self.fast is None and self.mode != "numba":
                    self._build(arrays, ints, flat)
        return None

    def _build(self, arrays, ints, flat):
        """After numba's first launch: the overload it ran, checked against `pack`."""
        k = self.kernel
        try:
            tys = tuple(k.typeof_pyval(v) for v in views(arrays, flat) + list(ints))
            overload = k.overloads.get(tys)
            self.why = ("numba-cuda compiled no overload for these types" if overload is None
                        else abi_mismatch(overload, arrays, ints, flat))
            if not self.why:
                # the overload's signature: other dtypes or ranks go through numba-cuda
                self.dtypes = [a.dtype for a in arrays]
                self.n = len(pack(arrays, ints, flat))
                cufunc = overload._codelibrary.get_cufunc()
                self.fast = (self._direct(cufunc) if self.mode == "direct"
                             else self._core(cufunc))
        except Exception as e:  # noqa: BLE001 - numba's path stays; the reason is kept
            self.why = f"{type(e).__name__}: {e}"
        if self.fast is None:
            self.mode = "numba"

    def _direct(self, cufunc):
        drv = driver()
        handle = int(cufunc.handle)
        g, b = _dims(self.blocks), _dims(self.threads)
        tls, fn = self._tls, drv.fn

        def block(n):
            vals = (ctypes.c_int64 * n)()
            base = ctypes.addressof(vals)
            return vals, (ctypes.c_void_p * n)(*(base + 8 * i for i in range(n)))

        def launch(params):
            blk = getattr(tls, "block", None)
            if blk is None:
                blk = tls.block = block(self.n)
            blk[0][:] = params
            rc = fn(handle, *g, *b, 0, None, blk[1], None)
            if rc == CUDA_ERROR_INVALID_CONTEXT:     # a thread numba has not bound yet
                from numba.cuda.cudadrv.devices import get_context
                get_context()
                rc = fn(handle, *g, *b, 0, None, blk[1], None)
            if rc:
                raise RuntimeError(drv.error(rc))
        return launch

    def _core(self, cufunc):
        from cuda.core import LaunchConfig, launch
        from numba.cuda._compat import CUDA_CORE_GE_1_0
        from numba.cuda.cudadrv.driver import _to_core_stream
        coop = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": False}
        config = LaunchConfig(grid=_dims(self.blocks), block=_dims(self.threads),
                              shmem_size=0, **coop)
        stream, kern = _to_core_stream(0), cufunc.kernel

        def run(params):
            launch(stream, config, kern, *params)
        return run


_CONFIGURE = threading.Lock()


def _configured(kernel, blocks, threads):
    """`kernel[blocks, threads]` without numba's warning that a small grid under-uses the
    GPU: small arrays get small grids by design."""
    import warnings
    with _CONFIGURE, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Grid size .* under-utilization")
        return kernel[blocks, threads]
