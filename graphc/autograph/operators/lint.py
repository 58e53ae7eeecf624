"""Trace-time side-effect lint: code that silently runs only once, while tracing.

The converter finds candidate lines statically (`converters/lint.py`); these runtime
checks confirm them with the actual values and warn once per (kind, file, line).
"""
import contextlib
import threading
import warnings

from ...runtime import context

UNROLL_WARN_AT = 100     # a Python `for` over range(N >= this) with tensor ops is flagged


class TraceTimeSideEffectWarning(UserWarning):
    """Code inside a compiled function that runs only while tracing, not on every call."""


_warned = set()
_state = threading.local()   # .suppressed: probe traces under way in this thread


def warn_once(kind, message, loc=None):
    """Warn with the user's file:line (once per kind and line) unless a probe trace runs."""
    if getattr(_state, "suppressed", 0):
        return
    loc = loc or context.user_location()
    if loc is None:
        return
    key = (kind, loc[0], loc[1])
    if key in _warned:
        return
    _warned.add(key)
    # the warning carries the location (shown as `file:line: TraceTimeSideEffectWarning:`),
    # so the message does not repeat it
    warnings.warn_explicit(message, TraceTimeSideEffectWarning, loc[0], loc[1])


def tracing():
    return context.current_graph() is not None


@contextlib.contextmanager
def suppressed():
    _state.suppressed = getattr(_state, "suppressed", 0) + 1
    try:
        yield
    finally:
        _state.suppressed -= 1


class UnrollWatch:
    """Flags a Python `for` over a large range whose first iteration added graph ops."""

    def __init__(self, iterable):
        self.active = tracing() and isinstance(iterable, range) and \
            len(iterable) >= UNROLL_WARN_AT
        self.n = len(iterable) if self.active else 0
        self.loc = context.user_location() if self.active else None
        self.before_ops = None

    def before(self):
        if self.active and self.before_ops is None:
            self.before_ops = _op_count()

    def after(self):
        if not self.active:
            return
        self.active = False
        if _op_count() > self.before_ops:
            warn_once("unroll", f"this Python `for` over range({self.n}) runs while tracing "
                      f"and unrolls {self.n} times, copying its tensor ops into the graph "
                      f"{self.n} times; use `gc.range({self.n})` (or range of a tensor) to get "
                      "one graph loop", self.loc)


def _op_count():
    g = context.current_graph()
    return 0 if g is None else len(g.operations)
