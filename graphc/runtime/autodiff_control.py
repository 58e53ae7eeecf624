"""Gradient rules that need the tracer: variable reads, cond, while and TensorArray lists."""
from . import autodiff_ops  # noqa: F401  (registers getitem_grad and the loop stacks)
from .registry import defvjp

# the gradient of a read is the variable's gradient (backward() accumulates it by variable)
defvjp("read_variable", lambda gs, outs, ins: [gs[0]])
