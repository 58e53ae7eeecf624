"""gc.summary: TensorBoard summaries (eagerly and from compiled functions), traced graphs
and per-op profiles. See docs/tensorboard.md. `tensorboard` is imported only when a writer
is created (install `graphc[tensorboard]`)."""
import types as _types

from .ops import histogram, image, scalar, should_record_summaries, text
from .trace import trace_export, trace_off, trace_on
from .writer import SummaryWriter, create_file_writer, flush, get_step, record_if, set_step

# TF keeps the default step under tf.summary.experimental
experimental = _types.SimpleNamespace(set_step=set_step, get_step=get_step)

__all__ = ["create_file_writer", "SummaryWriter", "flush", "scalar", "histogram", "image",
           "text", "set_step", "get_step", "trace_on", "trace_export", "trace_off",
           "record_if", "should_record_summaries", "experimental"]
