"""gc.function's hot entry: one generated `__call__` per hot fingerprint of positional args.

The entry checks each argument against the fingerprint that mapped to a trace (its type; a
tensor's or array's dtype and shape; a Python value's type and value) with one unrolled line
per check, then finishes the call with the trace's own source (ConcreteFunction._entry_body:
a compiled loop's kernel call inline, or its `_call_leaves`). Anything else (keywords,
another arity, another fingerprint, a trace or eager mode in progress) goes to
Function.__call__, the fingerprint path, so the entry only ever takes calls that path
would give the same trace with the same leaves.

The entry is the `__call__` of a subclass of the function's class made for it, and the
Function switches its `__class__` to it (one atomic store, as other threads read it): the
call then goes from the user's line straight into the generated code, without a frame for
Function.__call__ and one for the entry (~0.1 us of a ~1.5 us cached call). It takes one
positional parameter per argument (no argument tuple to build and unpack). A cached call
of a one-loop graph is this frame and the kernel, called through its compiled entry point
(the entry's checks are the ones numba's dispatch would make: loops_entry.direct_call).
"""
import weakref

from numpy import ndarray

from . import context
from .fingerprint import PY, PY_KEYED, _Marker
from .native_entry import install as install_native
from .native_layout import after_calls, layout as native_layout
from .tensor import Tensor


def arg_parts(fp):
    """Per argument, (dtype, shape) of a tensor or array, or (PY, type, value) of a Python
    value keyed by value; None when another kind (Variable, sequence, float) is in it."""
    parts, i = [], 0
    while i < len(fp):
        p = fp[i]
        if p is PY and fp[i + 1] in PY_KEYED:
            parts.append(fp[i:i + 3])
            i += 3
        elif isinstance(p, _Marker):
            return None
        else:
            parts.append(fp[i:i + 2])
            i += 2
    return parts


def make_entry(fp, cf, name, base, device=False):
    """The class whose `__call__` is the entry for calls whose positional arguments have
    fingerprint `fp` (a list, as Function.__call__ builds it), running trace `cf`: a
    subclass of `base` (the Function's own class, which must not override __call__);
    None when fp has a part it cannot check inline. `device` (a device backend): a
    tensor's leaf is its device array when it has one, as Function.__call__ takes it
    (reading `_np` of a device tensor would copy it to the host), and no native entry
    (it reads `_np` only)."""
    parts = arg_parts(fp)
    if parts is None:
        return None
    ns = {"Tensor": Tensor, "ndarray": ndarray, "F_call": _base_call(), "_M": _MISSING,
          "_given": _given, "_busy": context._busy}
    args = [f"a{i}" for i in range(len(parts))]
    # one positional parameter per argument (no tuple to build and unpack: ~0.05 us); a
    # call with fewer, more or keyword arguments leaves the last one unset or fills `rest`
    params = "".join(f"{a}=_M, " for a in args)
    given = f"*_given(({''.join(a + ', ' for a in args)})), " if args else ""
    lines = [f"def __call__(self, {params}/, *rest, **kwargs):",
             "    if rest or kwargs or _busy[0]"     # tracing, taping or run eagerly
             + (f" or {args[-1]} is _M:" if args else ":"),
             f"        return F_call(self, {given}*rest, **kwargs)"]
    miss = f"        return F_call(self, {', '.join(args)})"
    leaves, spec = [], []          # spec: per argument, what the native entry checks
    for i, part in enumerate(parts):
        a = args[i]
        if part[0] is PY:
            t, value = part[1], part[2]
            spec.append(("py", t, value))
            if value is None or t is bool:           # singletons
                ns[f"K{i}"] = value
                lines.append(f"    if {a} is not K{i}:")
            else:
                ns[f"K{i}"], ns[f"P{i}"] = value, t
                lines.append(f"    if type({a}) is not P{i} or {a} != K{i}:")
            lines.append(miss)
            continue
        v = f"v{len(leaves)}"
        ns[f"D{len(leaves)}"], ns[f"S{len(leaves)}"] = part
        read = ([f"        {v} = {a}._dev", f"        if {v} is None:",
                 f"            {v} = {a}._np"] if device else [f"        {v} = {a}._np"])
        lines += [f"    t = type({a})",
                  "    if t is Tensor:",
                  *read,
                  "    elif t is ndarray:",
                  f"        {v} = {a}",
                  "    else:",
                  miss,
                  # `is`: a dtype equal but not the same object takes the fingerprint path
                  f"    if {v} is None or {v}.dtype is not D{len(leaves)} or "
                  f"{v}.shape != S{len(leaves)}:",
                  miss]
        leaves.append(v)
        spec.append(("leaf", *part))
    known = [s[1:] for s in spec if s[0] == "leaf"]       # per leaf, (dtype, shape)
    body, names = cf._entry_body(leaves, known)
    ns.update(names)
    native = not device and native_layout() is not None
    if native:      # count the calls the native entry would take; the last one makes it
        ns["_left"] = [after_calls()]
        ns["_upgrade"] = lambda: _go_native(cls, ns, cf, known, spec)
        lines += ["    if _left[0]:", "        _left[0] -= 1",
                  "        if not _left[0]:", "            _upgrade()"]
        # the same body as a function of the leaves, for the native entry to call
        body_def = [f"def body({', '.join(leaves)}):"] + ["    " + ln for ln in body]
    lines += ["    " + ln for ln in body] + (body_def if native else [])
    exec(compile("\n".join(lines) + "\n", f"<graphc entry {name}>", "exec"), ns)  # noqa: S102
    # py_call: the Python entry, also after a native one replaced it as __call__
    cls = type(base.__name__, (base,), {"__call__": ns["__call__"], "__slots__": (),
                                        "py_call": staticmethod(ns["__call__"]),
                                        "__module__": base.__module__,
                                        "__qualname__": base.__qualname__})
    return cls


