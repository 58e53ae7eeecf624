"""gc.train.Checkpoint: save and restore the Variables reachable from named roots.

Values are keyed by object path (gc.train.trackable), so a checkpoint restores into any
object graph of the same structure: a fresh model and optimizer built by the same code.
Values whose object does not exist yet wait for it (restore on creation): a Module
attribute set later, an optimizer's slots or iteration counter made by its first update.
"""
import os
import threading
import warnings

import numpy as np

from ..runtime import context
from ..runtime.variables import Variable
from . import checkpoint_format as fmt
from .restore import Restoration, check_matches, assign_all
from .state import update_state
from .trackable import is_trackable, path_key, walk

__all__ = ["Checkpoint", "UnusedCheckpointValuesWarning"]


class UnusedCheckpointValuesWarning(UserWarning):
    """A restored checkpoint held values that no object ever took (status.expect_partial()
    says that is intended)."""


class Checkpoint:
    """`Checkpoint(model=model, optimizer=opt)`: `save(prefix)` writes `prefix-N` (N = the
    save counter, also saved), `write(prefix)` writes exactly `prefix`, `restore(path)`
    assigns the saved values and returns a status (TF's tf.train.Checkpoint)."""

    def __init__(self, **roots):
        for name, obj in roots.items():
            if name == "save_counter":
                raise ValueError("Checkpoint: 'save_counter' is the checkpoint's own counter; "
                                 "give the object another name")
            if not is_trackable(obj):
                raise TypeError(f"Checkpoint: {name}={type(obj).__name__} is not trackable; "
                                "pass Variables, gc.Modules, optimizers, or lists/dicts of "
                                "them")
        self._roots = dict(roots)
        self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        self._lock = threading.Lock()
        self._restoration = None

    @property
    def save_counter(self):
        """Number of save() calls so far (an int64 Variable, saved and restored)."""
        return self._save_counter

    def _trackable_children(self):
        return sorted(self._roots.items()) + [("save_counter", self._save_counter)]

    def __getattr__(self, name):
        roots = self.__dict__.get("_roots", {})
        if name in roots:
            return roots[name]
        raise AttributeError(f"Checkpoint has no root {name!r}")

    # -- saving ----------------------------------------------------------------------------
    def write(self, file_prefix):
        """Write a checkpoint at exactly `file_prefix` (no number, no state file update);
        returns `file_prefix`."""
        _outside_trace("write")
        tensors = {}
        for path, obj in walk(self):
            if isinstance(obj, Variable):
                with obj._lock:     # this array is never updated in place once referenced
                    tensors[path_key(path)] = obj._value
        prefix = os.fspath(file_prefix)
        fmt.write_tensors(prefix, tensors, meta={"kind": "gc.train.Checkpoint"})
        return prefix

    def save(self, file_prefix):
        """Write `file_prefix-N` with N the incremented save counter and record it as the
        directory's latest checkpoint (what gc.train.latest_checkpoint reads)."""
        _outside_trace("save")
        with self._lock:
            number = int(self._save_counter.assign_add(np.int64(1)).numpy())
            path = self.write(f"{os.fspath(file_prefix)}-{number}")
            update_state(os.path.dirname(path) or ".", path, [path])   # in order of numbers
        return path

    # -- restoring -------------------------------------------------------------------------
    def restore(self, save_path):
        """Assign the values saved at `save_path` to the objects at the same paths, and keep
        the others for objects created later. Returns a status: `assert_consumed()`,
        `assert_existing_objects_matched()`, `assert_nontrivial_match()`,
        `expect_partial()`. `save_path=None` restores nothing (start from scratch)."""
        _outside_trace("restore")
        if save_path is None:
            return InitializationOnlyStatus()
        prefix = os.fspath(save_path)
        if os.path.isdir(prefix):
            raise ValueError(f"Checkpoint.restore: {prefix!r} is a directory; pass a "
                             "checkpoint path such as gc.train.latest_checkpoint(directory)")
        index = fmt.read_index(prefix)
        live = {path_key(p): o for p, o in walk(self) if isinstance(o, Variable)}
        matched = {k: v for k, v in live.items() if k in index.entries}
        check_matches(matched, index.entries, prefix)     # before reading or assigning
        values = fmt.read_tensors(prefix, index)           # every checksum, before assigning
        assign_all(matched, values)
        with self._lock:
            if self._restoration is not None:   # a newer restore supersedes what was pending
                self._restoration.expect_partial = True
                self._restoration.close()
            restoration = Restoration(self, prefix, values, set(matched))
            self._restoration = restoration if restoration.pending else None
        return CheckpointLoadStatus(restoration, self._roots)

    read = restore


def _outside_trace(what):
    if context.current_graph() is not None:
        raise RuntimeError(f"Checkpoint.{what}() inside a gc.function would act on values "
                           "at trace time only; call it outside the compiled function")


class CheckpointLoadStatus:
    """What a restore matched (TF's semantics). Each assert re-checks the object graph as it
    is now, so objects created after restore() count once they took their values."""

    def __init__(self, restoration, roots=None):
        self._r = restoration
        # the objects it restored into, kept alive while the status is (as TF's status does):
        # Checkpoint(a=gc.Variable(0.0)).restore(p).assert_consumed() checks them
        self._roots = dict(roots or {})

    def assert_consumed(self):
        """Every value in the checkpoint went to an object, and every Variable in the graph
        now got a value."""
        self.assert_existing_objects_matched()
        unused = sorted(self._r.pending)
        if unused:
            raise AssertionError(_listing(
                f"{len(unused)} value(s) in checkpoint {self._r.prefix} were not restored "
                "(no object at their path yet)", unused))
        return self

    def assert_existing_objects_matched(self):
        """Every Variable now reachable from the checkpoint's roots got a saved value."""
        missing = sorted(k for k in self._r.live_keys() if k not in self._r.matched)
        if missing:
            raise AssertionError(_listing(
                f"{len(missing)} object(s) have no value in checkpoint {self._r.prefix}",
                missing))
        return self

    def assert_nontrivial_match(self):
        """Something besides the save counter was restored."""
        if not any(k != "save_counter" for k in self._r.matched):
            raise AssertionError(f"nothing but the save counter matched checkpoint "
                                 f"{self._r.prefix}; is it a checkpoint of these objects?")
        return self

    def expect_partial(self):
        """Silence the warning about checkpoint values that no object took."""
        self._r.expect_partial = True
        return self


class InitializationOnlyStatus:
    """restore(None): nothing restored; the objects keep their initial values."""

    def assert_consumed(self):
        raise AssertionError("no checkpoint was restored (restore(None))")

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed

    def expect_partial(self):
        return self


def _listing(head, keys, limit=10):
    shown = ", ".join(repr(k) for k in keys[:limit])
    more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
    return f"{head}: {shown}{more}"


def warn_unused(prefix, keys):
    warnings.warn(UnusedCheckpointValuesWarning(_listing(
        f"{len(keys)} value(s) of checkpoint {prefix} were never restored (no object at their "
        "path); call .expect_partial() on restore()'s status if that is intended",
        sorted(keys))), stacklevel=2)
