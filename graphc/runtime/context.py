"""Which graph (if any) ops are being traced into, and where in the user's code we are."""
import ast
import functools
import linecache
import os
import sys
import threading
import warnings

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _ThreadState(threading.local):
    """What one thread is tracing and recording; other threads never see it (as in TF), so
    an eager op in one thread is never captured by another thread's trace or tape."""

    def __init__(self):
        self.stack = []            # graphs being built, innermost last
        self.tapes = []            # GradientTapes recording, innermost last
        self.creation_hooks = []   # called with each gc.Variable made (set by traces)
        self.replayed = []         # {id(Value): tensor} of regions a gradient replays


_tls = _ThreadState()
# Graphs, tapes and hooks pushed by all threads together, plus 1 while functions run eagerly
# (config.run_functions_eagerly). While it is 0 no thread traces or records and gc.functions
# run compiled, so the hot paths (cached calls, eager ops) skip the thread-local lookup (~35 ns).
# Another thread's stale view is harmless: only this thread's own pushes matter to it.
_busy = [0]
_busy_lock = threading.Lock()


def _push(stack, item):
    with _busy_lock:
        _busy[0] += 1
    stack.append(item)


def _pop(stack, item=None):
    if item is None:
        stack.pop()
    else:
        stack.remove(item)
    with _busy_lock:
        _busy[0] -= 1


def current_graph():
    if _busy[0]:
        stack = _tls.stack
        if stack:
            return stack[-1]
    return None


def recording_tapes():
    """This thread's recording GradientTapes, innermost last (empty when none)."""
    return _tls.tapes if _busy[0] else ()


def creation_hooks():
    """This thread's hooks for new gc.Variables (the traces under way in this thread)."""
    return _tls.creation_hooks if _busy[0] else ()


class replaying:
    """Context manager: while a gradient rule replays a branch or loop body (`values`:
    id of each forward Value -> its replayed tensor), a forward tensor used in the current
    graph stands for its replayed value (custom gradients close over forward tensors)."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values

    def __enter__(self):
        if self.values is not None:
            _tls.replayed.append(self.values)

    def __exit__(self, *exc):
        if self.values is not None:
            _tls.replayed.pop()


def replayed_value(value):
    """The replayed tensor standing for forward Value `value`, or None."""
    for values in reversed(_tls.replayed):
        t = values.get(id(value))
        if t is not None:
            return t
    return None


class building:
    """Context manager: ops bound inside (in this thread) go into `graph`."""

    __slots__ = ("graph",)

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        _push(_tls.stack, self.graph)
        return self.graph

    def __exit__(self, *exc):
        _pop(_tls.stack)


class eager_scope:
    """Temporarily leave every graph of this thread (to run Python-side initializers
    eagerly)."""

    def __enter__(self):
        stack = _tls.stack
        self.saved = list(stack)
        stack.clear()

    def __exit__(self, *exc):
        _tls.stack[:] = self.saved


def _is_internal(filename):
    """graphc's own frames: its files, and the code it generates (`<graphc entry f>`,
    `<graphc plan f>` ...), such as the entry a cached call enters first."""
    return filename.startswith(_PKG_DIR) or filename.startswith("<graphc ")


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


def user_site():
    """(file, line, function) of the user's code running now: what each op records as its
    `loc`. AutoGraph's generated helpers (loop bodies, branches) run under the user's file
    and lines but not their names, so the function is the user's `def` around the line."""
    f = user_frame()
    if f is None:
        return None
    code = f.f_code
    return (code.co_filename, f.f_lineno,
            enclosing_function(code.co_filename, f.f_lineno, code.co_name) or code.co_name)


_DEFS = {}   # filename -> (linecache's lines, sorted [(first, last line, name)] of its defs)


def enclosing_function(filename, line, name=None):
    """`name` if a `def` (or lambda) of that name in `filename` spans `line`, else the
    innermost one that does; None if none does."""
    lines = linecache.getlines(filename)
    if not lines:        # no source (e.g. exec'd code): the caller uses the code's name
        return None
    cached = _DEFS.get(filename)
    if cached is None or cached[0] is not lines:     # new, or reloaded by linecache
        cached = _DEFS[filename] = (lines, _parse_defs(lines))
    around = []
    for first, last, fn in cached[1]:
        if first > line:
            break
        if line <= last:
            around.append(fn)
    return name if name in around else (around[-1] if around else None)


def _parse_defs(lines):
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    # by start, outer first: the last one around a line is the innermost
    found = [(n.lineno, -n.end_lineno, getattr(n, "name", "<lambda>"))
             for n in ast.walk(tree) if isinstance(n, kinds)]
    return [(first, -neg_last, name) for first, neg_last, name in sorted(found)]


def format_location(loc):
    """`file:line`, or `file:line in function` for a location that names its function."""
    if not loc:
        return "<unknown>"
    text = f"{loc[0]}:{loc[1]}"
    return f"{text} in {loc[2]}" if len(loc) > 2 and loc[2] else text


def warn_at_user_line(message, category):
    """Warn at the user's line that called into graphc, wherever the call came through;
    the warning itself shows `file:line: Category:`, so `message` need not say where."""
    frame = user_frame()
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    g = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=g.get("__name__"),
                           registry=g.setdefault("__warningregistry__", {}), module_globals=g)


def composite_errors(name):
    """Decorator for a public op built from other ops: a plain TypeError/ValueError of an
    inner op ("maximum: incompatible shapes ...") names the op the user called instead
    ("clip_by_value: incompatible shapes ..."), as API.md asks of every op's bad input."""
    def wrap(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (TypeError, ValueError) as e:
                msg = str(e)
                if type(e) not in (TypeError, ValueError) or msg.startswith(f"{name}:"):
                    raise
                head, sep, rest = msg.partition(": ")
                if sep and head.replace(".", "_").isidentifier():
                    msg = rest
                raise type(e)(f"{name}: {msg}") from None
        return op
    return wrap


def located_errors(fn):
    """Public op `fn`, whose plain TypeError/ValueError raised while tracing names the
    user's line (as the errors of the ops' type rules do), also when it comes from the op's
    own argument checks. Eager errors pass as they are (the traceback shows the line)."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError) as e:
            if type(e) not in (TypeError, ValueError) or not _busy[0] or not _tls.stack \
                    or "(while tracing " in str(e):
                raise
            loc = user_site()
            if loc is None:
                raise
            raise type(e)(f"{e} (while tracing {format_location(loc)})") from None
    return op
