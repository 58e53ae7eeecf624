"""numba machine code for graphc's kernels: only in graphc's cache, sealed, verified first.

Generated kernel modules (codegen.py, loops.py) and graphc's own compiled helpers take `njit`
from here. Its `cache=True` gives the dispatcher a SealedCache instead of numba's
FunctionCache, so machine code never goes to a package `__pycache__`, NUMBA_CACHE_DIR or
~/.cache/numba (where numba falls back when a directory is read-only), and a cache file is
unpickled only after its seal (cache_trust.py) verifies. Each compiled signature is one file
named by a hash of the signature, the CPU, the source stamp and the bytecode (no index).
"""
import hashlib
import inspect
import os
import pickle
import sys

import numba
from numba.core import compiler
from numba.core.caching import _Cache
from numba.core.serialize import dumps

from .. import cache_trust as trust

PLACE = "__graphc_cache__"    # global of a generated module: a Place, or None (no disk cache)


class Place:
    """A generated module's cache root (cache._Root) and the hash of its verified source."""

    __slots__ = ("root", "stamp")

    def __init__(self, root, stamp):
        self.root, self.stamp = root, stamp


def njit(fn=None, *, cache=False, **options):
    """numba.njit, where cache=True means graphc's sealed cache, never numba's own."""
    def wrap(f):
        dispatcher = numba.njit(**options)(f)
        if cache:
            sealed = _sealed_cache(f)
            if sealed is not None:
                dispatcher._cache = sealed
        return dispatcher
    return wrap if fn is None else wrap(fn)


def _sealed_cache(f):
    if f.__closure__:
        return None          # numba keys closures by their pickled cells: not used here
    g = f.__globals__
    if PLACE in g:           # a generated module: where cache.load_module put it (or nowhere)
        place = g[PLACE]
        return None if place is None else SealedCache(f, place.stamp, lambda: place.root)
    from .. import cache  # graphc's own code: its source file is the stamp
    try:
        with open(inspect.getfile(f), "rb") as src:
            stamp = hashlib.sha256(src.read()).hexdigest()
    except OSError:
        return None          # no source file (a zip, a frozen app): compiled each process
    return SealedCache(f, stamp, cache.package_place)


def _cachable(cres):
    return all(x.can_cache for x in cres.lifted) and not cres.library.has_dynamic_globals


class SealedCache(_Cache):
    """numba's per-function cache interface over sealed files in `<root>/kernels/__pycache__`."""

    def __init__(self, py_func, stamp, where):
        self._stamp, self._where = stamp, where     # where() -> cache._Root or None
        self._enabled = True
        self._code = hashlib.sha256(py_func.__code__.co_code).hexdigest()
        modname = os.path.splitext(os.path.basename(inspect.getfile(py_func)))[0]
        qualname = py_func.__qualname__.replace("<", "").replace(">", "")
        self._base = (f"{modname}.{qualname}-{py_func.__code__.co_firstlineno}"
                      f".py{sys.version_info[0]}{sys.version_info[1]}")

    @property
    def cache_path(self):
        root = self._where()
        return None if root is None else root.machine

    def enable(self):
        self._enabled = True

    def disable(self):
        self._enabled = False

    def flush(self):
        pass        # entries are keyed by source stamp and bytecode: stale ones are never read

    def _entry(self, sig, codegen):
        key = (sig, codegen.magic_tuple(), self._stamp, self._code)
        return key, f"{self._base}.{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}.nbc"

    def load_overload(self, sig, target_context):
        target_context.refresh()
        root = self._where() if self._enabled else None
        if root is None:
            return None
        key, name = self._entry(sig, target_context.codegen())
        path = os.path.join(root.machine, name)
        payload, present = root.read(path)
        if payload is None:
            if present:
                trust.warn_untrusted(path, "; the kernel is compiled again")
            return None
        try:
            stored, data = pickle.loads(payload)     # bytes this user's graphc sealed
            if stored != key:
                return None
            return compiler.CompileResult._rebuild(target_context, *data)
        except Exception:  # noqa: BLE001 - sealed by another numba build: compile instead
            return None

    def save_overload(self, sig, cres):
        root = self._where() if self._enabled else None
        if root is None or not _cachable(cres):
            return
        key, name = self._entry(sig, cres.codegen)
        root.write(os.path.join(root.machine, name), dumps((key, cres._reduce())))
