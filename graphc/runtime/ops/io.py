"""gc.print: an ordered side-effect op that prints on every call of a compiled function."""
import sys

import numpy as np

from ..dispatch import bind, convert_to_tensor
from ..registry import register, IO
from ..tensor import Tensor


def _format(v, summarize=None):
    if not isinstance(v, (np.ndarray, np.generic)):
        return str(v)
    if summarize is None:                       # numpy's own format and abbreviation
        return str(np.asarray(v))
    if summarize < 0:                           # TF: -1 prints every element
        return np.array2string(np.asarray(v), threshold=sys.maxsize, separator=" ")
    return np.array2string(np.asarray(v), threshold=2 * summarize, edgeitems=summarize,
                           separator=" ")


def _print_impl(*values, template, sep, end, output_stream, groups=None, summarize=None):
    """`template`: literal strings, and None where the next tensor goes; `groups`: how many
    template items each printed argument spans (None: one each), joined by `sep`;
    `summarize`: elements shown at each end of a long tensor (None: numpy's default)."""
    it = iter(values)
    parts = [_format(next(it), summarize) if item is None else item for item in template]
    if groups is not None:
        at, joined = 0, []
        for n in groups:
            joined.append("".join(parts[at:at + n]))
            at += n
        parts = joined
    stream = sys.stdout if output_stream is None else output_stream
    stream.write(sep.join(parts) + end)
    if hasattr(stream, "flush"):
        stream.flush()


register("print", lambda types, **attrs: [], _print_impl, kind=IO, effectful=True, nondiff=True)


def _is_tensor(x):
    return type(x) is Tensor or hasattr(x, "_as_tensor")


def _holds_tensor(x):
    if _is_tensor(x):
        return True
    if isinstance(x, dict):
        return any(_holds_tensor(v) for v in x.values())
    return isinstance(x, (list, tuple)) and any(_holds_tensor(v) for v in x)


def _pieces(x, tensors, top):
    """Template items printing `x` as Python prints it, with each tensor by value (as
    tf.print prints a nest: `[[5 6], 1]`)."""
    if _is_tensor(x):
        tensors.append(convert_to_tensor(x))
        return [None]
    if not _holds_tensor(x):
        return [str(x) if top else repr(x)]
    if isinstance(x, dict):
        items = [([repr(k) + ": "] + _pieces(v, tensors, False)) for k, v in x.items()]
        opening, closing = "{", "}"
    elif isinstance(x, tuple) and hasattr(x, "_fields"):       # namedtuple: P(x=..., y=...)
        items = [[f + "="] + _pieces(v, tensors, False) for f, v in zip(x._fields, x)]
        opening, closing = type(x).__name__ + "(", ")"
    else:
        items = [_pieces(v, tensors, False) for v in x]
        tuple_one = isinstance(x, tuple) and len(x) == 1
        opening, closing = ("(", ",)" if tuple_one else ")") if isinstance(x, tuple) \
            else ("[", "]")
    out = [opening]
    for i, item in enumerate(items):
        out += ([", "] if i else []) + item
    return _merged(out + [closing])


def _merged(items):
    """Adjacent literal strings joined into one."""
    out = []
    for item in items:
        if item is not None and out and out[-1] is not None:
            out[-1] += item
        else:
            out.append(item)
    return out


def print_(*inputs, sep=" ", end="\n", output_stream=None, summarize=None, name=None):
    """Print tensors (by value, numpy format) and Python values on every call; lists,
    tuples and dicts holding tensors print with the tensors' values.

    Inside a compiled function this is a graph op that runs each time the graph runs, in
    program order; Python's own `print` runs only while tracing.
    """
    if output_stream is not None and not callable(getattr(output_stream, "write", None)):
        raise TypeError(f"print: output_stream must be a file-like object with a write() "
                        f"method (e.g. sys.stderr or io.StringIO()), got {output_stream!r}")
    tensors, template, groups = [], [], []
    for x in inputs:
        pieces = _pieces(x, tensors, True)
        template += pieces
        groups.append(len(pieces))
    attrs = {} if all(n == 1 for n in groups) else {"groups": tuple(groups)}
    if summarize is not None:
        if type(summarize) is not int:
            raise TypeError(f"print: summarize must be an int (-1 for every element), got "
                            f"{summarize!r}")
        attrs["summarize"] = summarize
    bind("print", *tensors, template=tuple(template), sep=sep, end=end,
         output_stream=output_stream, **attrs)


PUBLIC = {"print": print_}
