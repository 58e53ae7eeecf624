"""Errors raised while a graph runs, located at the user's line that created the failing op.

Every backend (the numpy interpreter, numba plans and fused groups, compiled loops that fall
back to the interpreter, cond/while bodies run through `run_graph`) turns an exception from
an op's rule into one `InvalidArgumentError` that names the op, its inputs and the fix, and
ends with `at file.py:24 in step`, chained to the original exception. An error that already
passed through an inner op (a body's op inside a `while`) keeps that inner location.
"""
import numpy as np

from ..errors import InvalidArgumentError, ResourceExhaustedError
from .context import format_location

# (op types, words in the message) -> how to fix it
_FIXES = [
    (("gather", "batch_gather", "getitem", "getitem_grad"), ("out of", "index"),
     "Fix: keep every index inside the dimension (e.g. gc.clip_by_value(i, 0, n - 1)), or "
     "check it first with `assert`."),
    (("reshape",), ("reshape",),
     "Fix: give a shape whose dimensions multiply to the input's element count (a -1 "
     "dimension takes what is left, which must divide evenly)."),
    (("tensor_list_read", "tensor_list_stack", "tensor_list_gather", "tensor_list_concat"),
     ("not been written",),
     "Fix: write the element before reading it, or give gc.TensorArray a fully known "
     "element_shape= so that unwritten elements read as zeros (as in TF)."),
    (("tensor_list_read", "tensor_list_gather"), ("out of range",),
     "Fix: keep indices below ta.size(), or create the TensorArray with dynamic_size=True."),
    (("pow",), ("negative",),
     "Fix: raise integers only to non-negative powers, or cast to a float dtype first "
     "(gc.cast(x, gc.float32))."),
    (("floordiv", "mod"), ("division by zero",),
     "Fix: keep integer divisors non-zero (e.g. gc.where(d == 0, 1, d)), or divide in a "
     "float dtype, where x / 0 gives inf or nan."),
]


def describe_value(x):
    """`float32[2,3]` for an array, `TensorArray(size=3)` for a list, else the type name."""
    from .tensor_list import TensorList
    if isinstance(x, TensorList):
        return f"TensorArray(size={len(x)})"
    if isinstance(x, (np.ndarray, np.generic)):
        dt = "bool" if x.dtype == np.bool_ else x.dtype.name
        return f"{dt}[{','.join(map(str, np.shape(x)))}]"
    return type(x).__name__


def _inputs_text(op, values):
    if values is not None:
        return ", ".join(describe_value(v) for v in values)
    return ", ".join(str(v.type) for v in op.inputs)


def _fix(op, text):
    if "Fix:" in text:
        return ""
    for types, words, fix in _FIXES:
        if op.type in types and any(w in text for w in words):
            return " " + fix
    return ""


def out_of_memory(op_type, results):
    return (f"{op_type}: out of memory making its result ({', '.join(results)}). Fix: check "
            "the shape (a wrong dimension?), or work on smaller batches")


def is_located(e):
    return getattr(e, "_graphc_located", False)


def located(op, e, values=None):
    """The InvalidArgumentError to raise (`from e`) for exception `e` of `op` at run time;
    None when `e` already names the user's line (raise it unchanged). `values`: the
    op's runtime inputs, when the caller has them (their shapes go in the message)."""
    if is_located(e):
        return None
    if isinstance(e, InvalidArgumentError):
        text = str(e)
    elif isinstance(e, MemoryError):
        text = out_of_memory(op.type, [str(v.type) for v in op.outputs])
    else:
        text = f"{op.type} failed at run time: {type(e).__name__}: {e}"
    text = text.rstrip(". ") + "." + _fix(op, text)
    where = f" at {format_location(op.loc)}" if op.loc else " (made by graphc, no user line)"
    cls = ResourceExhaustedError if isinstance(e, MemoryError) else InvalidArgumentError
    new = cls(f"{text} (op {op.type} '{op.name}' on "
                               f"{_inputs_text(op, values) or 'no inputs'}){where}")
    new._graphc_located = True
    new.op = op       # as TF's errors: the failing op
    return new
