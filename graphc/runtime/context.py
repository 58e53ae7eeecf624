"""Which graph (if any) ops are being traced into, and where in the user's code we are."""
import os
import sys

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_stack = []  # graphs being built, innermost last


def current_graph():
    return _stack[-1] if _stack else None


class building:
    """Context manager: ops bound inside go into `graph`."""

    __slots__ = ("graph",)

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        _stack.append(self.graph)
        return self.graph

    def __exit__(self, *exc):
        _stack.pop()


class eager_scope:
    """Temporarily leave every graph (used to run Python-side initializers eagerly)."""

    def __enter__(self):
        self.saved = list(_stack)
        _stack.clear()

    def __exit__(self, *exc):
        _stack[:] = self.saved


def _is_internal(filename):
    return filename.startswith(_PKG_DIR) and "__graphc_generated__" not in filename


def user_frame():
    """The innermost stack frame that belongs to user code (not to graphc itself)."""
    f = sys._getframe(1)
    while f is not None and _is_internal(f.f_code.co_filename):
        f = f.f_back
    return f


def user_location():
    """(file, line) of the user's code that is running now.

    AutoGraph compiles converted code under the user's file name with the original line
    numbers, so converted code maps to the user's source with no extra table.
    """
    f = user_frame()
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def format_location(loc):
    return f"{loc[0]}:{loc[1]}" if loc else "<unknown>"
