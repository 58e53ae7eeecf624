"""Shape ops and indexing in compiled loops (a mixin of the loop emitter, beside
`loops_tensor.TensorLowering`): each writes its own buffer through an explicit loop nest.
"""
import numpy as np

from .loops_tensor import NotLowerable, check_value, static_shape


class ShapeLowering:
    """reshape, expand_dims, squeeze, transpose, broadcast_to, concat, unstack, tile,
    getitem and gather on arrays of static shape."""

    def relayout(self, op, env, depth, loc):
        """reshape, expand_dims, squeeze: the same elements in C order, a flat copy."""
        if len(op.inputs) > 1:
            raise NotLowerable(f"{op.type} {loc} takes its shape from a tensor computed at run "
                               "time")
        src = self.operand(op.inputs[0], env, f"{op.type} {loc}: input")
        buf, shape = self.result(op, env, loc)
        size = int(np.prod(shape, dtype=np.int64))
        if src not in self.arrays:
            self.copy(buf, src, shape, depth, f"{op.type} {loc}")
            return
        flat_in, flat_out, k = self.fresh("f"), self.fresh("f"), self.fresh("i")
        self.emit(depth, f"{flat_in} = {src}.reshape(({size},))  # {op.type} {loc}")
        self.emit(depth, f"{flat_out} = {buf}.reshape(({size},))")
        self.emit(depth, f"for {k} in range({size}):")
        self.emit(depth + 1, f"{flat_out}[{k}] = {flat_in}[{k}]")

    def transpose(self, op, env, depth, loc):
        src = self.operand(op.inputs[0], env, f"transpose {loc}: input")
        perm = op.attrs["perm"]
        buf, shape = self.result(op, env, loc)
        idx, d = self.nest(shape, depth)
        src_idx = [idx[list(perm).index(a)] for a in range(len(perm))]
        self.emit(d, f"{buf}[{', '.join(idx)}] = {src}[{', '.join(src_idx)}]  # transpose {loc}")

    def broadcast_to(self, op, env, depth, loc):
        if len(op.inputs) > 1:
            raise NotLowerable(f"broadcast_to {loc} takes its shape from a tensor computed at "
                               "run time")
        src = self.operand(op.inputs[0], env, f"broadcast_to {loc}: input")
        buf, shape = self.result(op, env, loc)
        self.copy(buf, src, shape, depth, f"broadcast_to {loc}")

    def concat(self, op, env, depth, loc):
        names = [self.operand(v, env, f"concat {loc}: input") for v in op.inputs]
        axis = op.attrs["axis"]
        buf, _ = self.result(op, env, loc)
        start = 0
        for name in names:
            own = self.arrays[name]
            idx, d = self.nest(own, depth)
            dst = list(idx)
            dst[axis] = f"{start} + {idx[axis]}" if start else idx[axis]
            self.emit(d, f"{buf}[{', '.join(dst)}] = {name}[{', '.join(idx)}]  # concat {loc}")
            start += own[axis]

    def unstack(self, op, env, depth, loc):
        src = self.operand(op.inputs[0], env, f"unstack {loc}: input")
        axis = op.attrs["axis"]
        for k, out in enumerate(op.outputs):
            if check_value(out, f"unstack {loc}: result") == ():
                env[id(out)] = name = self.fresh()
                self.emit(depth, f"{name} = {src}[{k}]  # unstack {loc}")
                continue
            static_shape(out, f"unstack {loc}: result")
            env[id(out)] = buf = self.buffer(out)
            idx, d = self.nest(out.type.shape, depth)
            at = idx[:axis] + [str(k)] + idx[axis:]
            self.emit(d, f"{buf}[{', '.join(idx)}] = {src}[{', '.join(at)}]  # unstack {loc}")

    def tile(self, op, env, depth, loc):
        src = self.operand(op.inputs[0], env, f"tile {loc}: input")
        if src not in self.arrays:          # a scalar tiles to itself
            env[id(op.outputs[0])] = src
            return
        own = self.arrays[src]
        buf, shape = self.result(op, env, loc)
        idx, d = self.nest(shape, depth)
        at = [i if m == 1 else f"{i} % {dim}"
              for i, m, dim in zip(idx, op.attrs["multiples"], own)]
        self.emit(d, f"{buf}[{', '.join(idx)}] = {src}[{', '.join(at)}]  # tile {loc}")

    def getitem(self, op, env, depth, loc):
        """x[...] with ints (static or loop counters), static slices, None and one index
        tensor (a gather along its axis)."""
        arr = self._source(op, env, loc)
        src_shape = self.arrays[arr]
        parts, out_axis = [], 0     # per source axis, see _read
        for item in op.attrs["index"]:
            kind, axis = item[0], len(parts)
            if kind == "new":
                out_axis += 1
            elif kind == "int":
                parts.append(self._index(op, env, depth, loc, arr, axis, item[1]))
            elif kind == "slice" and not any(isinstance(c, str) for c in item[1:]):
                parts.append(self._slice(op, loc, src_shape[axis], axis, item[1:], out_axis))
                out_axis += 1
            elif kind == "take" and not any(p[0] == "take" for p in parts if type(p) is tuple):
                iv = op.inputs[int(item[1][1:])]
                ind = self.operand(iv, env, f"getitem {loc}: index")
                parts.append(("take", ind, out_axis, len(iv.type.shape), axis))
                out_axis += len(iv.type.shape)
            else:
                raise NotLowerable(f"getitem {loc} uses slice bounds computed at run time or "
                                   f"a second index tensor (index {item}); only ints, loop "
                                   "counters, static slices and one index tensor are compiled")
        for axis in range(len(parts), len(src_shape)):
            parts.append(self._slice(op, loc, src_shape[axis], axis, (None, None, None),
                                     out_axis))
            out_axis += 1
        self._read(op, env, depth, loc, arr, parts)

    def gather(self, op, env, depth, loc):
        """gather(x, indices, axis): x[:, ..., indices] with `axis` slices before it."""
        arr = self._source(op, env, loc)
        iv = op.inputs[1]
        ind = self.operand(iv, env, f"gather {loc}: indices")
        axis, rank = op.attrs["axis"], len(iv.type.shape)
        shape = self.arrays[arr]
        parts = [self._slice(op, loc, shape[a], a, (None, None, None), a) for a in range(axis)]
        parts.append(("take", ind, axis, rank, axis))
        parts += [self._slice(op, loc, shape[a], a, (None, None, None), a - 1 + rank)
                  for a in range(axis + 1, len(shape))]
        self._read(op, env, depth, loc, arr, parts)

    def _source(self, op, env, loc):
        arr = env[id(op.inputs[0])]
        if arr not in self.arrays:
            raise NotLowerable(f"{op.type} {loc} indexes a scalar")
        return arr

    def _read(self, op, env, depth, loc, arr, parts):
        """The op's result read from `arr`; per source axis, `parts` holds an index
        expression, (start, step, out axis) for a slice, or ("take", indices, first out
        axis, rank of indices, source axis) for a gather (indices in [0, size), as the
        numpy rule checks)."""
        out = op.outputs[0]
        if check_value(out, f"{op.type} {loc}: result") == ():
            env[id(out)] = target = self.fresh()
            idx, d = [], depth
        else:
            buf, shape = self.result(op, env, loc)
            idx, d = self.nest(shape, depth)
            target = f"{buf}[{', '.join(idx)}]"
        src_idx = []
        for p in parts:
            if type(p) is str:
                src_idx.append(p)
            elif p[0] != "take":
                src_idx.append(_affine(p[0], p[1], idx[p[2]]))
            else:
                _, ind, first, rank, axis = p
                k = self.fresh("k")
                at = f"{ind}[{', '.join(idx[first:first + rank])}]" if rank else ind
                self.emit(d, f"{k} = {at}")
                self.emit(d, f"if {k} < 0 or {k} >= {arr}.shape[{axis}]:")
                self.emit(d + 1, f"raise IndexError('index out of range in {op.type} "
                          f"{op.name}')")
                src_idx.append(k)
        self.emit(d, f"{target} = {arr}[{', '.join(src_idx)}]  # {op.type} {loc}")

    def _index(self, op, env, depth, loc, arr, axis, v):
        if isinstance(v, str):
            iv = op.inputs[int(v[1:])]
            if iv.type.shape != ():
                raise NotLowerable(f"getitem {loc}: index '%{iv.name}' is not a scalar")
            expr = env[id(iv)]
        elif self.arrays[arr][axis] is not None:
            return str(int(v) % self.arrays[arr][axis])   # in range: checked while tracing
        else:
            expr = str(int(v))
        k = self.fresh("k")
        self.emit(depth, f"{k} = {expr}")
        self.emit(depth, f"if {k} < -{arr}.shape[{axis}] or {k} >= {arr}.shape[{axis}]:")
        self.emit(depth + 1, f"raise IndexError('index out of range in getitem {op.name}')")
        return k

    @staticmethod
    def _slice(op, loc, dim, axis, comps, out_axis):
        if dim is None:
            raise NotLowerable(f"getitem {loc} slices axis {axis}, whose size is unknown while "
                               "tracing")
        start, _, step = slice(*comps).indices(dim)
        return (start, step, out_axis)


def _affine(start, step, i):
    scaled = i if step == 1 else f"{step} * {i}"
    return scaled if start == 0 else f"{start} + {scaled}"
