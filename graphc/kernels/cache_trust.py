"""What makes a kernel cache file trustworthy: a per-user key, sealed files, checked directories.

A file is trusted only when it ends with an HMAC-SHA256 of its name and contents under this
user's secret key (KEY_NAME in the cache root, mode 0600, created on first use). Readers
verify the very bytes they go on to use, never a second read of the file. A directory is
trusted when it is owned by this user, not writable by group or others, and not a symbolic
link. Writes go to a temporary file in the same directory and are renamed into place; a
failed write leaves nothing behind.
"""
import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import threading
import warnings

KEY_NAME = "hmac.key"
_KEY_BYTES = 32
_SEAL = b"# graphc seal "                 # + 64 hex digits + newline, at the end of the file
_SEAL_LEN = len(_SEAL) + 64 + 1
# never follow a link, never block on a FIFO planted under a file's name
_NOFOLLOW = (getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NONBLOCK", 0))


class KernelCacheWarning(UserWarning):
    """A kernel cache file or directory was not used (it is named in the message)."""


_warned = set()
_warned_lock = threading.Lock()


def warn_once(subject, message, stacklevel=3):
    """Warn once per process about `subject` (a path); `stacklevel` counts frames from
    warn_once, as warnings.warn's does."""
    with _warned_lock:
        if subject in _warned:
            return
        _warned.add(subject)
    warnings.warn(f"graphc kernel cache: {message}", KernelCacheWarning,
                  stacklevel=stacklevel)


def warn_untrusted(path, then):
    """One warning that the file at `path` was not sealed by us, saying what happens `then`."""
    warn_once(path, f"{path} was not written by this user's graphc (or is damaged): "
                    f"ignored{then}", stacklevel=4)      # the same frame as a direct call


# -- directories ----------------------------------------------------------------------------

def dir_problem(path):
    """Why `path` is not a directory this user alone controls (None when it is)."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be examined ({e})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


# -- the key ----------------------------------------------------------------------------------

class UntrustedKey(Exception):
    def __init__(self, path, reason):
        super().__init__(f"{path} {reason}")
        self.path, self.reason = path, reason


def load_key(root):
    """(key, created): this user's key for `root`, made now if there is none.

    Raises UntrustedKey for a key file that is a link, not a regular file, not ours, readable
    or writable by others, or of the wrong size; OSError when none can be made (read-only)."""
    path = os.path.join(root, KEY_NAME)
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            try:
                return _create_key(root, path), True
            except FileExistsError:
                continue                  # another process made it first: read theirs
        except OSError as e:
            raise UntrustedKey(path, "is a symbolic link" if e.errno == errno.ELOOP
                               else f"cannot be read ({e})") from e
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UntrustedKey(path, "is not a regular file")
            if hasattr(os, "getuid") and st.st_uid != os.getuid():
                raise UntrustedKey(path, f"is owned by uid {st.st_uid}, not by this user")
            if st.st_mode & 0o077:
                raise UntrustedKey(path, f"has mode {stat.S_IMODE(st.st_mode):04o}, not 0600")
            key = f.read(_KEY_BYTES + 1)
        if len(key) != _KEY_BYTES:
            raise UntrustedKey(path, f"holds {len(key)} bytes, not {_KEY_BYTES}")
        return key, False
    raise UntrustedKey(path, "keeps changing while it is read")


def _create_key(root, path):
    """A new random key, written in full before it appears under its name (link, not rename:
    it fails when another process's key is already there)."""
    key = secrets.token_bytes(_KEY_BYTES)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-key-")     # mode 0600
    try:
        try:
            _write_all(fd, key)
        finally:
            os.close(fd)
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return key


# -- sealed files -----------------------------------------------------------------------------

def _mac(key, name, payload):
    h = hmac.new(key, name.encode() + b"\0", hashlib.sha256)
    h.update(payload)
    return h.hexdigest().encode()


def seal(key, name, payload):
    """`payload` followed by its seal for the file called `name` (a basename)."""
    return payload + _SEAL + _mac(key, name, payload) + b"\n"


def unseal(key, name, blob):
    """The payload of a sealed file's bytes, or None if the seal is not ours for `name`."""
    if blob is None or len(blob) < _SEAL_LEN:
        return None
    payload, tail = memoryview(blob)[:-_SEAL_LEN], blob[-_SEAL_LEN:]
    if not tail.startswith(_SEAL) or not tail.endswith(b"\n"):
        return None
    ok = hmac.compare_digest(tail[len(_SEAL):-1], _mac(key, name, payload))
    return bytes(payload) if ok else None


def read_file(path):
    """The bytes of `path`; None if there is no such file; b"" if it is a link, a directory,
    a device or anything else that is not a regular file (so never a valid seal)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return b""
        return f.read()


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomic(path, data):
    """Replace `path` with `data` all at once; on any failure no temporary file remains."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
