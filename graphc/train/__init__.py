"""gc.train: checkpoints of Variables, Modules and optimizers (docs/saving.md)."""
from . import checkpoint_format, trackable  # noqa: F401
