"""gc.function's hot entry: one generated function per hot fingerprint of positional args.

`entry(args)` checks each argument against the fingerprint that mapped to a trace (its
type; a tensor's or array's dtype and shape; a Python value's type and value) with one
unrolled line per check, then finishes the call with the trace's own source
(ConcreteFunction._entry_body: a compiled loop's kernel call inline, or its `_call_leaves`).
It returns MISS for anything else, and Function.__call__ goes on with the fingerprint path,
so the entry only ever takes calls that path would give the same trace with the same
leaves: a cached call of a one-loop graph is then this frame and the kernel.
"""
import weakref

from numpy import ndarray

from .fingerprint import MISS, PY, PY_KEYED, _Marker
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


def make_entry(fp, cf, name):
    """The entry for calls whose positional arguments have fingerprint `fp` (a list, as
    Function.__call__ builds it), running trace `cf`; None when fp has a part it cannot
    check inline."""
    parts = arg_parts(fp)
    if parts is None:
        return None
    ns = {"MISS": MISS, "Tensor": Tensor, "ndarray": ndarray}
    args = [f"a{i}" for i in range(len(parts))]
    lines = ["def entry(args):"] + ([f"    {', '.join(args)}, = args"] if args else [])
    leaves = []
    for i, part in enumerate(parts):
        a = args[i]
        if part[0] is PY:
            t, value = part[1], part[2]
            if value is None or t is bool:           # singletons
                ns[f"K{i}"] = value
                lines.append(f"    if {a} is not K{i}:")
            else:
                ns[f"K{i}"], ns[f"P{i}"] = value, t
                lines.append(f"    if type({a}) is not P{i} or {a} != K{i}:")
            lines.append("        return MISS")
            continue
        v = f"v{len(leaves)}"
        ns[f"D{len(leaves)}"], ns[f"S{len(leaves)}"] = part
        lines += [f"    t = type({a})",
                  "    if t is Tensor:",
                  f"        {v} = {a}._np",
                  "    elif t is ndarray:",
                  f"        {v} = {a}",
                  "    else:",
                  "        return MISS",
                  # `is`: a dtype equal but not the same object takes the fingerprint path
                  f"    if {v} is None or {v}.dtype is not D{len(leaves)} or "
                  f"{v}.shape != S{len(leaves)}:",
                  "        return MISS"]
        leaves.append(v)
    body, names = cf._entry_body(leaves)
    ns.update(names)
    lines += ["    " + ln for ln in body]
    exec(compile("\n".join(lines) + "\n", f"<graphc entry {name}>", "exec"), ns)  # noqa: S102
    return ns["entry"]


def change_hook(function):
    """A ConcreteFunction's `_on_change`: tells `function` (held weakly) that the trace's
    inline source came or went, so that its entries are made afresh."""
    ref = weakref.ref(function)

    def changed():
        f = ref()
        if f is not None:
            f._trace_changed()
    return changed
