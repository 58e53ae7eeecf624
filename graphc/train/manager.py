"""gc.train.CheckpointManager: numbered checkpoints in one directory, the newest k kept."""
import collections
import operator
import os
import threading
import time

import numpy as np

from . import checkpoint_format as fmt
from .checkpoint import Checkpoint
from .state import read_state, update_state

__all__ = ["CheckpointManager"]


class CheckpointManager:
    """Saves `checkpoint` as `directory/checkpoint_name-N` and deletes the files of all but
    the newest `max_to_keep` (None keeps all). Like TF's, it reads the directory's state
    file when made, so a restarted program continues the list (and the deletions)."""

    def __init__(self, checkpoint, directory, *args, checkpoint_name="ckpt", max_to_keep=5,
                 keep_checkpoint_every_n_hours=None, step_counter=None,
                 checkpoint_interval=None, init_fn=None):
        if args:    # by position: API.md's (checkpoint_name, max_to_keep) or TF's order
            names = ("checkpoint_name", "max_to_keep") if isinstance(args[0], str) else (
                "max_to_keep", "keep_checkpoint_every_n_hours", "checkpoint_name",
                "step_counter", "checkpoint_interval", "init_fn")
            if len(args) > len(names):
                raise TypeError(f"CheckpointManager takes at most {len(names) + 2} positional "
                                f"arguments, got {len(args) + 2}")
            given = dict(zip(names, args))
            checkpoint_name = given.get("checkpoint_name", checkpoint_name)
            max_to_keep = given.get("max_to_keep", max_to_keep)
            keep_checkpoint_every_n_hours = given.get("keep_checkpoint_every_n_hours",
                                                      keep_checkpoint_every_n_hours)
            step_counter = given.get("step_counter", step_counter)
            checkpoint_interval = given.get("checkpoint_interval", checkpoint_interval)
            init_fn = given.get("init_fn", init_fn)
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("CheckpointManager: checkpoint_interval needs a step_counter "
                             "(an integer Variable) to measure it")
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: expected a gc.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and (not isinstance(max_to_keep, int)
                                        or isinstance(max_to_keep, bool) or max_to_keep < 1):
            raise ValueError(f"CheckpointManager: max_to_keep must be a positive int or None, "
                             f"got {max_to_keep!r}")
        if not checkpoint_name or os.sep in checkpoint_name:
            raise ValueError(f"CheckpointManager: checkpoint_name {checkpoint_name!r} must be "
                             "a file name (no directory separators)")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._max_to_keep = max_to_keep
        self._keep_every = keep_checkpoint_every_n_hours
        self._step_counter, self._interval = step_counter, checkpoint_interval
        self._last_step = None          # step_counter at the last save (checkpoint_interval)
        self._init_fn = init_fn
        self._lock = threading.Lock()
        state = read_state(self._directory)
        self._kept = collections.OrderedDict()        # path -> timestamp, oldest first
        self._latest = None
        self._last_preserved = time.time()
        if state is not None:
            for path, stamp in zip(state.all_model_checkpoint_paths,
                                   state.all_model_checkpoint_timestamps):
                if os.path.exists(fmt.index_path(path)):
                    self._kept[path] = stamp
            self._last_preserved = state.last_preserved_timestamp
            if os.path.exists(fmt.index_path(state.model_checkpoint_path)):
                self._latest = state.model_checkpoint_path

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoints(self):
        """Paths of the checkpoints kept, oldest first."""
        return list(self._kept)

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's path, or None."""
        return self._latest

    def save(self, checkpoint_number=None, check_interval=True):
        """Save `prefix-N`: N is `checkpoint_number` when given (an int, or an integer
        Variable/tensor such as a step counter), else the checkpoint's save counter (which
        is incremented either way, as in TF). Returns the path. With a checkpoint_interval,
        as TF's: None (nothing saved) while step_counter has not moved that far since the
        last save (or not at all, even with check_interval=False)."""
        with self._lock:
            if self._interval is not None:
                step = _as_int(self._step_counter)
                if self._last_step is not None and (step == self._last_step or (
                        check_interval and step < self._last_step + self._interval)):
                    return None
                self._last_step = step
            counter = int(self._checkpoint.save_counter.assign_add(np.int64(1)).numpy())
            number = counter if checkpoint_number is None else _as_int(checkpoint_number)
            path = self._checkpoint.write(f"{self._prefix}-{number}")
            self._kept.pop(path, None)             # a rewritten number moves to the end
            self._kept[path] = time.time()
            self._latest = path
            # record the new checkpoint before deleting anything (a crash while deleting
            # leaves a state file naming only complete checkpoints), then again without
            # the deleted ones
            self._record()
            if self._sweep():
                self._record()
            return path

    def restore_or_initialize(self):
        """TF's: restore the latest checkpoint and return its path, or, with none, call
        init_fn (if given) and return None."""
        if self._latest is not None:
            self._checkpoint.restore(self._latest)
            if self._interval is not None:
                self._last_step = _as_int(self._step_counter)
            return self._latest
        if self._init_fn is not None:
            self._init_fn()
        return None

    def _record(self):
        update_state(self._directory, self._latest, list(self._kept),
                     list(self._kept.values()), self._last_preserved)

    def _sweep(self):
        if self._max_to_keep is None:
            return False
        swept = False
        while len(self._kept) > self._max_to_keep:
            path, stamp = self._kept.popitem(last=False)
            swept = True
            if self._keep_every and stamp - self._keep_every * 3600 >= self._last_preserved:
                self._last_preserved = stamp       # kept on disk, no longer managed
                continue
            fmt.delete_files(path)
        return swept


def _as_int(number):
    try:
        if hasattr(number, "numpy"):
            number = number.numpy()
        return operator.index(number)
    except TypeError:
        raise TypeError(f"CheckpointManager.save: checkpoint_number must be an integer (or "
                        f"an integer Variable), got {number!r}") from None
