"""gc.print: an ordered side-effect op that prints on every call of a compiled function."""
import sys

import numpy as np

from ..dispatch import bind, convert_to_tensor
from ..registry import register, IO
from ..tensor import Tensor


def _format(v):
    return str(np.asarray(v)) if isinstance(v, (np.ndarray, np.generic)) else str(v)


def _print_impl(*values, template, sep, end, output_stream):
    it = iter(values)
    parts = [_format(next(it)) if item is None else item for item in template]
    stream = sys.stdout if output_stream is None else output_stream
    stream.write(sep.join(parts) + end)
    if hasattr(stream, "flush"):
        stream.flush()


register("print", lambda types, **attrs: [], _print_impl, kind=IO, effectful=True, nondiff=True)


def print_(*inputs, sep=" ", end="\n", output_stream=None, summarize=None, name=None):
    """Print tensors (by value, numpy format) and Python values on every call.

    Inside a compiled function this is a graph op that runs each time the graph runs, in
    program order; Python's own `print` runs only while tracing.
    """
    tensors, template = [], []
    for x in inputs:
        if type(x) is Tensor or hasattr(x, "_as_tensor"):
            tensors.append(convert_to_tensor(x))
            template.append(None)
        else:
            template.append(str(x))
    bind("print", *tensors, template=tuple(template), sep=sep, end=end,
         output_stream=output_stream)


PUBLIC = {"print": print_}
