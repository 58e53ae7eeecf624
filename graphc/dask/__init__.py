"""graphc.dask (install `graphc[dask]`): run gc.functions on Dask, shipping saved graphs.

`map_blocks(fn, *arrays, **kwargs)` applies a gc.function block by block on any Dask
scheduler; `DataParallel(model, optimizer, step_fn, client=None)` trains data-parallel on a
dask.distributed cluster. Tasks carry a graph's bytes and numpy arrays, never pickled user
code (docs/scaling.md)."""
try:
    import dask.array  # noqa: F401
except ImportError as e:          # pragma: no cover - depends on the installation
    raise ImportError("graphc.dask needs Dask: pip install 'graphc[dask]' "
                      f"(dask[array] and distributed) ({e})") from None

from .blocks import map_blocks  # noqa: E402,F401
from .data_parallel import DataParallel  # noqa: E402,F401

__all__ = ["map_blocks", "DataParallel"]
