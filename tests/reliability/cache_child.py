"""One fresh process using the kernel cache (run by tests/reliability/test_cache*.py).

    python cache_child.py FN [FAULT]

FN picks the function (see FUNCTIONS); FAULT simulates a cache that cannot be written:
"readonly" (every change under GRAPHC_CACHE_DIR fails with EROFS, as on a read-only mount:
root bypasses permission bits, so chmod cannot show this) or "enospc" (files can be made
there but every write into them fails with ENOSPC, as on a full disk). The faults are
installed before graphc or numba are imported, and hit graphc's and numba's own file code
alike. Prints one JSON line: results, cache statistics and the warnings raised.
"""
import builtins
import errno
import json
import os
import sys
import warnings

# no '+' in these texts: test_cache.py's UTF-7 payload needs kernel source without one
FUNCTIONS = {"tanh": "gc.tanh(x * 0.5) * 2.0", "sqrt": "gc.sqrt(x * 3.0) * 0.25"}
ROOT = os.path.realpath(os.environ["GRAPHC_CACHE_DIR"])


def _under_root(path):
    try:
        path = os.fsdecode(path)
    except TypeError:
        return False        # a file descriptor
    return os.path.realpath(path).startswith(ROOT + os.sep) or os.path.realpath(path) == ROOT


def _fail(code, path):
    raise OSError(code, f"{os.strerror(code)} (simulated)", path)


def _install(fault):
    code = errno.EROFS if fault == "readonly" else errno.ENOSPC
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    real_open, real_write, real_builtin_open = os.open, os.write, builtins.open

    def fd_under_root(fd):
        try:
            return _under_root(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return False

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        if fault == "readonly" and flags & writes and _under_root(path):
            _fail(code, path)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    def os_write(fd, data):
        if fd_under_root(fd):
            _fail(code, None)
        return real_write(fd, data)

    class FullFile:
        """A file opened for writing on a full disk: it exists, nothing can be written."""

        def __init__(self, f):
            self._f = f

        def write(self, data):
            _fail(code, self._f.name)

        def __getattr__(self, name):
            return getattr(self._f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._f.close()

    def open_(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and _under_root(file):
            if fault == "readonly":
                _fail(code, file)
            return FullFile(real_builtin_open(file, mode, *args, **kwargs))
        return real_builtin_open(file, mode, *args, **kwargs)

    def deny(name, real):
        def changed(path, *args, **kwargs):
            if name == "mkdir" and os.path.lexists(path):
                _fail(errno.EEXIST, path)       # what mkdir says first, read-only or not
            if fault == "readonly" and _under_root(path):
                _fail(code, path)
            return real(path, *args, **kwargs)
        return changed

    os.open, os.write, builtins.open = os_open, os_write, open_
    for name in ("mkdir", "replace", "rename", "link", "unlink", "remove", "rmdir", "chmod"):
        setattr(os, name, deny(name, getattr(os, name)))


def main():
    fn = FUNCTIONS[sys.argv[1]]
    if len(sys.argv) > 2:
        _install(sys.argv[2])
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import numpy as np

        import graphc as gc
        from graphc.kernels import cache
        from graphc.kernels.cpu import kernel as cpu_kernel
        from graphc.kernels.stats import COUNTS
        f = gc.function(eval(f"lambda x: {fn}", {"gc": gc}), backend="numba")  # noqa: S307
        x = np.linspace(0.25, 2.0, 5, dtype=np.float32)
        y = f(x).numpy()
        want = eval(f"lambda x: {fn}", {"gc": gc})(gc.constant(x)).numpy()  # noqa: S307
    (kernel,) = cpu_kernel._KERNELS.values()
    report = {
        "y": y.tolist(), "want": want.tolist(), "stats": cache.STATS,
        "kernel_calls": COUNTS.kernel_calls, "status": kernel.status, "error": kernel.error,
        "machine_code_hits": sum(sum(d._cache_hits.values())
                                 for d in (kernel.serial, kernel.parallel) if d is not None),
        "module": cache._module_path(kernel.key), "cache_dir": cache.cache_dir(),
        "warnings": [str(w.message) for w in caught if "graphc" in str(w.message)],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
