"""Content-addressed kernel cache: generated `.py` modules on disk, plus numba's own cache.

Key = sha256(canonical kernel text + environment fingerprint). The text names ops, dtypes,
ranks and broadcast pattern but never concrete dimension sizes, so a retrace for a new
batch size hits the same entry. Entries are plain Python files imported as modules, so
numba's `cache=True` (which cannot cache `exec`-made functions) stores machine code beside
them in `__pycache__`. A file whose content is not exactly what we would generate is
treated as corrupt and rewritten; a directory not owned by the user, or writable by
others, is never trusted (a private temporary directory is used instead, with a warning).
"""
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
import warnings

_lock = threading.Lock()
_state = {"dir": None, "env": None, "choices": None}
STATS = {"hits": 0, "misses": 0, "rebuilt": 0}


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
        from .codegen import vector_width
        feats = llb.get_host_cpu_features().flatten()
        _state["env"] = (f"graphc={gv} src={_package_fingerprint()} numba={numba.__version__} "
                         f"llvmlite={llvmlite.__version__} numpy={numpy.__version__} "
                         f"python={sys.version_info[:3]} cpu={llb.get_host_cpu_name()} "
                         f"features={hashlib.sha256(feats.encode()).hexdigest()[:16]} "
                         f"vector_width={vector_width()}")
    return _state["env"]


def kernel_key(canonical_text):
    return hashlib.sha256((canonical_text + "\n" + environment()).encode()).hexdigest()


def _trusted(path):
    """Owned by us and not writable by group or others."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not st.st_mode & 0o022


def cache_dir():
    """The kernel cache directory: GRAPHC_CACHE_DIR or ~/.cache/graphc, if trustworthy."""
    want = os.environ.get("GRAPHC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "graphc")
    cur = _state["dir"]
    if cur is not None and cur[0] == want:
        return cur[1]
    path = want
    try:
        os.makedirs(want, mode=0o700, exist_ok=True)
    except OSError as e:
        path = None
        reason = f"cannot create it ({e})"
    else:
        reason = "it is not owned by this user or is writable by others"
    if path is None or not _trusted(path):
        path = tempfile.mkdtemp(prefix="graphc-kernels-")
        warnings.warn(f"graphc: not using kernel cache directory {want!r}: {reason}; using "
                      f"the private directory {path!r} for this process instead", stacklevel=3)
    _state["dir"] = (want, path)
    _state["choices"] = None
    return path


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _module_path(key):
    return os.path.join(cache_dir(), "kernels", f"k_{key[:40]}.py")


def has_module(key):
    """Is a generated module for `key` already on disk (so loading it is cheap)?"""
    return os.path.exists(_module_path(key))


def load_module(key, source):
    """Import the module for `key`, writing `source` first unless an identical file exists.

    Returns (module, status) with status 'hit' (file found intact), 'miss' or 'rebuilt'.
    """
    path = _module_path(key)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    stem = os.path.splitext(os.path.basename(path))[0]
    text = f"# graphc kernel {key}\n{source}"
    status = "miss"
    with _lock:
        try:
            with open(path) as f:
                found = f.read()
            status = "hit" if _code(found) == _code(text) else "rebuilt"
        except OSError:
            found = None
        except UnicodeDecodeError:
            status = "rebuilt"
        if status != "hit":
            if status == "rebuilt":
                drop_compiled(path)
            _write_atomic(path, text)
        STATS[{"hit": "hits", "miss": "misses", "rebuilt": "rebuilt"}[status]] += 1
        name = f"graphc_kernels_{stem}"
        mod = sys.modules.get(name)
        if mod is not None and status == "hit":
            return mod, status
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod, status


def _code(text):
    """Module text without comments: the same kernel made from ops on other user lines
    (the comments name them) is the same cache entry, and its file is left alone."""
    lines = []
    for ln in text.splitlines():
        ln = ln.split("  #")[0].rstrip()
        if ln and not ln.lstrip().startswith("#"):
            lines.append(ln)
    return "\n".join(lines)


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
            try:
                os.remove(os.path.join(folder, n))
            except OSError:
                pass


# -- measured choices (kernel vs numpy), persisted beside the kernels ----------------------

def _choices_path():
    return os.path.join(cache_dir(), "choices.json")


def _choices():
    if _state["choices"] is None:
        try:
            with open(_choices_path()) as f:
                data = json.load(f)
            _state["choices"] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            _state["choices"] = {}
    return _state["choices"]


def get_choice(key, shape_class):
    entry = _choices().get(key, {}).get(shape_class)
    if isinstance(entry, dict) and entry.get("choice") in ("kernel", "numpy"):
        return entry
    return None


def put_choice(key, shape_class, entry):
    with _lock:
        data = _choices()
        data.setdefault(key, {})[shape_class] = entry
        try:
            _write_atomic(_choices_path(), json.dumps(data, indent=0, sort_keys=True))
        except OSError:
            pass  # an unwritable cache only costs a re-measurement next process
