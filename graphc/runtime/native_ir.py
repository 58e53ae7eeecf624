"""The LLVM IR of a native entry (see native_entry.py): one function per entry class.

The function takes CPython's METH_METHOD | METH_FASTCALL | METH_KEYWORDS arguments (self,
the defining class, the argument vector, its length, the keyword names), checks them
field by field at the offsets native_layout.py probed, and either runs the body (a
compiled loop's entry point and the result Tensor, or the Python body with the checked
leaves) or hands the call unchanged to the Python entry. Every object it uses is a
constant address of an object in `keep`, which the caller keeps alive with the code.
"""
import numpy as np
from llvmlite import ir

_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_FLAGS_CARRAY = 0x1 | 0x100 | 0x400        # C_CONTIGUOUS | ALIGNED | WRITEABLE
_VECTORCALL_OFFSET = 1 << 63
_MISS_ON_STACK = 16             # a call handed on with more arguments copies them to the heap


class EntryIR:
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
