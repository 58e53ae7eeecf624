"""Content-addressed kernel cache that only ever runs what this user's graphc wrote.

Key = sha256(canonical kernel text + environment fingerprint). The text names ops, dtypes,
ranks and broadcast pattern but never concrete dimension sizes, so a retrace for a new
batch size hits the same entry.

Layout under the cache root (GRAPHC_CACHE_DIR, default ~/.cache/graphc):
  hmac.key                  this user's secret key (mode 0600, made on first use)
  kernels/k_<key>.py        generated kernel modules
  kernels/__pycache__/      numba machine code for them (see cache_numba.py)
  choices.json              measured kernel-vs-numpy choices

Every file ends with an HMAC-SHA256 seal of its name and contents under the key
(cache_trust.py); a file whose seal does not verify is ignored and rebuilt, with one warning
naming it. Modules are compiled from the verified text (Python never imports them, so no
`.pyc` is ever read), and numba's machine code is verified before numba unpickles it. Every
directory level (root, kernels/, kernels/__pycache__) must be owned by the user, not
writable by group or others, and not a symbolic link: otherwise a private temporary
directory is used for the process, with a warning. A cache that cannot be written (read-only,
full disk) still compiles every kernel, caches nothing, and warns once.
"""
import atexit
import hashlib
import json
import linecache
import math
import os
import shutil
import sys
import tempfile
import threading
import types

from . import cache_trust as trust

_lock = threading.RLock()
_state = {"dir": None, "env": None, "choices": None}
_ROOTS = {}       # root path -> _Root
STATS = {"hits": 0, "misses": 0, "rebuilt": 0}
_CHOICES = "choices.json"


