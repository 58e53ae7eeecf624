"""The `checkpoint` state file of a directory: which checkpoints it keeps and the latest one.

TF's text format, one field per line, plus a last line with a CRC-32 of the lines above:

    model_checkpoint_path: "ckpt-3"
    all_model_checkpoint_paths: "ckpt-2"
    all_model_checkpoint_paths: "ckpt-3"
    all_model_checkpoint_timestamps: 1732540000.25
    all_model_checkpoint_timestamps: 1732540100.5
    last_preserved_timestamp: 1732539900.0
    # crc32: 1234567890

Paths inside the directory are stored relative to it. The file is replaced atomically
(temporary name, fsync, rename), and only after the checkpoint it names is complete.
"""
import json
import os
import re
import secrets
import time
import warnings
import zlib
from dataclasses import dataclass

from ..errors import GraphcError
from . import checkpoint_format as fmt

__all__ = ["CheckpointState", "read_state", "update_state", "latest_checkpoint"]

STATE_FILE = "checkpoint"
_LINE = re.compile(r"([a-z_]+): (.+)")
_CRC = re.compile(r"# crc32: ([0-9]{1,10})")


@dataclass
class CheckpointState:
    model_checkpoint_path: str               # absolute, or relative to the cwd as given
    all_model_checkpoint_paths: list
    all_model_checkpoint_timestamps: list
    last_preserved_timestamp: float


def _state_path(directory):
    return os.path.join(os.fspath(directory), STATE_FILE)


def update_state(directory, latest, all_paths, timestamps=None, last_preserved=None):
    """Atomically replace `directory`'s state file."""
    directory = os.fspath(directory)
    now = time.time()
    timestamps = [now] * len(all_paths) if timestamps is None else list(timestamps)
    lines = [f"model_checkpoint_path: {json.dumps(_relative(directory, latest))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(_relative(directory, p))}"
              for p in all_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in timestamps]
    lines.append(f"last_preserved_timestamp: {now if last_preserved is None else last_preserved!r}")
    body = "".join(line + "\n" for line in lines)
    text = body + f"# crc32: {zlib.crc32(body.encode())}\n"
    final = _state_path(directory)
    tmp = f"{final}.tmp-{secrets.token_hex(8)}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        fmt._remove_quietly(tmp)
        raise
    fmt._fsync_dir(directory)


def _relative(directory, path):
    path = os.fspath(path)
    if os.path.abspath(os.path.dirname(path)) == os.path.abspath(directory):
        return os.path.basename(path)
    return os.path.abspath(path)


def read_state(directory):
    """The directory's CheckpointState, or None when it has no state file; a damaged file
    raises GraphcError naming it."""
    path = _state_path(directory)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        text = raw.decode("utf-8")
        body, _, last = text.rstrip("\n").rpartition("\n")
        m = _CRC.fullmatch(last)
        if not m or int(m.group(1)) != zlib.crc32((body + "\n").encode()):
            raise ValueError("its checksum line is missing or does not match")
        fields = {}
        for line in body.split("\n"):
            m = _LINE.fullmatch(line)
            if not m:
                raise ValueError(f"unreadable line {line[:60]!r}")
            fields.setdefault(m.group(1), []).append(m.group(2))
        unknown = set(fields) - {"model_checkpoint_path", "all_model_checkpoint_paths",
                                 "all_model_checkpoint_timestamps", "last_preserved_timestamp"}
        if unknown or len(fields.get("model_checkpoint_path", [])) != 1:
            raise ValueError(f"unexpected fields {sorted(unknown)} or no single latest path")
        paths = [_absolute(directory, _string(v)) for v in
                 fields.get("all_model_checkpoint_paths", [])]
        stamps = [float(v) for v in fields.get("all_model_checkpoint_timestamps", [])]
        if len(stamps) != len(paths):
            stamps = [0.0] * len(paths)
        preserved = [float(v) for v in fields.get("last_preserved_timestamp", ["0"])]
        return CheckpointState(_absolute(directory, _string(fields["model_checkpoint_path"][0])),
                               paths, stamps, preserved[-1])
    except (UnicodeDecodeError, ValueError, TypeError) as e:
        raise GraphcError(f"checkpoint state file {path} is damaged ({e}); delete it to start "
                          "afresh, or rewrite it naming the newest good checkpoint") from None


def _string(value):
    s = json.loads(value)
    if not isinstance(s, str) or not s or "\0" in s:
        raise ValueError(f"bad path {value[:60]!r}")
    return s


def _absolute(directory, path):
    return path if os.path.isabs(path) else os.path.join(os.fspath(directory), path)


def latest_checkpoint(checkpoint_dir):
    """The newest checkpoint recorded in `checkpoint_dir`'s state file, or None when there is
    none (no directory, no state file, or the checkpoint it names is gone)."""
    state = read_state(checkpoint_dir)
    if state is None:
        return None
    path = state.model_checkpoint_path
    if not os.path.exists(fmt.index_path(path)):
        warnings.warn(f"checkpoint state file {_state_path(checkpoint_dir)} names {path}, "
                      "whose files are gone; returning None", stacklevel=2)
        return None
    return path
