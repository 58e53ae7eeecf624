"""tests/saving/data: the files saved by older graphc versions, and the scripts that made them
(loaded as modules: their classes rebuild the saved objects)."""
import importlib.util
import os

DATA = os.path.join(os.path.dirname(__file__), "data")


def maker_module(name):
    """DATA/<name>.py imported as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(DATA, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
