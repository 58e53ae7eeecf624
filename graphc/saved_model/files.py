"""The SavedModel's JSON file: a magic line with the format version and a SHA-256 of the
body, then the body. Any truncation or flipped bit fails the checksum, and a pickle (or
anything else) fails the magic, so damage is a GraphcError naming the file, never a
misread model."""
import hashlib
import json
import os
import tempfile

from ..errors import GraphcError, NotFoundError

MAGIC = b"graphc-saved-model"
FORMAT_VERSION = 1
MAX_JSON_BYTES = 1 << 30


def write_json(path, data):
    """Write `data` as a checksummed JSON file, atomically (temporary name, then rename)."""
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    head = b"%s %d sha256=%s\n" % (MAGIC, FORMAT_VERSION, hashlib.sha256(body).hexdigest().encode())
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head + body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path):
    """The body of a file written by `write_json`; GraphcError naming `path` on any damage."""
    try:
        size = os.path.getsize(path)
        if size > MAX_JSON_BYTES:
            raise GraphcError(f"{path}: {size} bytes is larger than a saved model file can be")
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: file is missing; this directory is not a complete graphc "
                          "SavedModel (save one with gc.saved_model.save)") from None
    except IsADirectoryError:
        raise GraphcError(f"{path}: is a directory, not a graphc SavedModel file") from None
    head, sep, body = raw.partition(b"\n")
    parts = head.split(b" ")
    if not sep or len(parts) != 3 or parts[0] != MAGIC or not parts[2].startswith(b"sha256="):
        raise GraphcError(f"{path}: not a graphc SavedModel file (bad header); the file is "
                          "damaged or was not written by graphc")
    if parts[1] != str(FORMAT_VERSION).encode():
        version = parts[1].decode("ascii", "replace")
        raise GraphcError(f"{path}: SavedModel format version {version!r} is not supported "
                          f"by this graphc (it reads version {FORMAT_VERSION})")
    if hashlib.sha256(body).hexdigest().encode() != parts[2][len(b"sha256="):]:
        raise GraphcError(f"{path}: checksum mismatch; the file is damaged (truncated or "
                          "modified after saving)")
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise GraphcError(f"{path}: body is not valid JSON ({e})") from None
