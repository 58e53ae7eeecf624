"""Loop nests for column reductions: groups reducing over *leading* axes (a bias gradient's
`reduce_sum(dz, axis=0)`).

The row layout of `codegen` puts kept axes outside and reduced axes inside, which for a
reduction over axis 0 walks each column with a stride of a whole row (measured: 257 us for
`reduce_sum(where(mask, g, 0), axis=0)` on 128x256 float32, twice numpy's time). Here the
reduced axes are outside and the kept axes inside, so every pass is a contiguous sweep that
LLVM vectorizes, and the reduction outputs themselves are the accumulators:

    for blk in RANGE0(blocks of the last kept axis):    # split in the parallel variant
        <outputs[kept block] = identity>
        for <reduced axes>:
            for <kept axes, the last one within the block>:
                <loads, statements, full-size stores, accumulator updates>

Blocks split the last kept axis so that threads own disjoint accumulators. Used when every
reduction is terminal (its result leaves the group and feeds nothing inside it).
"""
from ..expr import accumulate, identity, np_name
from .codegen import _Body, miss_lines
from ..fusion import REDUCTIONS

BLOCK = 512     # columns per block: an outer iteration, a row strip that stays in L1


def is_column_group(spec):
    """Reductions over leading axes only, each one a group output consumed nowhere inside."""
    g, axes = spec.group, tuple(spec.axes)
    if not axes or axes != tuple(range(len(axes))) or len(axes) >= spec.rank:
        return False
    reds = [op.outputs[0] for op in g.ops if op.type in REDUCTIONS]
    used = {id(v) for op in g.ops for v in op.inputs}
    outs = {id(v) for v in g.outputs}
    return bool(reds) and all(id(v) not in used and id(v) in outs for v in reds)


class ColumnBody(_Body):
    """`_Body` with the reduced axes outside and the kept axes inside."""

    def lines(self):
        g, K = self.g, self.K
        self.buffered, self.in_buffer = set(), set()
        last, rest = K[-1], K[:-1]
        reds = [op for op in g.ops if op.type in REDUCTIONS]
        nan_reds = [op for op in reds if op.type in ("reduce_max", "reduce_min")
                    and op.outputs[0].type.dtype.is_floating]
        out = [f"x{k} = {self._load(k)}" for k, v in enumerate(g.inputs)
               if self.level[id(v)] == "const"]
        kept_shape = ", ".join(f"d{a}" for a in K)
        for op in nan_reds:
            out.append(f"{self._flag(op)} = np.zeros(({kept_shape},), np.bool_)")
        out.append(f"for blk in RANGE0((d{last} + {BLOCK - 1}) // {BLOCK}):")
        # lo >= 0 for LLVM to see: numba's negative-index fix-up of `lo + j` then folds
        # away and the sweeps vectorize (`blk * BLOCK` alone: scalar, 9x slower on 128x256)
        out.append(f"    lo = imax(blk * {BLOCK}, 0)")
        out.append(f"    width = imin({BLOCK}, d{last} - lo)")
        init = []
        for op in reds:
            v, dt = op.outputs[0], op.outputs[0].type.dtype
            init.append(f"{self._acc(op)} = {np_name(dt)}({identity(op.type, dt)})")
        out += self._kept_loops(init, 1, rest, last)
        body = [f"x{k} = {self._load(k)}" for k, v in enumerate(g.inputs)
                if self.level[id(v)] != "const"]
        for op in g.ops:
            if op.type in REDUCTIONS:
                body += self._update(op)
            else:
                body += self._stmt(op)
        for v in g.outputs:
            if id(v) in self.producer and self.producer[id(v)].type not in REDUCTIONS:
                full = self._is_full_output(v)
                body.append(f"out{self.out_index[id(v)]}[{self._out_index(v, full)}] = "
                            f"{self.names[id(v)]}")
        pad = 1
        for a in self.A:
            out.append("    " * pad + f"for i{a} in range(d{a}):")
            pad += 1
        out += self._kept_loops(body, pad, rest, last)
        if nan_reds:
            fix = []
            for op in nan_reds:
                cast = np_name(op.outputs[0].type.dtype)
                fix += [f"if {self._flag(op)}[{', '.join(f'i{a}' for a in K)}]:",
                        f"    {self._acc(op)} = {cast}(np.nan)"]
            out += self._kept_loops(fix, 1, rest, last)
        if self.misses:
            out = miss_lines(self.misses, out)
        return out

    def _acc(self, op):
        """The accumulator of a reduction: its output element for the current kept index."""
        v = op.outputs[0]
        return f"out{self.out_index[id(v)]}[{self._out_index(v, False)}]"

    def _flag(self, op):
        """NaN flags of a float max/min (a compare-select vectorizes; a NaN-aware one not)."""
        return f"out{self.out_index[id(op.outputs[0])]}_nan"

    def _update(self, op):
        v, src = op.outputs[0], op.inputs[0]
        dt = v.type.dtype
        acc = self._acc(op)
        lines = accumulate(op.type, acc, self._ref(src), np_name(dt), dt.is_floating)
        if op.type in ("reduce_max", "reduce_min") and dt.is_floating:
            flag = f"{self._flag(op)}[{', '.join(f'i{a}' for a in self.K)}]"
            lines[-1] = f"{flag} |= {self._ref(src)} != {self._ref(src)}"
        return lines

    @staticmethod
    def _kept_loops(body, pad, rest, last):
        lines = []
        for a in rest:
            lines.append("    " * pad + f"for i{a} in range(d{a}):")
            pad += 1
        # `range(width)` plus an offset: with `range(lo, hi)` LLVM kept a scalar loop (30x
        # slower, measured on 128x256 float32)
        lines.append("    " * pad + "for j in range(width):")
        lines.append("    " * (pad + 1) + f"i{last} = lo + j")
        return lines + ["    " * (pad + 1) + b for b in body]