def _package_fingerprint():
    """graphc's kernel-relevant sources, so an edit to them changes every key."""
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    names = sorted(n for n in os.listdir(here) if n.endswith(".py") and (
        n.startswith(("vecmath", "codegen", "loops")) or n == "scalar.py"))
    for name in names:
        path = os.path.join(here, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()[:16]


def environment():
    """CPU features and versions that compiled code depends on (computed once)."""
    if _state["env"] is None:
        import llvmlite
        import llvmlite.binding as llb
        import numba
        import numpy
        from .. import __version__ as gv
        from .cpu.codegen import vector_width
        feats = llb.get_host_cpu_features().flatten()
        _state["env"] = (f"graphc={gv} src={_package_fingerprint()} cache=sealed1 "
                         f"numba={numba.__version__} llvmlite={llvmlite.__version__} "
                         f"numpy={numpy.__version__} python={sys.version_info[:3]} "
                         f"cpu={llb.get_host_cpu_name()} "
                         f"features={hashlib.sha256(feats.encode()).hexdigest()[:16]} "
                         f"vector_width={vector_width()}")
    return _state["env"]


def kernel_key(canonical_text):
    return hashlib.sha256((canonical_text + "\n" + environment()).encode()).hexdigest()


# -- the cache root and its directories -------------------------------------------------------

def cache_dir():
    """The kernel cache root: GRAPHC_CACHE_DIR or ~/.cache/graphc, if this user alone
    controls it (else a private temporary directory for this process, with a warning)."""
    want = os.environ.get("GRAPHC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "graphc")
    cur = _state["dir"]
    if cur is not None and cur[0] == want:
        return cur[1]
    with _lock:
        try:
            os.makedirs(want, mode=0o700, exist_ok=True)
        except OSError as e:
            return _use_private(want, want, f"cannot be created ({e})")
        path = os.path.realpath(want)
        problem = trust.dir_problem(path)
        if problem:
            return _use_private(want, want, problem)
        _state["dir"] = (want, path)
        _state["choices"] = None
        return path


def _use_private(want, level, reason):
    path = tempfile.mkdtemp(prefix="graphc-kernels-")
    atexit.register(shutil.rmtree, path, True)
    trust.warn_once(("private", want, level), f"not using kernel cache directory {level!r}: "
                    f"it {reason}; using the private directory {path!r} for this process "
                    "instead")
    _state["dir"] = (want, path)
    _state["choices"] = None
    return path


class _Root:
    """One cache root in use: its checked directories, its key, whether it can be written."""

    def __init__(self, path):
        self.path = path
        self.kernels = os.path.join(path, "kernels")
        self.machine = os.path.join(self.kernels, "__pycache__")
        self.key = None            # None: nothing on disk can be verified (nor written)
        self.keyed = False
        self.writable = True

    def untrusted_level(self):
        """(directory, reason) for the first level not this user's alone; makes missing ones."""
        for level in (self.path, self.kernels, self.machine):
            try:
                os.mkdir(level, 0o700)
            except FileExistsError:
                pass
            except OSError as e:
                self.cannot_write(e)       # read-only: nothing below to read either
                return None
            problem = trust.dir_problem(level)
            if problem:
                return level, problem
        return None

    def load_key(self):
        """Load (or make) the key; (key file, reason) when it cannot be trusted or replaced."""
        if self.keyed:
            return None
        try:
            self.key, created = trust.load_key(self.path)
        except trust.UntrustedKey as e:
            trust.warn_once(e.path, f"the key file {e.path} {e.reason}, so nothing sealed "
                            "with it is trusted: a new key replaces it and every cached "
                            "kernel is rebuilt")
            try:
                os.unlink(e.path)
                self.key, created = trust.load_key(self.path)
            except (OSError, trust.UntrustedKey) as e2:
                return e.path, f"could not be replaced by a new key ({e2})"
        except OSError as e:
            self.cannot_write(e)
            created = False
        self.keyed = True
        if created:
            self._clear()      # sealed with an older key, or never sealed: unverifiable
        return None

    def _clear(self):
        for folder in (self.machine, self.kernels):
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    _remove(entry.path)
        _remove(os.path.join(self.path, _CHOICES))

    def cannot_write(self, err):
        self.writable = False
        trust.warn_once(("write", self.path), f"cannot write to the kernel cache {self.path} "
                        f"({err}): kernels are compiled for this process only and nothing is "
                        "cached")

    def write(self, path, data):
        """Seal and write `data` to `path`; False (after one warning) if that failed."""
        if not self.writable or self.key is None:
            return False
        try:
            trust.write_atomic(path, trust.seal(self.key, os.path.basename(path), data))
            return True
        except OSError as e:
            self.cannot_write(e)
            return False

    def read(self, path):
        """The verified contents of `path`: (payload or None, present?)."""
        blob = trust.read_file(path) if self.key is not None else None
        if blob is None:
            return None, False
        return trust.unseal(self.key, os.path.basename(path), blob), True


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _root():
    """The checked root in use (a private one replaces any level that is not ours alone)."""
    with _lock:
        while True:
            path = cache_dir()
            root = _ROOTS.setdefault(path, _Root(path))
            bad = root.untrusted_level() or root.load_key()
            if bad is None:
                return root
            _use_private(_state["dir"][0], *bad)


def package_place():
    """Where graphc's own cached @njit functions keep machine code (cache_numba.py)."""
    root = _root()
    return root if root.key is not None else None


# -- generated modules ------------------------------------------------------------------------

def _module_path(key):
    return os.path.join(cache_dir(), "kernels", f"k_{key[:40]}.py")


def has_module(key):
    """Is a generated module for `key` already on disk (so loading it is cheap)?"""
    return os.path.exists(_module_path(key))


def load_module(key, source):
    """The module for `key`: from its verified file if there is one, else from `source`
    (written to the cache when it can be).

    Returns (module, status) with status 'hit' (found intact), 'miss' or 'rebuilt' (a file
    was there but not sealed by this user's graphc: it is replaced, with one warning).
    """
    text = f"# graphc kernel {key}\n{source}"
    stem = f"k_{key[:40]}"
    name = f"graphc_kernels_{stem}"
    with _lock:
        root = _root()
        path = os.path.join(root.kernels, stem + ".py")
        payload, present = root.read(path)
        found = _decode(payload)
        status = "hit" if found is not None else "rebuilt" if present else "miss"
        cached = status == "hit"
        if status == "rebuilt":
            trust.warn_untrusted(path, ", rebuilt and replaced")
            drop_compiled(path)
        if not cached:
            found = text
            cached = root.write(path, text.encode())
        STATS[{"hit": "hits", "miss": "misses", "rebuilt": "rebuilt"}[status]] += 1
        mod = sys.modules.get(name)
        if mod is not None and status == "hit":
            return mod, status
        stamp = hashlib.sha256(found.encode()).hexdigest() if cached else None
        mod = _exec_module(name, path, found, root if cached else None, stamp)
    return mod, status


def _decode(payload):
    try:
        return None if payload is None else payload.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _exec_module(name, path, text, root, stamp):
    """Run verified `text` as module `name` (compiled from the text itself: never a `.pyc`)
    under its file's name, so tracebacks and numba's messages point at it."""
    from .cpu.cache_numba import PLACE, Place      # imports numba: only once a kernel is wanted
    mod = types.ModuleType(name)
    mod.__file__ = path
    setattr(mod, PLACE, None if root is None else Place(root, stamp))
    code = compile(text, path, "exec", dont_inherit=True)
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    sys.modules[name] = mod
    try:
        exec(code, mod.__dict__)  # noqa: S102 - text graphc generated (or verified as such)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def drop_compiled(py_path):
    """Remove numba's cached machine code for one generated module (it will recompile)."""
    folder = os.path.join(os.path.dirname(py_path), "__pycache__")
    stem = os.path.splitext(os.path.basename(py_path))[0]
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for n in names:
        if n.startswith(stem + "."):
            _remove(os.path.join(folder, n))


# -- measured choices (kernel vs numpy), persisted beside the kernels ----------------------

_TIMES = ("kernel_s", "numpy_s", "serial_s", "parallel_s", "first_call_s")
# the conditions a choice was measured under (adaptive.py): cpus, affinity mask size, and
# the cores free then
_CONDITIONS = ("cpus", "affinity", "free")


def _valid_entry(entry):
    if not isinstance(entry, dict) or entry.get("choice") not in ("kernel", "numpy"):
        return False
    for k, v in entry.items():
        if k in ("variant",):
            ok = v in ("serial", "parallel")
        elif k in ("reason", "source", "choice"):
            ok = isinstance(v, str)
        elif k in _TIMES:
            ok = v is None or (type(v) in (int, float) and math.isfinite(v) and v >= 0)
        elif k in _CONDITIONS:
            ok = type(v) is int and 1 <= v <= 1 << 20
        else:
            ok = False
        if not ok:
            return False
    return True


def _read_choices(root):
    """The verified, well-formed choices on disk (anything else dropped, with one warning)."""
    path = os.path.join(root.path, _CHOICES)
    payload, present = root.read(path)
    if payload is None:
        if present:
            trust.warn_untrusted(path, "; kernel-vs-numpy choices are measured again")
        return {}
    try:
        data = json.loads(payload)
    except ValueError:
        data = None
    good, dropped = {}, not isinstance(data, dict)
    for key, classes in (data.items() if isinstance(data, dict) else ()):
        if not isinstance(classes, dict):
            dropped = True
            continue
        for klass, entry in classes.items():
            if _valid_entry(entry):
                good.setdefault(key, {})[klass] = entry
            else:
                dropped = True
    if dropped:
        trust.warn_once(("entries", path), f"{path} held damaged entries: dropped; those "
                        "choices are measured again")
    return good


def _choices():
    if _state["choices"] is None:
        _state["choices"] = _read_choices(_root())
    return _state["choices"]


def get_choice(key, shape_class):
    try:
        with _lock:
            entry = _choices().get(key, {}).get(shape_class)
    except OSError:         # no cache directory at all (not even a temporary one)
        return None
    return dict(entry) if entry is not None else None


def put_choice(key, shape_class, entry):
    """Record a measured choice (merged with what other processes wrote meanwhile)."""
    entry = dict(entry)
    if not _valid_entry(entry):
        return
    with _lock:
        try:
            root = _root()
        except OSError:     # no cache directory at all: measured again next time
            return
        mine = _choices()
        mine.setdefault(key, {})[shape_class] = entry
        merged = _read_choices(root)
        for k, classes in mine.items():
            merged.setdefault(k, {}).update(classes)
        _state["choices"] = merged
        root.write(os.path.join(root.path, _CHOICES),
                   json.dumps(merged, indent=0, sort_keys=True).encode())
