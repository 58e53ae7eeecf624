"""Global switches: run_functions_eagerly and the GRAPHC_DEBUG / GRAPHC_DUMP environment knobs."""
import os

_state = {"run_eagerly": False}


def run_functions_eagerly(run_eagerly):
    """Make every gc.function call its Python function directly (for debugging)."""
    _state["run_eagerly"] = bool(run_eagerly)


def functions_run_eagerly():
    return _state["run_eagerly"]


def debug_level():
    try:
        return int(os.environ.get("GRAPHC_DEBUG", "0") or 0)
    except ValueError:
        return 1


def dump_after():
    """The pass name (or 'all') after which GRAPHC_DUMP asks to print the graph, else None."""
    return os.environ.get("GRAPHC_DUMP") or None
