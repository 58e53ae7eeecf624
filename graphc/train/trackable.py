"""The object graph that checkpoints and SavedModels walk.

Nodes are gc.Module, optimizers, gc.train.Checkpoint, and the lists, tuples and dicts they
hold (when those hold a trackable object somewhere inside); Variables are the leaves.
Children are named by attribute name, list index or dict key (as str), in a deterministic
order: attributes sorted by name, lists in their own order, dicts sorted by key.

Optimizer slot variables are not children of the optimizer: they belong to the variable
they were made for, so `walk` gives each one the path (as TF does)
`<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>`, and a slot whose variable
is not reachable from the root is not part of the graph.
"""
from ..optimizers import Optimizer
from ..runtime.module import Module
from ..runtime.variables import Variable

__all__ = ["children", "walk", "is_trackable", "path_key", "SLOT_MARKER"]

SLOT_MARKER = ".OPTIMIZER_SLOT"
_CONTAINERS = (list, tuple, dict)


def _is_node(obj):
    # optimizers and Checkpoints name their own children (`_trackable_children`)
    return isinstance(obj, Module) or hasattr(type(obj), "_trackable_children")


def is_trackable(obj):
    """True for Variables, Modules, optimizers, Checkpoints, and lists/tuples/dicts holding
    one of those somewhere inside (containers of plain values are not part of the graph)."""
    return _is_trackable(obj, set())


def _is_trackable(obj, seen):
    if isinstance(obj, Variable) or _is_node(obj):
        return True
    if isinstance(obj, _CONTAINERS) and id(obj) not in seen:
        seen.add(id(obj))
        values = obj.values() if isinstance(obj, dict) else obj
        return any(_is_trackable(v, seen) for v in values)
    return False


def children(obj):
    """The trackable children of `obj` as (name, child) pairs in a deterministic order."""
    if isinstance(obj, Variable):
        return []
    if hasattr(type(obj), "_trackable_children"):
        items = obj._trackable_children()
    elif isinstance(obj, Module):
        items = sorted(vars(obj).items())
    elif isinstance(obj, dict):
        items = _dict_items(obj)
    elif isinstance(obj, (list, tuple)):
        items = [(str(i), v) for i, v in enumerate(obj)]
    else:
        return []
    return [(name, v) for name, v in items if is_trackable(v)]


def _dict_items(d):
    named = {}
    for k, v in d.items():
        name = str(k)
        if name == SLOT_MARKER:
            raise ValueError(f"a tracked dict uses the key {SLOT_MARKER!r}, which checkpoints "
                             "reserve for optimizer slots; rename the key")
        if name in named:
            raise ValueError(f"a tracked dict has two keys that both read {name!r} as str "
                             f"({named[name][0]!r} and {k!r}); checkpoints name dict entries "
                             "by str(key), so give the keys distinct string forms")
        named[name] = (k, v)
    return [(name, named[name][1]) for name in sorted(named)]


def walk(root):
    """(path, obj) for every object reachable from `root`, depth first (pre-order), each
    object once: a shared object keeps its first path, and cycles are safe. The root has
    path (). Optimizer slot variables follow at the end, under their variable's path."""
    seen, found = set(), []
    stack = [((), root)]
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        found.append((path, obj))
        stack.extend((path + (name,), child) for name, child in reversed(children(obj))
                     if id(child) not in seen)
    return iter(found + _slot_entries(found, seen))


def _slot_entries(found, seen):
    path_of = {id(obj): path for path, obj in found}
    out = []
    for opt_path, opt in found:
        if not isinstance(opt, Optimizer):
            continue
        for var, slots in list(opt._slots.items()):
            var_path = path_of.get(id(var))
            if var_path is None:
                continue        # slots of a variable outside the graph are not tracked
            for slot_name, slot in sorted(slots.items()):
                if id(slot) not in seen:
                    seen.add(id(slot))
                    out.append((var_path + (SLOT_MARKER,) + opt_path + (slot_name,), slot))
    return out


def path_key(path):
    """One string for an object path: components joined by "/", with "%", "/" and a leading
    "." percent-escaped so that no attribute or dict key can pass for another path or for
    the reserved ".OPTIMIZER_SLOT" component."""
    return "/".join(c if c == SLOT_MARKER else _escape(c) for c in path)


def _escape(name):
    name = name.replace("%", "%25").replace("/", "%2F")
    return "%2E" + name[1:] if name.startswith(".") else name
