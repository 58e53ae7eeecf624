"""scalar / histogram / image / text: eager calls and effectful graph ops.

Inside a compiled function each summary is an op like gc.print: it runs on every call, in
program order, and passes never remove or reorder it (registry `effectful`). The op holds
only its tag and options; the writer is looked up when it runs, in the calling thread, so a
function traced, saved or loaded without a writer logs to whatever writer is default when it
is called. A writer that was default while tracing (`with w.as_default():` inside the body,
or around the first call) is the op's fallback, as TF captures it in the graph: with no
default writer at call time the op writes there, and with neither it returns at once.
"""
import numpy as np

from .. import dtypes as _dt
from ..runtime import context
from ..runtime.dispatch import bind, convert_to_tensor
from ..runtime.registry import register, IO
from ..runtime.tensor import Tensor
from . import encode
from .writer import (ACTIVE, default_writer, get_step, record_condition, traced_writer,
                     writer_token)


def _check_step(op, types):
    if types and (len(types) > 1 or op == "text"):
        t = types[-1]
        if t.shape != () or not t.dtype.is_integer:
            raise ValueError(f"gc.summary.{op}: step must be an integer scalar, got "
                             f"{t.dtype.name}{list(t.shape)}")


def _infer_scalar(types, *, tag, description, writer=None):
    _check_step("scalar", types)
    t = types[0]
    if t.shape != ():
        raise ValueError(f"gc.summary.scalar({tag!r}): data must be a scalar, got "
                         f"{t.dtype.name}{list(t.shape)}; reduce it first (e.g. gc.reduce_mean)")
    return []


def _infer_histogram(types, *, tag, buckets, description, writer=None):
    _check_step("histogram", types)
    return []


def _infer_image(types, *, tag, max_outputs, description, writer=None):
    _check_step("image", types)
    t = types[0]
    if len(t.shape) != 4 or t.shape[3] not in (1, 3, 4):
        raise ValueError(f"gc.summary.image({tag!r}): data must be [N, H, W, C] with C = 1, "
                         f"3 or 4, got {t.dtype.name}{list(t.shape)}")
    return []


def _infer_text(types, *, tag, text, description, writer=None):
    _check_step("text", types)
    return []


def _writing(values, name, n_data=1, traced=None):
    """(writer, step) for a summary op about to run, or None when nothing is written: the
    calling thread's default writer, else the one that was default when the op was traced."""
    w = default_writer() or traced_writer(traced)
    if w is None:
        return None
    if len(values) <= n_data:
        raise ValueError(f"gc.summary.{name}: no step; pass step= or call "
                         "gc.summary.set_step(step) before tracing")
    return w, int(values[-1])


def _scalar_impl(*values, tag, description, writer=None):
    if not ACTIVE[0] and writer is None:
        return
    ws = _writing(values, "scalar", 1, writer)
    if ws is not None:
        ws[0].add_summary(encode.scalar(tag, values[0], description), ws[1])


def _histogram_impl(*values, tag, buckets, description, writer=None):
    if not ACTIVE[0] and writer is None:
        return
    ws = _writing(values, "histogram", 1, writer)
    if ws is not None:
        ws[0].add_summary(encode.histogram(tag, values[0], buckets, description), ws[1])


def _image_impl(*values, tag, max_outputs, description, writer=None):
    if not ACTIVE[0] and writer is None:
        return
    ws = _writing(values, "image", 1, writer)
    if ws is not None:
        ws[0].add_summary(encode.image(tag, values[0], max_outputs, description), ws[1])


def _text_impl(*values, tag, text, description, writer=None):
    if not ACTIVE[0] and writer is None:
        return
    ws = _writing(values, "text", 0, writer)
    if ws is not None:
        ws[0].add_summary(encode.text(tag, text, description), ws[1])


for _name, _infer, _impl in (("scalar", _infer_scalar, _scalar_impl),
                             ("histogram", _infer_histogram, _histogram_impl),
                             ("image", _infer_image, _image_impl),
                             ("text", _infer_text, _text_impl)):
    register("summary_" + _name, _infer, _impl, kind=IO, effectful=True, nondiff=True)


