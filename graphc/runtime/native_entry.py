"""gc.function's hot entry in machine code: the argument checks, and a compiled loop's call.

The generated Python entry (function_entry.py) spends ~1 us of a cached call on checks and
wrapping that numba's own dispatch does in C: reading each argument's type, dtype, shape and
flags, counting the run, building the result Tensor. For the same calls this module builds
the same steps as one LLVM function (native_ir.py; compiled by an llvmlite MCJIT engine of
its own, freed with the entry) and makes it the entry class's `__call__` (a method descriptor: CPython passes `self`, the class and the
arguments as a vector). What it checks, field by field (offsets from native_layout.py):

- no keywords, the entry's arity, `context._busy[0]` is 0 (no trace, tape or eager mode);
- per argument: exactly a Tensor (its `_np` slot) or an ndarray; the value exactly an
  ndarray with the fingerprint's dtype object, rank and dims; C-contiguous, aligned and
  writable where it goes to a compiled kernel as an array (what numba's typing would ask);
  or, for a Python value in the signature, the same None/bool, or an int/str/bytes of that
  exact type and equal.

Any other call is handed, unchanged, to the generated Python entry, which makes every
decision as before: the native code only ever takes a subset of its calls, and does for
them what its source does. Then either the compiled loop's overload entry point is called
with the arrays (constants and 0-d scalars as the Python entry passes them), its result
wrapped as the Python entry wraps it; an exception from the kernel goes to `on_error` (the
same `except` clauses, in Python) -- or, for any other trace, the entry's Python body is
called with the checked leaves.
"""
import ctypes
import itertools
import threading

import llvmlite.binding as llb

from .native_ir import EntryIR
from .native_layout import layout

# METH_METHOD: a bound method (`f.__call__`) holds the defining class, which holds the
# method def and every object the code reads by address (cls._native_keep); without it the
# bound method held only a pointer to the def, freed with the class when the entry was
# dropped (_trace_changed, an evicted trace), and calling it crashed
_METH_FASTCALL_KEYWORDS_METHOD = 0x80 | 0x2 | 0x200


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


class LoopBody:
    """What the native code needs to call a compiled loop and wrap its result.
    `params`: per kernel parameter ("leaf", i, scalar) or ("const", value); `index`: the
    result's position in the kernel's returned tuple, or None; `wrap`: ("mul", one),
    ("bool", (false, true)) or ("array",)."""

    def __init__(self, ep, params, index, wrap, counts, on_error):
        self.ep, self.params, self.index, self.wrap = ep, params, index, wrap
        self.counts, self.on_error = counts, on_error


def install(cls, py_call, args, body, busy, tensor_type):
    """Make `cls.__call__` the native entry for positional arguments `args` (per argument,
    ("leaf", dtype, shape) or ("py", type, value): a Python value keyed by value) running
    `body` (a LoopBody, or a Python function of the leaves);
    `py_call` takes every other call. False (nothing changed) where native entries are off.
    Compiled now when numba's compiler is free, else on a helper thread once it is."""
    lay = layout()
    if lay is None or FAILED:
        return False
    with _claim_lock:    # once per class: a second install would free the first's objects
        if "_native_claimed" in cls.__dict__:   # while calls in other threads run its code
            return False
        cls._native_claimed = True
    keep = []        # EntryIR.obj puts there every object the code reads by address
    name = f"graphc_entry_{next(_names)}"
    try:
        module = EntryIR(lay, keep).module(name, py_call, args, body, busy, tensor_type)
    except Exception as e:  # noqa: BLE001 - only speed is lost: see _finish
        FAILED.append(e)
        return False
    if not _try_locked(_finish, cls, module, name, keep):
        # numba is compiling on another thread (a background tier): the Python entry serves
        # until the compiler is free, then a helper thread puts the native one in place
        threading.Thread(target=_locked, args=(_finish, cls, module, name, keep),
                         name="graphc-native-entry", daemon=True).start()
    return True


_names = itertools.count()
_claim_lock = threading.Lock()
FAILED = []      # the error that stopped native entries in this process, if one did


def _finish(cls, module, name, keep):
    """Compile `module` and make its function `cls.__call__` (one store: a call in another
    thread runs the Python entry or the native one, both right). An error here costs only
    speed -- the Python entry goes on taking the calls -- so it is kept in FAILED (and no
    more native entries are tried), not raised into the user's call."""
    try:
        _install(cls, module, name, keep)
    except Exception as e:  # noqa: BLE001
        FAILED.append(e)


def _install(cls, module, name, keep):
    _prepare()
    compiled = llb.parse_assembly(str(module))
    compiled.verify()
    engine = _engine(compiled)
    engine.finalize_object()
    mdef = _MethodDef(b"__call__", engine.get_function_address(name),
                      _METH_FASTCALL_KEYWORDS_METHOD, None)
    descr = _new_method(cls, mdef)
    # alive as long as the class (its __call__ and every bound method hold it); the engine
    # too: disposing it frees the machine code, once nothing can call it
    cls._native_keep = (mdef, keep, engine)
    cls.__call__ = descr


_prepared = []


def _prepare():
    """Once per process: LLVM's native target, and where the C API functions are."""
    if not _prepared:
        llb.initialize_native_target()         # numba does it too, when it compiles first
        llb.initialize_native_asmprinter()
        for name, address in layout().funcs.items():
            llb.add_symbol(name, address)
        _prepared.append(True)


def _engine(module):
    """A JIT of its own for one entry's module (holding numba's compiler lock, as all LLVM
    work in the process does), so that its code is freed with the entry: one engine
    for all entries kept every entry's code and module for good (~60 KB each, for
    functions made and dropped in a loop). Optimization level 0: the code is straight-line
    loads and compares, and numba's O3 pipeline took ~33 ms per entry against ~4 ms here."""
    tm = llb.Target.from_default_triple().create_target_machine(opt=0, codemodel="jitdefault")
    return llb.create_mcjit_compiler(module, tm)       # owns the target machine


def _try_locked(fn, *args):
    """fn(*args) holding numba's compiler lock if it is free now; False if it is not."""
    from numba.core.compiler_lock import global_compiler_lock
    lock = getattr(global_compiler_lock, "_lock", None)
    if lock is None:
        return _locked(fn, *args) or True
    if not lock.acquire(blocking=False):
        return False
    try:
        fn(*args)
    finally:
        lock.release()
    return True


def _locked(fn, *args):
    from numba.core.compiler_lock import global_compiler_lock
    with global_compiler_lock:
        fn(*args)


# a prototype of our own: setting argtypes on ctypes.pythonapi's shared one would change it
# for every other user in the process
_PyDescr_NewMethod = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.c_void_p)(
    ("PyDescr_NewMethod", ctypes.pythonapi))


def _new_method(cls, mdef):
    return _PyDescr_NewMethod(cls, ctypes.addressof(mdef))
