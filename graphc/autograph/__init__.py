"""AutoGraph: converts Python control flow on tensors into graph control flow.

`gc.function` calls `convert_for_function(fn)` once per function to get the function it
traces. `to_code` shows the converted source, `to_graph` returns the converted function.
"""
from .conversion import AutoGraphWarning, converted_callable, do_not_convert
from .operators.lint import TraceTimeSideEffectWarning
from . import experimental  # noqa: F401  (TF's spelling of do_not_convert)

__all__ = ["to_code", "to_graph", "do_not_convert", "convert_for_function", "AutoGraphWarning",
           "TraceTimeSideEffectWarning"]


def convert_for_function(fn):
    """The function gc.function traces: `fn` with its Python control flow converted."""
    return converted_callable(fn)


def to_graph(fn):
    """The converted Python function: call it inside gc.function (or eagerly, where it
    behaves like `fn`)."""
    fn = _python_function(fn)
    conv = converted_callable(fn)
    return conv


def to_code(fn):
    """The converted source of `fn` as readable, valid Python (a `def` or a `lambda`).

    Lines the trace-time side-effect lint flags carry a `# graphc lint` comment.
    """
    from .conversion import converted_code
    fn = _python_function(fn)
    import types
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        call = getattr(type(fn), "__call__", None)
        if not isinstance(call, types.FunctionType):
            raise TypeError(f"to_code: {fn!r} is not a Python function")
        fn = call
    return converted_code(fn).source()


def _python_function(fn):
    from ..runtime.function import Function
    if isinstance(fn, Function):
        return fn.python_function
    return fn