def _emit(kind, data, step, **attrs):
    """Eagerly: write now (False, doing nothing, when no writer is default). Tracing: add
    the op (its step is read where the summary stands in the program) and return None."""
    tracing = bool(context._tls.stack)
    if not tracing and (not ACTIVE[0] or default_writer() is None):
        return False
    when = _recording(tracing)
    if when is False:
        return None if tracing else False
    if step is None:
        step = get_step()
    inputs = [] if data is None else [data if type(data) is Tensor else convert_to_tensor(data)]
    if step is not None:
        inputs.append(convert_to_tensor(step, _dt.int64) if isinstance(step, (int, np.integer))
                      else step if type(step) is Tensor else convert_to_tensor(step))
    elif not tracing or default_writer() is not None:
        raise ValueError(f"gc.summary.{kind}({attrs['tag']!r}): no step; pass step= (an int, "
                         "tensor or Variable) or call gc.summary.set_step(step) first")
    if tracing:
        token = writer_token(default_writer())
        if token is not None:
            attrs["writer"] = token
    if when is not True:        # a symbolic record_if condition: decided on each call
        from ..runtime.control_flow import cond
        cond(when, lambda: _bind_true(kind, inputs, attrs), lambda: convert_to_tensor(False))
        return None
    bind("summary_" + kind, *inputs, **attrs)
    return None if tracing else True


def _bind_true(kind, inputs, attrs):
    bind("summary_" + kind, *inputs, **attrs)
    return convert_to_tensor(True)


def _recording(tracing):
    """The record_if condition now: True, False, or (tracing) a symbolic bool tensor."""
    c = record_condition()
    if c is None:
        return True
    if type(c) is Tensor or hasattr(c, "_as_tensor"):
        t = convert_to_tensor(c)
        if t.dtype is not _dt.bool_ or t.shape != ():
            raise ValueError(f"gc.summary.record_if: the condition must be a scalar bool, got "
                             f"{t.dtype.name}{list(t.shape)}")
        if tracing and t._np is None:
            return t
        return bool(t)
    return bool(c)


def should_record_summaries():
    """The record_if condition in force (True outside any record_if; a bool tensor for a
    symbolic condition while tracing), as TF 2.21's, which does not look at the writer."""
    return _recording(bool(context._tls.stack))


def scalar(name, data, step=None, description=None):
    """Log a scalar under tag `name` at `step` to the default writer."""
    return _emit("scalar", data, step, tag=str(name), description=description or "")


def histogram(name, data, step=None, buckets=None, description=None):
    """Log the distribution of `data` (any shape) in `buckets` equal-width buckets (30)."""
    b = encode.DEFAULT_BUCKETS if buckets is None else int(buckets)
    if b < 1:
        raise ValueError(f"gc.summary.histogram({name!r}): buckets must be >= 1, got {b}")
    return _emit("histogram", data, step, tag=str(name), buckets=b,
                 description=description or "")


def image(name, data, step=None, max_outputs=3, description=None):
    """Log up to `max_outputs` images of `data` [N, H, W, C]: uint8, or floats in [0, 1]."""
    if isinstance(data, np.ndarray) and data.dtype == np.uint8:
        data = data.astype(np.float32) / np.float32(255.0)     # exact back to 0..255
    return _emit("image", data, step, tag=str(name), max_outputs=int(max_outputs),
                 description=description or "")


def text(name, data, step=None, description=None):
    """Log the Python string `data` (Markdown, as TensorBoard's Text tab renders it), or a
    (nested) list of strings, which TensorBoard shows as a table (as TF's)."""
    def strings(d):
        if isinstance(d, bytes):
            return d.decode()
        if isinstance(d, str):
            return d
        if isinstance(d, (list, tuple)) and d and not isinstance(data, Tensor):
            return tuple(strings(x) for x in d)
        raise TypeError(f"gc.summary.text({name!r}): data must be a Python str or a list of "
                        f"them (graphc tensors hold numbers only), got {type(data).__name__}")
    return _emit("text", None, step, tag=str(name), text=strings(data),
                 description=description or "")
