"""Backends behind one interface: `compile(graph) -> run(list of inputs) -> list of outputs`."""
from .executor import compile_graph


class NumpyBackend:
    """The reference interpreter: each op's numpy rule, in program order."""

    name = "numpy"

    @staticmethod
    def available():
        return True

    @staticmethod
    def compile(graph):
        return compile_graph(graph)


BACKENDS = {"numpy": NumpyBackend}
AUTO_ORDER = ["numba", "numpy"]   # "auto" picks the first available
# imported on first use: numba is slow to import; the cuda module imports numba-cuda only
# when asked whether it is available
_LAZY = {"numba": "graphc.kernels.cpu.backend", "cuda": "graphc.kernels.cuda.backend"}


def register_backend(backend):
    BACKENDS[backend.name] = backend


def check_backend(name):
    if name == "auto":
        return name
    if name not in BACKENDS and name not in ("numba", "cuda"):
        raise ValueError(f"unknown backend {name!r}; choose one of 'auto', 'numpy', 'numba', "
                         "'cuda'")
    return name


def _load_lazy(name):
    if name in _LAZY and name not in BACKENDS:
        try:
            __import__(_LAZY[name])
        except ImportError as e:    # only a missing numba makes the backend unavailable
            if (e.name or "").split(".")[0] not in ("numba", "llvmlite"):
                raise


def get_backend(name):
    if name == "auto":
        for n in AUTO_ORDER:
            _load_lazy(n)
            b = BACKENDS.get(n)
            if b is not None and b.available():
                return b
    _load_lazy(name)
    b = BACKENDS.get(name)
    why = b.unavailable_reason() if hasattr(b, "unavailable_reason") else None
    if why is not None:
        raise ValueError(why)       # what is missing (package, driver, device) and the fix
    if b is None or not b.available():
        have = ", ".join(n for n, b in BACKENDS.items() if b.available())
        raise ValueError(f"backend {name!r} is not available in this build/machine; "
                         f"available: {have}")
    return b
