"""Matching saved values to Variables, and restore on creation for objects made later."""
import threading
import weakref

from ..runtime import module as _module
from ..runtime.variables import Variable
from .trackable import path_key, walk


def check_matches(matched, specs, prefix):
    """ValueError naming every object path whose Variable differs in shape or dtype from the
    saved value (`specs[key]` has .shape and .dtype); raised before anything is assigned."""
    bad = []
    for key, var in matched.items():
        want, have = specs[key], var._value
        if have.shape != tuple(want.shape) or have.dtype != want.dtype:
            bad.append(f"'{key}' is {_spec(have)} here but {_spec(want)} in the checkpoint")
    if bad:
        raise ValueError(f"restoring checkpoint {prefix}: {'; '.join(bad)}. Nothing was "
                         "restored. Fix: build the objects with the shapes and dtypes they "
                         "were saved with (or restore into a matching object graph).")


def _spec(a):
    return f"{a.dtype.name}{list(a.shape)}"


def assign_all(matched, values):
    """Give each Variable its restored array (fresh, owned, of the variable's dtype)."""
    for key, var in matched.items():
        with var._lock:
            var._value = values[key]


class _RootsView:
    """The checkpoint's roots as one node, without keeping them (or the Checkpoint) alive:
    `Checkpoint(model=m).restore(path)` must still fill `m`'s later variables."""

    def __init__(self, roots, counter):
        self._roots, self._counter = roots, counter

    def _trackable_children(self):
        return sorted(self._roots) + [("save_counter", self._counter)]


def _ref(obj):
    try:
        return weakref.ref(obj)
    except TypeError:       # a list or dict root: held (it holds nothing the checkpoint owns)
        return lambda: obj


class Restoration:
    """The values of one restore() that had no object yet, waiting for objects at their
    paths; the status objects read `matched` and `pending`."""

    def __init__(self, checkpoint, prefix, values, matched):
        self.prefix = prefix
        self.matched = set(matched)
        self.pending = {k: v for k, v in values.items() if k not in self.matched}
        self.expect_partial = False
        self._lock = threading.RLock()
        self._roots = [(name, _ref(obj)) for name, obj in checkpoint._roots.items()]
        self._counter = checkpoint._save_counter
        self._alive = 0
        if self.pending:
            _module._creation_listeners.append(self)
            for _, obj in checkpoint._roots.items():
                try:
                    weakref.finalize(obj, self._root_died).atexit = False
                    self._alive += 1
                except TypeError:
                    pass

    def _view(self):
        roots = [(name, ref()) for name, ref in self._roots]
        return _RootsView([(n, o) for n, o in roots if o is not None], self._counter)

    def live_keys(self):
        """Keys of every Variable reachable from the roots now."""
        return [path_key(p) for p, o in walk(self._view()) if isinstance(o, Variable)]

    def __call__(self):
        """A trackable joined some object graph: restore any pending value now reachable."""
        with self._lock:
            if not self.pending:
                self.close()
                return
            found = {}
            for p, o in walk(self._view()):
                key = path_key(p) if isinstance(o, Variable) else None
                if key in self.pending:
                    found[key] = o
            if not found:
                return
            values = {k: self.pending.pop(k) for k in found}    # a mismatch is reported once
            check_matches(found, values, self.prefix)
            assign_all(found, values)
            self.matched.update(found)
            if not self.pending:
                self.close()

    def close(self):
        try:
            _module._creation_listeners.remove(self)
        except ValueError:
            pass

    def _root_died(self):
        self._alive -= 1
        if self._alive == 0:
            self.close()
            if self.pending and not self.expect_partial:
                from .checkpoint import warn_unused
                warn_unused(self.prefix, self.pending)
