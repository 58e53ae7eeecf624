"""graphc.dask.map_blocks: one client-side trace, shipped to every block as a saved graph."""
import itertools

import dask.array as da
import numpy as np

from .. import dtypes as _dt
from ..errors import GraphcError
from ..runtime.function import Function
from ..runtime.signature import TensorSpec
from ..runtime.types import TensorType
from . import payload


class BlockFunction:
    """The task callable: the payload's bytes and digest, never the user's function.
    Pickled (by dask) as this class's name plus those bytes and strings, once per task:
    so the output's chunks are kept in a size that does not grow with the block count
    (a full chunks tuple made a graph of n blocks ship O(n^2) bytes)."""

    def __init__(self, data, digest, backend, name, out_index, chunks):
        self.data, self.digest, self.backend = data, digest, backend
        self.name, self.out_index, self.chunks = name, out_index, _compact(chunks)

    def __call__(self, *blocks, block_id=None):
        try:
            fn = payload.load(self.data, self.digest, self.backend)
            out = fn.run([np.asarray(b) for b in blocks])[self.out_index]
        except Exception as e:  # noqa: BLE001 - re-raised as the same type, with the block
            raise _at_block(e, self.name, block_id) from e
        want = tuple(_block_size(c, i) for c, i in zip(self.chunks, block_id or ()))
        if block_id is not None and out.shape != want:   # chunks= given wrong, say
            raise GraphcError(f"graphc.dask.map_blocks({self.name}), block {tuple(block_id)}: "
                              f"the function returned shape {list(out.shape)} where the "
                              f"output's chunks say {list(want)}. Fix: pass the right "
                              "chunks=, or leave it out to derive it from the trace")
        return out

    def __dask_tokenize__(self):
        return ("graphc.dask.BlockFunction", self.digest, self.backend, self.out_index)


def _compact(chunks):
    """Per output axis ("even", size, count, last size) when every block but the last has
    one size (dask's usual chunking), else ("sizes", sizes)."""
    out = []
    for c in chunks:
        c = tuple(int(x) for x in c)
        if len(c) > 2 and len(set(c[:-1])) == 1:
            out.append(("even", c[0], len(c), c[-1]))
        else:
            out.append(("sizes", c))
    return tuple(out)


def _block_size(axis, i):
    if axis[0] == "even":
        return axis[1] if i < axis[2] - 1 else axis[3]
    return axis[1][i]


def _at_block(e, name, block_id):
    text = f"graphc.dask.map_blocks({name}), block {tuple(block_id or ())}: {e}"
    try:
        new = type(e)(text)
    except Exception:  # noqa: BLE001 - an exception type that takes other arguments
        return e
    return new


