"""gc.summary: TensorBoard summaries (eagerly and from compiled functions), traced graphs
and per-op profiles. See docs/tensorboard.md. `tensorboard` is imported only when a writer
is created (install `graphc[tensorboard]`)."""
from .ops import histogram, image, scalar, text
from .trace import trace_export, trace_off, trace_on
from .writer import SummaryWriter, create_file_writer, flush, get_step, set_step

__all__ = ["create_file_writer", "SummaryWriter", "flush", "scalar", "histogram", "image",
           "text", "set_step", "get_step", "trace_on", "trace_export", "trace_off"]