def _go_native(cls, ns, cf, known, spec):
    """The entry `cls` has taken its share of calls in Python: its checks and body go to
    machine code (native_entry.py); the Python entry stays for every other call."""
    loop = cf._native_body(known)
    install_native(cls, ns["__call__"], spec, ns["body"] if loop is None else loop,
                   context._busy, Tensor)


class HotEntries:
    """The entry-switching half of Function (its state is set up in Function.__init__)."""

    def _hot_entry(self, hot):
        """The hot fingerprint hit again: from now on calls go to its entry first (the
        class whose `__call__` it is becomes this object's class). Made on the second hit
        (a fingerprint seen once never pays the ~50 us of generating one), kept per
        fingerprint; none for a subclass with its own __call__ (the entry would take its
        calls from it)."""
        fp, cf, _ = hot
        if cf._on_change is None:       # before the entry is made: no change goes unheard
            cf._on_change = change_hook(self)
        key = tuple(fp)
        entries = self._entries
        if key in entries:
            entry = entries[key]
        else:
            plain = self._plain
            entry = None if plain.__call__ is not _base_call() \
                else make_entry(fp, cf, self._name, plain, self._device_leaves)
            entries[key] = entry
        self._use_entry(entry)
        # a trace changed meanwhile (_trace_changed, another thread): make it afresh next time
        self._hot = (fp, cf, self._entries is entries)

    def _use_entry(self, entry):
        """Calls go to `entry` (an entry class, see function_entry.py) first, or (None)
        straight to Function.__call__. Either is right for every call: only speed depends
        on which, so a thread may store one while another stores the other."""
        self._entry = entry
        cls = self._plain if entry is None else entry
        if type(self) is not cls:
            self.__class__ = cls            # one store: other threads see the old or the new

    def _trace_changed(self):
        """A trace's inline source came or went: its entries are made afresh (on the next
        hot hit). Only speed depends on it: every entry gives a correct call either way."""
        self._entries = {}
        self._use_entry(None)
        fp, cf, _ = self._hot
        self._hot = (fp, cf, False)


_MISSING = object()      # an entry parameter no argument filled


def _given(values):
    """The entry's parameters that arguments filled (the unfilled ones are the last)."""
    return [v for v in values if v is not _MISSING]


def _base_call():
    from .function import Function
    return Function.__call__


def change_hook(function):
    """A ConcreteFunction's `_on_change`: tells `function` (held weakly) that the trace's
    inline source came or went, so that its entries are made afresh."""
    ref = weakref.ref(function)

    def changed():
        f = ref()
        if f is not None:
            f._trace_changed()
    return changed