def map_blocks(fn, *arrays, backend="auto", drop_axis=None, new_axis=None, chunks=None,
               name=None, **kwargs):
    """Apply gc.function `fn` (a plain function is wrapped) to every block of the dask
    `arrays` (aligned as `dask.array.map_blocks` aligns them); returns a lazy dask array.
    `kwargs` are Python values baked into the one trace; `backend` is what workers run;
    `name` (as in dask) fully names the output's keys, so it must be unique."""
    if not isinstance(fn, Function):
        if not callable(fn):
            raise TypeError(f"graphc.dask.map_blocks: fn must be a gc.function or a "
                            f"function, got {fn!r}")
        fn = Function(fn, backend=backend)
    if not arrays:
        raise TypeError(f"graphc.dask.map_blocks({fn._name}): give at least one array")
    for k, v in kwargs.items():
        if isinstance(v, (np.ndarray, da.Array)) or hasattr(v, "_as_tensor"):
            raise TypeError(f"graphc.dask.map_blocks({fn._name}): keyword {k!r} is an array; "
                            "arrays go positionally (they are split into blocks); keywords "
                            "are Python values baked into the trace")
    arrays = [a if isinstance(a, da.Array) else da.asarray(a) for a in arrays]
    drop = _axes(drop_axis)
    new = _axes(new_axis)
    ndim = max(a.ndim for a in arrays)
    _, arrays = da.core.unify_chunks(*itertools.chain.from_iterable(
        (a, tuple(range(ndim - a.ndim, ndim))) for a in arrays))
    grid = _Grid(arrays, ndim, drop)
    cf = fn.get_concrete_function(*grid.specs(fn._name), **kwargs)
    out = _single_output(cf, fn._name)
    if chunks is None:
        drop, chunks = _derive_chunks(cf, out, grid, drop, new, drop_axis is None,
                                      new_axis is None, fn._name)
    data, digest, variables = payload.dumps(cf)
    if variables:
        raise TypeError(f"graphc.dask.map_blocks({fn._name}): the function reads gc.Variables "
                        f"({', '.join(v.name for v in variables)}); pass their values as "
                        "arguments (blocks) or constants instead")
    dtype = out.type.dtype.np
    chunks = _normalized(chunks, out.type.ndim, fn._name)
    runner = BlockFunction(data, digest, backend, fn._name, cf._structure.index, chunks)
    return da.map_blocks(runner, *arrays, dtype=dtype, chunks=chunks,
                         drop_axis=sorted(drop) or None, new_axis=sorted(new) or None,
                         meta=np.empty((0,) * out.type.ndim, dtype),
                         name=name, token=f"graphc-{fn._name}")


def _normalized(chunks, rank, name):
    """User chunks as a tuple of tuples (one per output axis), checked for the rank."""
    chunks = tuple(tuple(int(x) for x in (c if np.ndim(c) else (c,))) for c in chunks)
    if len(chunks) != rank:
        raise ValueError(f"graphc.dask.map_blocks({name}): chunks={chunks} has {len(chunks)} "
                         f"axes but the function returns rank-{rank} blocks")
    return chunks


def _axes(a):
    if a is None:
        return set()
    return {int(a)} if np.ndim(a) == 0 else {int(x) for x in a}


def _single_output(cf, name):
    from ..runtime.concrete import _Slot
    if type(cf._structure) is not _Slot:
        raise TypeError(f"graphc.dask.map_blocks({name}): the function must return one "
                        "tensor per block (a dask array has one dtype); call map_blocks "
                        "once per output")
    v = cf.graph.outputs[cf._structure.index]
    return v


class _Grid:
    """The block structure of the aligned inputs: every block's shape, per input."""

    def __init__(self, arrays, ndim, drop):
        self.arrays, self.ndim, self.drop = arrays, ndim, drop
        self.numblocks = [max((a.numblocks[g - (ndim - a.ndim)] for a in arrays
                               if g >= ndim - a.ndim), default=1) for g in range(ndim)]

    def block_shapes(self, index):
        """Each input's block shape at grid `index` (dropped axes arrive concatenated)."""
        shapes = []
        for a in self.arrays:
            off = self.ndim - a.ndim
            shape = []
            for d in range(a.ndim):
                g = d + off
                if g in self.drop:
                    shape.append(a.shape[d])
                else:
                    c = a.chunks[d]
                    shape.append(c[index[g]] if len(c) > 1 else c[0])
            shapes.append(tuple(shape))
        return tuple(shapes)

    def indices(self):
        kept = [range(1) if g in self.drop else range(n) for g, n in enumerate(self.numblocks)]
        return itertools.product(*kept)

    def specs(self, name):
        seen = [set() for _ in self.arrays]
        for index in self.indices():
            for s, shape in zip(seen, self.block_shapes(index)):
                s.add(shape)
        out = []
        for a, shapes in zip(self.arrays, seen):
            dt = _dt.from_numpy(a.dtype)
            if dt is None:
                raise TypeError(f"graphc.dask.map_blocks({name}): dtype {a.dtype} is not a "
                                "graphc dtype")
            dims = [d[0] if len(set(d)) == 1 else None for d in zip(*shapes)] if a.ndim else []
            out.append(TensorSpec(dims, dt))
        return out


