"""Global switches: run_functions_eagerly, the compile mode, GRAPHC_DEBUG and GRAPHC_DUMP."""
import os

_state = {"run_eagerly": False}


def run_functions_eagerly(run_eagerly):
    """Make every gc.function call its Python function directly (for debugging).
    While it is on, context._busy counts it too: the hot entries of gc.functions check that
    one number before taking a call (see runtime/function_entry.py)."""
    from .runtime import context
    run_eagerly = bool(run_eagerly)
    with context._busy_lock:
        if run_eagerly != _state["run_eagerly"]:
            context._busy[0] += 1 if run_eagerly else -1
            _state["run_eagerly"] = run_eagerly


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


def set_compile_mode(mode):
    """'background' (default): a new trace runs its numpy plan at once while its kernels
    compile on a background thread, and switches to them when ready. 'sync': compile
    before the first run (as GRAPHC_COMPILE=sync). None: back to GRAPHC_COMPILE."""
    from .kernels import tiers
    tiers.set_mode(mode)


def compile_mode():
    """The compile mode in effect: 'background' or 'sync'."""
    from .kernels import tiers
    return tiers.mode()
