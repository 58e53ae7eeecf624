"""gc.function's hot entry in machine code: the argument checks, and a compiled loop's call.

The generated Python entry (function_entry.py) spends ~1 us of a cached call on checks and
wrapping that numba's own dispatch does in C: reading each argument's type, dtype, shape and
flags, counting the run, building the result Tensor. For the same calls this module builds
the same steps as one LLVM function (llvmlite, compiled by numba's JIT) and makes it the
entry class's `__call__` (a method descriptor: CPython passes `self`, the class and the
arguments as a vector). What it checks, field by field (offsets from native_layout.py):

- no keywords, the entry's arity, `context._busy[0]` is 0 (no trace, tape or eager mode);
- per argument: exactly a Tensor (its `_np` slot) or an ndarray; the value exactly an
  ndarray with the fingerprint's dtype object, rank and dims; C-contiguous, aligned and
  writable where it goes to a compiled kernel as an array (what numba's typing would ask).

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
import numpy as np
from llvmlite import ir

from .native_layout import layout

_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_FLAGS_CARRAY = 0x1 | 0x100 | 0x400        # C_CONTIGUOUS | ALIGNED | WRITEABLE
_VECTORCALL_OFFSET = 1 << 63
_MISS_ON_STACK = 16             # a call handed on with more arguments copies them to the heap
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
    keep = [py_call, busy, tensor_type, body] + [a[1:] for a in args]
    name = f"graphc_entry_{next(_names)}"
    try:
        module = _Gen(lay, keep).module(name, py_call, args, body, busy, tensor_type)
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


def _new_method(cls, mdef):
    f = ctypes.pythonapi.PyDescr_NewMethod
    f.restype, f.argtypes = ctypes.py_object, [ctypes.py_object, ctypes.c_void_p]
    return f(cls, ctypes.addressof(mdef))


class _Gen:
    """Builds the LLVM module of one entry; constants are addresses of objects in `keep`."""

    def __init__(self, lay, keep):
        self.lay, self.keep = lay, keep

    # -- small helpers -----------------------------------------------------------------
    def obj(self, value):
        """A constant PyObject* for `value` (kept alive with the entry)."""
        self.keep.append(value)
        return ir.Constant(_I64, id(value)).inttoptr(_I8P)

    def fn(self, name, ret, *args):
        """The C API function `name`, declared in the module (the JIT resolves it to the
        address native_layout found: _prepare)."""
        if name in self.mod.globals:
            return self.mod.globals[name]
        return ir.Function(self.mod, ir.FunctionType(ret, args), name)

    def field(self, b, ptr, offset, ty=_I8P):
        p = b.gep(ptr, [ir.Constant(_I64, offset)])
        return b.load(b.bitcast(p, ty.as_pointer()))

    def store_field(self, b, ptr, offset, value):
        p = b.gep(ptr, [ir.Constant(_I64, offset)])
        b.store(value, b.bitcast(p, _I8P.as_pointer()))

    def vectorcall(self, b, callable_, items, nargs=None, kwnames=None):
        arr = b.alloca(_I8P, ir.Constant(_I64, max(len(items), 1)))
        for k, v in enumerate(items):
            b.store(v, b.gep(arr, [ir.Constant(_I64, k)]))
        call = self.fn("PyObject_Vectorcall", _I8P, _I8P, _I8P.as_pointer(), _I64, _I8P)
        n = ir.Constant(_I64, len(items)) if nargs is None else nargs
        return b.call(call, [callable_, arr, n, kwnames or ir.Constant(_I8P, None)])

    def incref(self, b, v):
        b.call(self.fn("Py_IncRef", ir.VoidType(), _I8P), [v])

    def decref(self, b, v):
        b.call(self.fn("Py_DecRef", ir.VoidType(), _I8P), [v])

    # -- the function ------------------------------------------------------------------
    def module(self, name, py_call, spec, body, busy, tensor_type):
        lay = self.lay
        mod = self.mod = ir.Module(name=name)
        # METH_METHOD | METH_FASTCALL | METH_KEYWORDS: (self, defining class, args, ...)
        fty = ir.FunctionType(_I8P, [_I8P, _I8P, _I8P.as_pointer(), _I64, _I8P])
        func = ir.Function(mod, fty, name)
        self_, _, args, nargsf, kwnames = func.args
        b = ir.IRBuilder(func.append_basic_block("entry"))
        miss = func.append_basic_block("miss")
        nargs = b.and_(nargsf, ir.Constant(_I64, ~_VECTORCALL_OFFSET & (2**64 - 1)))
        self.check(b, b.icmp_unsigned("!=", kwnames, ir.Constant(_I8P, None)), miss)
        self.check(b, b.icmp_unsigned("!=", nargs, ir.Constant(_I64, len(spec))), miss)
        items = self.field(b, self.obj(busy), lay.list_items, _I8P.as_pointer())
        self.check(b, b.icmp_unsigned("!=", b.load(items), self.obj(0)), miss)
        carray = set() if callable(body) else \
            {p[1] for p in body.params if p[0] == "leaf" and not p[2]}
        leaves = []
        for i, (kind, x, y) in enumerate(spec):
            a = b.load(b.gep(args, [ir.Constant(_I64, i)]))
            if kind == "py":
                self.python_value(b, a, x, y, miss)
            else:
                leaves.append(self.leaf(b, func, a, x, y, len(leaves) in carray, tensor_type,
                                        miss))
        if callable(body):
            b.ret(self.vectorcall(b, self.obj(body), leaves))
        else:
            self.loop_body(b, func, body, leaves, tensor_type)
        b.position_at_end(miss)
        self.miss(b, self_, args, nargs, kwnames, py_call)
        return mod

    def check(self, b, failed, miss):
        """Go on in a new block when `failed` is false, else to `miss`."""
        ok = b.function.append_basic_block()
        b.cbranch(failed, miss, ok)
        b.position_at_end(ok)

    def python_value(self, b, a, t, value, miss):
        """Check argument `a` is the Python value the trace was made for: the same object
        for None and bools, else exactly type `t` and equal (as the Python entry checks)."""
        if value is None or t is bool:
            self.check(b, b.icmp_unsigned("!=", a, self.obj(value)), miss)
            return
        self.check(b, b.icmp_unsigned("!=", self.field(b, a, self.lay.ob_type), self.obj(t)),
                   miss)
        equal = b.call(self.fn("PyObject_RichCompareBool", _I32, _I8P, _I8P, _I32),
                       [a, self.obj(value), ir.Constant(_I32, 2)])        # Py_EQ
        failed = b.function.append_basic_block()
        ok = b.function.append_basic_block()
        b.cbranch(b.icmp_signed("<", equal, ir.Constant(_I32, 0)), failed, ok)
        b.position_at_end(failed)            # cannot happen for these exact types; if it
        b.call(self.fn("PyErr_Clear", ir.VoidType()), [])     # did, the Python entry decides
        b.branch(miss)
        b.position_at_end(ok)
        self.check(b, b.icmp_unsigned("==", equal, ir.Constant(_I32, 0)), miss)

    def leaf(self, b, func, a, dtype, shape, carray, tensor_type, miss):
        """The checked value of argument `a` (a Tensor's `_np`, or the ndarray itself)."""
        lay = self.lay
        ndarray = self.obj(np.ndarray)
        t = self.field(b, a, lay.ob_type)
        is_tensor = b.icmp_unsigned("==", t, self.obj(tensor_type))
        from_tensor = func.append_basic_block()
        other = func.append_basic_block()
        joined = func.append_basic_block()
        b.cbranch(is_tensor, from_tensor, other)
        b.position_at_end(from_tensor)
        v_tensor = self.field(b, a, lay.slots["_np"])
        b.branch(joined)
        b.position_at_end(other)
        self.check(b, b.icmp_unsigned("!=", t, ndarray), miss)
        after_other = b.block
        b.branch(joined)
        b.position_at_end(joined)
        v = b.phi(_I8P)
        v.add_incoming(v_tensor, from_tensor)
        v.add_incoming(a, after_other)
        self.check(b, b.icmp_unsigned("==", v, ir.Constant(_I8P, None)), miss)
        self.check(b, b.icmp_unsigned("!=", self.field(b, v, lay.ob_type), ndarray), miss)
        self.check(b, b.icmp_unsigned("!=", self.field(b, v, lay.array_descr), self.obj(dtype)),
                   miss)
        nd = self.field(b, v, lay.array_nd, _I32)
        self.check(b, b.icmp_unsigned("!=", nd, ir.Constant(_I32, len(shape))), miss)
        if shape:
            dims = self.field(b, v, lay.array_dims, _I64.as_pointer())
            for k, n in enumerate(shape):
                d = b.load(b.gep(dims, [ir.Constant(_I64, k)]))
                self.check(b, b.icmp_unsigned("!=", d, ir.Constant(_I64, n)), miss)
        if carray:
            flags = b.and_(self.field(b, v, lay.array_flags, _I32), ir.Constant(_I32, _FLAGS_CARRAY))
            self.check(b, b.icmp_unsigned("!=", flags, ir.Constant(_I32, _FLAGS_CARRAY)), miss)
        return v

    def miss(self, b, self_, args, nargs, kwnames, py_call):
        """Hand the call as it came to the Python entry: py_call(self, *args, **kwargs).
        The argument vector is copied to the stack when short, else to the heap: a call
        with any number of arguments must get the Python entry's TypeError, and a stack
        array as long as the call's arguments overflowed the stack (a segfault) for
        f(*[x] * 2_000_000), or far fewer in a thread with a small stack."""
        has_kw = b.icmp_unsigned("!=", kwnames, ir.Constant(_I8P, None))
        size = self.field(b, b.select(has_kw, kwnames, self.obj(())), self.lay.tuple_size, _I64)
        total = b.add(nargs, size)
        n = b.add(total, ir.Constant(_I64, 1))
        small = b.alloca(_I8P, ir.Constant(_I64, _MISS_ON_STACK))
        big = b.icmp_unsigned(">", n, ir.Constant(_I64, _MISS_ON_STACK))
        start = b.block
        heap = b.function.append_basic_block("heap")
        have = b.function.append_basic_block("have_vector")
        b.cbranch(big, heap, have)
        b.position_at_end(heap)
        malloc = self.fn("PyMem_Malloc", _I8P, _I64)
        raw = b.call(malloc, [b.mul(n, ir.Constant(_I64, 8))])
        no_memory = b.function.append_basic_block("no_memory")
        got = b.function.append_basic_block("heap_ok")
        b.cbranch(b.icmp_unsigned("==", raw, ir.Constant(_I8P, None)), no_memory, got)
        b.position_at_end(no_memory)
        b.ret(b.call(self.fn("PyErr_NoMemory", _I8P), []))
        b.position_at_end(got)
        on_heap = b.bitcast(raw, _I8P.as_pointer())
        b.branch(have)
        b.position_at_end(have)
        arr = b.phi(_I8P.as_pointer())
        arr.add_incoming(small, start)
        arr.add_incoming(on_heap, got)
        b.store(self_, arr)
        loop = b.function.append_basic_block("copy")
        done = b.function.append_basic_block("copied")
        start = b.block
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(_I64)
        i.add_incoming(ir.Constant(_I64, 0), start)
        more = b.icmp_unsigned("<", i, total)
        body = b.function.append_basic_block("copy_one")
        b.cbranch(more, body, done)
        b.position_at_end(body)
        b.store(b.load(b.gep(args, [i])), b.gep(arr, [b.add(i, ir.Constant(_I64, 1))]))
        i.add_incoming(b.add(i, ir.Constant(_I64, 1)), body)
        b.branch(loop)
        b.position_at_end(done)
        call = self.fn("PyObject_Vectorcall", _I8P, _I8P, _I8P.as_pointer(), _I64, _I8P)
        r = b.call(call, [self.obj(py_call), arr, b.add(nargs, ir.Constant(_I64, 1)), kwnames])
        free = b.function.append_basic_block("free")
        out = b.function.append_basic_block("return")
        b.cbranch(big, free, out)
        b.position_at_end(free)
        b.call(self.fn("PyMem_Free", ir.VoidType(), _I8P), [b.bitcast(arr, _I8P)])
        b.branch(out)
        b.position_at_end(out)
        b.ret(r)

    def loop_body(self, b, func, body, leaves, tensor_type):
        lay = self.lay
        counter = ir.Constant(_I64, body.counts).inttoptr(_I64.as_pointer())
        b.store(b.add(b.load(counter), ir.Constant(_I64, 1)), counter)
        kargs, temps = [], []
        get_item = self.fn("PyObject_GetItem", _I8P, _I8P, _I8P)
        for p in body.params:
            if p[0] == "const":
                kargs.append(self.obj(p[1]))
            elif p[2]:                                  # a 0-d leaf passed as v[()]
                item = b.call(get_item, [leaves[p[1]], self.obj(())])
                self.on_null(b, item, temps)
                kargs.append(item)
                temps.append(item)
            else:
                kargs.append(leaves[p[1]])
        r = self.vectorcall(b, self.obj(body.ep), kargs)
        for t in temps:
            self.decref(b, t)
        failed = func.append_basic_block("kernel_raised")
        ok = func.append_basic_block("kernel_returned")
        b.cbranch(b.icmp_unsigned("==", r, ir.Constant(_I8P, None)), failed, ok)
        b.position_at_end(failed)
        self.kernel_raised(b, body, leaves)
        b.position_at_end(ok)
        if body.index is not None:
            item = b.call(get_item, [r, self.obj(body.index)])
            self.decref(b, r)
            self.on_null(b, item, [])
            r = item
        kind = body.wrap[0]
        if kind == "mul":
            mul = self.fn("PyNumber_Multiply", _I8P, _I8P, _I8P)
            value = b.call(mul, [self.obj(body.wrap[1]), r])
            self.decref(b, r)
            self.on_null(b, value, [])
        elif kind == "bool":
            false, true = body.wrap[1]
            value = b.select(b.icmp_unsigned("==", r, self.obj(True)), self.obj(true),
                             self.obj(false))
            self.incref(b, value)
            self.decref(b, r)
        else:
            value = r
        alloc = self.fn("PyType_GenericAlloc", _I8P, _I8P, _I64)
        t = b.call(alloc, [self.obj(tensor_type), ir.Constant(_I64, 0)])
        self.on_null(b, t, [value])
        self.store_field(b, t, lay.slots["_np"], value)
        none = self.obj(None)
        for slot in ("_sym", "_graph", "_dev"):
            self.incref(b, none)
            self.store_field(b, t, lay.slots[slot], none)
        b.ret(t)

    def on_null(self, b, value, release):
        """Return NULL (the exception set) when `value` is NULL, releasing `release`."""
        bad = b.function.append_basic_block()
        ok = b.function.append_basic_block()
        b.cbranch(b.icmp_unsigned("==", value, ir.Constant(_I8P, None)), bad, ok)
        b.position_at_end(bad)
        for v in release:
            self.decref(b, v)
        b.ret(ir.Constant(_I8P, None))
        b.position_at_end(ok)

    def kernel_raised(self, b, body, leaves):
        """`except Exception as e: return on_error(e, *leaves)`; anything else propagates."""
        lay = self.lay
        matches = self.fn("PyErr_ExceptionMatches", _I32, _I8P)
        hit = b.call(matches, [ir.Constant(_I64, lay.exception).inttoptr(_I8P)])
        handle = b.function.append_basic_block()
        other = b.function.append_basic_block()
        b.cbranch(b.icmp_unsigned("!=", hit, ir.Constant(_I32, 0)), handle, other)
        b.position_at_end(other)
        b.ret(ir.Constant(_I8P, None))
        b.position_at_end(handle)
        exc = self.fetch(b)
        res = self.vectorcall(b, self.obj(body.on_error), [exc] + leaves)
        self.decref(b, exc)
        b.ret(res)

    def fetch(self, b):
        """The exception being raised (a new reference), cleared."""
        funcs = self.lay.funcs
        if "PyErr_GetRaisedException" in funcs:
            return b.call(self.fn("PyErr_GetRaisedException", _I8P), [])
        slots = [b.alloca(_I8P) for _ in range(3)]
        b.call(self.fn("PyErr_Fetch", ir.VoidType(), *[_I8P.as_pointer()] * 3), slots)
        b.call(self.fn("PyErr_NormalizeException", ir.VoidType(), *[_I8P.as_pointer()] * 3),
               slots)
        typ, exc, tb = (b.load(s) for s in slots)
        has_tb = b.function.append_basic_block()
        done = b.function.append_basic_block()
        b.cbranch(b.icmp_unsigned("!=", tb, ir.Constant(_I8P, None)), has_tb, done)
        b.position_at_end(has_tb)
        b.call(self.fn("PyException_SetTraceback", _I32, _I8P, _I8P), [exc, tb])
        b.branch(done)
        b.position_at_end(done)
        self.decref(b, typ)
        self.decref(b, tb)
        return exc