def _derive_chunks(cf, out, grid, drop, new, infer_drop, infer_new, name):
    """(drop axes, output chunks) from the trace: the output shape of every distinct block
    signature, found by shape specialization of the traced graph (no computation)."""
    rank, ndim = out.type.ndim, grid.ndim
    want = ndim - len(drop) + len(new)
    if rank > want or (rank < want and not infer_drop):
        raise ValueError(
            f"graphc.dask.map_blocks({name}): the function returns rank-{rank} blocks from "
            f"rank-{ndim} blocks; say how the axes map, as for dask.array.map_blocks: "
            "drop_axis=... for input axes it removes, new_axis=... for axes it adds, or "
            "chunks=... for the output's chunks")
    candidates = [drop]
    if rank < want:
        single = [g for g in range(ndim) if g not in drop and grid.numblocks[g] == 1]
        candidates = [drop | set(c) for c in itertools.combinations(single, want - rank)]
    results, errors = {}, []
    for d in candidates:
        try:
            results.setdefault(_chunks_for(cf, grid, d, new, rank), d)
        except ValueError as e:
            errors.append(str(e))
    if len(results) == 1:
        (chunks, d), = results.items()
        return d, chunks
    why = ("several axis mappings fit" if results else
           errors[0] if errors else "no single-block input axis can be dropped")
    raise ValueError(
        f"graphc.dask.map_blocks({name}): cannot derive the output's chunks from the trace "
        f"({why}). Fix: pass chunks=... (and drop_axis=... / new_axis=... as for "
        "dask.array.map_blocks), or rechunk the input to one chunk along reduced axes")


def _chunks_for(cf, grid, drop, new, rank):
    kept = [g for g in range(grid.ndim) if g not in drop]
    positions = [p for p in range(rank) if p not in new]    # output axes fed by grid axes
    if len(positions) != len(kept):
        raise ValueError("the output rank does not fit drop_axis/new_axis")
    chunks = [dict() for _ in range(rank)]
    memo = {}
    old_drop, grid.drop = grid.drop, drop
    try:
        for index in grid.indices():
            shapes = grid.block_shapes(index)
            shape = memo.get(shapes)
            if shape is None:
                shape = memo[shapes] = output_shape(cf, shapes)
            at = dict(zip(positions, (index[g] for g in kept)))
            for p in range(rank):
                if shape[p] is None:
                    raise ValueError(f"output axis {p} has a size the trace leaves unknown "
                                     f"for blocks {list(shapes)}")
                prev = chunks[p].setdefault(at.get(p, 0), shape[p])
                if prev != shape[p]:
                    raise ValueError(f"output axis {p} differs between blocks of one row "
                                     f"({prev} vs {shape[p]})")
    finally:
        grid.drop = old_drop
    return tuple(tuple(c[i] for i in range(len(c))) for c in chunks)


def output_shape(cf, input_shapes):
    """The traced output's shape for blocks of `input_shapes`: the graph re-typed on them
    by the shape specialization pass (static shape arithmetic only, nothing runs)."""
    from ..runtime.graph import Value
    from ..runtime.passes._rewrite import copy_graph
    from ..runtime.passes.shape_specialization import _specialize
    g = cf.graph
    out = g.outputs[cf._structure.index]
    if None not in out.type.shape:
        return out.type.shape
    sharper = {}
    for v, shape in zip(g.inputs, input_shapes):
        if v.type.shape != shape:
            sharper[id(v)] = Value(v.name, TensorType(v.type.dtype, shape))
    # the inputs pose as captures: that is how the pass takes sharper types from outside
    moved = copy_graph(g, g.operations, g.outputs,
                       [(v, None) for v in g.inputs] + list(g.captures))
    moved.inputs = []
    try:
        spec = _specialize(moved, sharper)
    except (TypeError, ValueError, GraphcError) as e:
        raise ValueError(f"the trace does not accept blocks {list(input_shapes)}: {e}") \
            from None
    return spec.outputs[cf._structure.index].type.shape
