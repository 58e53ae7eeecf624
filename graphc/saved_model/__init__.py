"""gc.saved_model: save a model's traced functions and variables; load and run them without
the Python source (docs/saving.md, "SavedModel")."""
from .load import LoadedFunction, LoadedObject, load  # noqa: F401
from .save import save  # noqa: F401

__all__ = ["save", "load"]
