"""gc.train: checkpoints of Variables, Modules and optimizers (docs/saving.md)."""
from . import checkpoint_format, trackable  # noqa: F401
from .checkpoint import (Checkpoint, CheckpointLoadStatus, InitializationOnlyStatus,  # noqa: F401
                         UnusedCheckpointValuesWarning)
from .manager import CheckpointManager
from .state import latest_checkpoint

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "CheckpointLoadStatus",
           "UnusedCheckpointValuesWarning"]
