"""Summary writers: TensorBoard event files, and the calling thread's default writer.

Event records are written by the `tensorboard` package's own EventFileWriter (CRC-framed
TFRecords of `Event` protos, flushed by a background thread), as PyTorch does, rather than
by hand-encoded protobuf: the format is TensorBoard's to keep. The package is imported only
when a writer is created (install `graphc[tensorboard]`).
"""
import contextlib
import itertools
import os
import threading
import time
import weakref

_tls = threading.local()         # .stack: this thread's default writers (innermost last)
_step = {"value": None}          # gc.summary.experimental-style default step (process-wide)
# How many threads have a default writer right now: a summary op checks this one int
# first, so with no writer anywhere it returns before touching thread-local state.
ACTIVE = [0]
_active_lock = threading.Lock()
# Writers by token: a summary op traced while a writer was default names it by token (an op
# attribute must be plain data), the fallback when no writer is default at call time. The
# process id and a counter keep a token loaded from a SavedModel from naming another writer.
_by_token = weakref.WeakValueDictionary()
_tokens = itertools.count(1)


def _enter(stack, writer):
    with _active_lock:
        if not stack:
            ACTIVE[0] += 1
        stack.append(writer)


def _leave(stack):
    with _active_lock:
        stack.pop()
        if not stack:
            ACTIVE[0] -= 1


def _tensorboard():
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: F401
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError("gc.summary writers need the `tensorboard` package: "
                          "pip install 'graphc[tensorboard]'") from e
    return EventFileWriter, event_pb2


class SummaryWriter:
    """Writes summaries to one event file under `logdir`. Thread-safe (one lock)."""

    def __init__(self, logdir, max_queue=10, flush_millis=120_000, filename_suffix=".v2"):
        writer_cls, self._event_pb2 = _tensorboard()
        self.logdir = str(logdir)
        self._lock = threading.Lock()
        self._writer = writer_cls(self.logdir, max_queue_size=max_queue,
                                  flush_secs=max(flush_millis / 1000.0, 0.001),
                                  filename_suffix=filename_suffix)
        self._closed = False
        self._token = None

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Make this the calling thread's default writer inside the block (like TF, other
        threads keep theirs). `step` sets the default step for the block."""
        stack = _stack()
        _enter(stack, self)
        old = _step["value"]
        if step is not None:
            _step["value"] = step
        try:
            yield self
        finally:
            _leave(stack)
            if step is not None:
                _step["value"] = old
            self.flush()

    def set_as_default(self, step=None):
        """Make this the calling thread's default writer until another is set or this one
        is closed (in this thread); `step` (if given) becomes the default step, as TF's."""
        stack = _stack()
        with _active_lock:
            if not stack:
                ACTIVE[0] += 1
            stack[:] = [self]
        if step is not None:
            _step["value"] = step

    def init(self):
        """TF's writer.init(): the event file exists from creation, so nothing to do."""
        return None

    def add_event(self, **fields):
        event = self._event_pb2.Event(wall_time=time.time(), **fields)
        with self._lock:
            if self._closed:
                raise ValueError(f"summary writer for {self.logdir!r} is closed; create a new "
                                 "one with gc.summary.create_file_writer")
            self._writer.add_event(event)

    def add_summary(self, summary, step):
        self.add_event(step=int(step), summary=summary)

    def flush(self):
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self):
        stack = getattr(_tls, "stack", None)
        if stack == [self]:             # set_as_default in this thread: no default after
            _leave(stack)
        with self._lock:
            if not self._closed:
                self._writer.close()
                self._closed = True

    def __repr__(self):
        return f"<gc.summary writer {self.logdir!r}{' (closed)' if self._closed else ''}>"


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """A writer of TensorBoard event files under `logdir` (created if missing)."""
    return SummaryWriter(logdir, 10 if max_queue is None else max_queue,
                         120_000 if flush_millis is None else flush_millis,
                         ".v2" if filename_suffix is None else filename_suffix)


def default_writer():
    """The calling thread's default writer, or None."""
    if not ACTIVE[0]:
        return None
    s = getattr(_tls, "stack", None)
    return s[-1] if s else None


def writer_token(writer):
    """A token naming `writer` for a traced op's attributes (None for no writer)."""
    if writer is None:
        return None
    if writer._token is None:
        writer._token = f"{os.getpid()}:{id(_by_token)}:{next(_tokens)}"
        _by_token[writer._token] = writer
    return writer._token


def traced_writer(token):
    """The open writer a traced op's token names, or None."""
    if token is None:
        return None
    w = _by_token.get(token)
    return None if w is None or w._closed else w


def flush(writer=None):
    w = writer or default_writer()
    if w is not None:
        w.flush()


def record_if(condition):
    """Context manager (TF's tf.summary.record_if): summaries inside write only while
    `condition` holds -- a bool, a bool tensor or a callable giving one. Inside a compiled
    function a tensor condition is read on each call; a Python bool decides at trace time."""
    @contextlib.contextmanager
    def scope():
        stack = _record_stack()
        stack.append(condition)
        try:
            yield
        finally:
            stack.pop()
    return scope()


def _record_stack():
    s = getattr(_tls, "record_if", None)
    if s is None:
        s = _tls.record_if = []
    return s


def record_condition():
    """The innermost record_if condition of this thread (a callable called now), or None."""
    s = getattr(_tls, "record_if", None)
    if not s:
        return None
    c = s[-1]
    return c() if callable(c) and not hasattr(c, "dtype") else c


def set_step(step):
    """Default `step` for summaries written without one (int, tensor or Variable)."""
    _step["value"] = step


def get_step():
    return _step["value"]
