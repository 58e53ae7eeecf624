"""Readable Python loop nests for fused groups, built from the registry's scalar templates.

Layout of a kernel over domain axes i0..i{R-1} with reduced axes A and kept axes K:

    <loads of inputs broadcast along every axis>
    for <kept axes> (the outermost one over [outer_lo, outer_hi): codegen_parallel):
        <loads of inputs broadcast along A>
        <outer statements, in program order; each reduction is an inner loop nest over A
         that recomputes the full-level values it needs>
        <stores of outer outputs>
        <one final inner loop nest over A computing and storing full-level outputs>

Every statement casts to the op's dtype, so int32 wraps and float32 stays float32 exactly
as the numpy rules do; each carries a comment naming the op and the user's file:line.
Kernels are compiled without fast-math flags: results are eager's up to rounding, with
NaN, inf and signed zeros intact. Integer + - * wrap (`exact.wadd`...: numba's own are
`nsw`, overflow undefined), float row sums are accumulated block by block in explicit
SIMD lanes and combined pairwise (`exact.block_sum`, `cascade_push`), since LLVM
vectorizes a float reduction only under `reassoc`; float products stay in numpy's order.

A group with sin/cos/tan also gets `_fast` variants: they call the vectorized polynomials
(`fast_sin`...), which are exact below 2**17 (float32) or 2**47 (float64), and return 1 if a
trig argument was beyond that (each check ORed into a bool: `miss_lines`); the runner then
redoes the group with the whole-range functions, so typical inputs run ~2x faster and huge
ones still get the right answer. For flat elementwise groups `fname` (compiled when first
needed) redoes only the chunks that missed (`codegen_chunks`).
"""
import os

from ..expr import TRIG, accumulate, identity, int_op, np_name, statement, where  # noqa: F401
from ..fusion import REDUCTIONS
from ..planning import KernelSpec  # noqa: F401 - the spec this generator lowers
from .exact import BLOCK, LANES, LEVELS

# ops worth keeping in a row buffer rather than recomputing in a later pass
EXPENSIVE = {"exp", "log", "log1p", "tanh", "sin", "cos", "tan", "erf", "pow", "sqrt",
             "rsqrt"}
ROW_CHUNK = 64      # rows per outer iteration when rows need buffers (allocated once each)


def vector_width():
    """Bits per SIMD vector for kernel loops: GRAPHC_VECTOR_WIDTH, else 512 where the CPU
    has AVX-512F (LLVM itself stays at 256 there), else 0: leave it to LLVM."""
    env = os.environ.get("GRAPHC_VECTOR_WIDTH")
    if env:
        return int(env)
    import llvmlite.binding as llb
    return 512 if "+avx512f" in llb.get_host_cpu_features().flatten().split(",") else 0


def _widened(body, width):
    """`body` with the vector-width hint at its top: it sets the function's attributes, and
    every loop of a variant is in the serial function (codegen_parallel.py)."""
    if not width:
        return body
    return [f"prefer_vector_width({width})  # SIMD width for this function's loops"] + body


def has_fast_variant(group):
    return any(op.type in TRIG for op in group.ops)


def generate(spec, fname):
    """Module source defining `fname` (serial, over outer iterations [lo, hi)) and
    `fname_par` (one block of them per thread, calling the serial one: `codegen_parallel`),
    and for groups with trig ops `fname_fast` and `fname_fast_par` (see the module
    docstring; in a chunked module `fname` and `fname_par` redo only the chunks where the
    fast variant met an argument beyond its range). Every variant returns an int64: trig
    arguments beyond range (a chunked fast variant: 1 if any), chunks redone, or 0.
    Kernels release the GIL while they run: the background compile thread (numba holds the
    GIL) otherwise got only the gaps between the calls of a kernel compiled earlier."""
    src = ["import numpy as np",
           "from graphc.kernels.cpu.cache_numba import njit  # cache=True: graphc's sealed cache",
           "from graphc.kernels.cpu.codegen_parallel import run_blocks",
           "from graphc.kernels.cpu.scalar import *  # noqa: F401,F403", ""]
    variants = [(fname, False)]
    if has_fast_variant(spec.group):
        variants.append((fname + "_fast", True))
    from .codegen_chunks import CHECKED_FLAG, ChunkedBody, is_chunked_group
    from .codegen_columns import ColumnBody, is_column_group
    from .codegen_parallel import parallel_source, serial_source
    from .hoist import hoist_invariants
    body_class = ColumnBody if is_column_group(spec) else _Body
    width = vector_width()
    chunked = has_fast_variant(spec.group) and is_chunked_group(spec)
    if chunked:
        src.append(f"{CHECKED_FLAG} = True  # {fname} redoes only the chunks where "
                   f"{fname}_fast met a trig argument beyond its range")
    for base, fast in variants:
        if chunked:
            body = ChunkedBody(spec, redo=not fast).lines()
        else:
            body = body_class(spec, fast).lines()
        body = _widened(hoist_invariants(body), width)
        src.extend(serial_source(base, _params(spec), body))
        src.extend(parallel_source(base, spec, body))
        src.append(f"{base} = njit(cache=True, nogil=True, error_model='numpy')({base})")
        src.append(f"{base}_par = njit(cache=True, nogil=True, error_model='numpy')"
                   f"({base}_par)")
        src.append("")
    return "\n".join(src)


def miss_lines(misses, body):
    """`body` between its fast-trig miss flags' initialization and the return of 1 if any
    is set, else 0. A bool OR per trig op costs nothing in the loop, where an int64 count
    (`acc += fast_trig_miss(x) != 0`) made it ~2x slower (1024x1024 float32, the chain
    `tanh(1.5*x + 0.25) * exp(-x*x) + 0.5*sin(x)` in a 2-d loop nest, one thread: AVX-512
    2.93 against 1.47 ns/element, AVX2 code 4.19 against 2.16: the count's int64 lanes
    took registers and, on AVX-512, kept LLVM from vectorizing the loop at all)."""
    return ([f"{acc} = False  # a fast-trig argument beyond range" for acc, _ in misses]
            + body + ["return 1 if " + " or ".join(acc for acc, _ in misses) + " else 0"])


def _params(spec):
    g = spec.group
    names = [f"in{k}" for k in range(len(g.inputs))]
    names += [f"out{k}" for k in range(len(g.outputs))]
    names += [f"d{a}" for a in range(spec.rank)]
    return ", ".join(names)


class _Body:
    def __init__(self, spec, fast=False):
        self.spec = spec
        self.fast = fast
        self.misses = []        # accumulators of fast_trig_miss, one per trig op
        g = spec.group
        self.g = g
        self.R = spec.rank
        self.A = spec.axes
        self.K = [a for a in range(self.R) if a not in self.A]
        self.names = {}
        self.level = {}
        self.in_index = {}
        for k, v in enumerate(g.inputs):
            self.in_index[id(v)] = k
        self.producer = {id(v): op for op in g.ops for v in op.outputs}
        self.out_index = {id(v): k for k, v in enumerate(g.outputs)}
        self._classify()

    # -- levels ---------------------------------------------------------------------------
    def _input_axes(self, k):
        """Domain axes that input k is indexed by (those not broadcast)."""
        r = self.spec.in_ranks[k]
        return [self.R - r + j for j, f in enumerate(self.spec.flags[k]) if not f]

    def _classify(self):
        for k, v in enumerate(self.g.inputs):
            axes = self._input_axes(k)
            self.level[id(v)] = ("const" if not axes else
                                 "outer" if not set(axes) & set(self.A) else "full")
        for n, op in enumerate(self.g.ops):
            v = op.outputs[0]
            self.names[id(v)] = f"v{n}"
            if op.type in REDUCTIONS:
                self.level[id(v)] = "outer"
            else:
                lv = {self.level[id(i)] for i in op.inputs}
                self.level[id(v)] = "full" if "full" in lv else (
                    "outer" if "outer" in lv or self.K else "const")
                if self.level[id(v)] == "const":
                    self.level[id(v)] = "outer"

    # -- emission -------------------------------------------------------------------------
    def _load(self, k):
        r = self.spec.in_ranks[k]
        if r == 0:
            return f"in{k}[()]"
        idx = ["0" if f else f"i{self.R - r + j}" for j, f in enumerate(self.spec.flags[k])]
        return f"in{k}[{', '.join(idx)}]"

    def _ref(self, v):
        k = self.in_index.get(id(v))
        return f"x{k}" if k is not None else self.names[id(v)]

    def _stmt(self, op):
        v = op.outputs[0]
        args = [self._ref(i) for i in op.inputs]
        line = f"{self.names[id(v)]} = {statement(op, args, self.fast)}  # {op.type} {where(op)}"
        if not (self.fast and op.type in TRIG):
            return [line]
        acc = f"miss_{self.names[id(v)]}"
        if acc not in [m[0] for m in self.misses]:
            self.misses.append((acc, np_name(v.type.dtype)))
        # a bool OR: an int64 count here made loops ~2x slower (`miss_lines`)
        return [line, f"{acc} |= fast_trig_miss({args[0]}) != 0"]

    def _closure(self, sinks, stop=()):
        """ids of the full-level values needed for `sinks` (not looking past `stop`)."""
        need, stack = set(), list(sinks)
        while stack:
            v = stack.pop()
            if id(v) in need or self.level.get(id(v)) != "full":
                continue
            need.add(id(v))
            op = self.producer.get(id(v))
            if op is not None and id(v) not in stop:
                stack.extend(op.inputs)
        return need

    def _plan_buffers(self):
        """Expensive full-level values needed by several passes over a row are computed
        once into a row buffer (softmax's exp(x - max) is then not evaluated twice)."""
        self.buffered = set()
        if len(self.A) != 1:
            return
        sinks = [[op.inputs[0]] for op in self.g.ops if op.type in REDUCTIONS]
        sinks.append([v for v in self.g.outputs if id(v) in self.producer and
                      self._is_full_output(v)])
        seen = {}
        for stage in sinks:
            for vid in self._closure(stage):
                seen[vid] = seen.get(vid, 0) + 1
        for vid, count in seen.items():
            op = self.producer.get(vid)
            if count > 1 and op is not None and op.type in EXPENSIVE:
                self.buffered.add(vid)

    def _buffers_in_outputs(self):
        """{buffered value id: output index} for buffers kept in an output's own row (one
        buffer per output, same dtype, reduced axis last): the last pass reads each element
        before it writes the output there, and the row is in cache for that pass (softmax:
        3.2 ms instead of 3.6 ms on 4096x1024 float32, measured)."""
        if not self.buffered or tuple(self.A) != (self.R - 1,) or not self.K:
            return {}
        free = [(k, v) for k, v in enumerate(self.g.outputs)
                if id(v) in self.producer and self._is_full_output(v)]
        found = {}
        for op in self.g.ops:
            vid = id(op.outputs[0])
            if vid not in self.buffered:
                continue
            for k, v in free:
                if v.type.dtype == op.outputs[0].type.dtype and k not in found.values():
                    found[vid] = k
                    break
        return found

    def _full_chain(self, sinks):
        """Input loads and full-level statements needed to compute `sinks`, in order."""
        ready = self.in_buffer
        need = self._closure(sinks, stop=ready)
        loads = [f"x{self.in_index[id(v)]} = {self._load(self.in_index[id(v)])}"
                 for v in self.g.inputs if id(v) in need]
        a = self.A[0] if self.A else None
        stmts = []
        for op in self.g.ops:
            vid = id(op.outputs[0])
            if vid not in need:
                continue
            name = self.names[vid]
            if vid in ready:
                stmts.append(f"{name} = buf_{name}[i{a}]  # {op.type} computed in an earlier pass")
                continue
            stmts.extend(self._stmt(op))
            if vid in self.buffered:
                stmts.append(f"buf_{name}[i{a}] = {name}")
        self.in_buffer |= need & self.buffered
        return loads + stmts

    def _inner(self, body, pad):
        lines = []
        for depth, a in enumerate(self.A):
            lines.append("    " * (pad + depth) + f"for i{a} in range(d{a}):")
        inner = "    " * (pad + len(self.A))
        return lines + [inner + b for b in body]

    def _out_index(self, v, full):
        if full:
            return ", ".join(f"i{a}" for a in range(self.R))
        op = self.producer[id(v)]
        keep = op.type not in REDUCTIONS or op.attrs.get("keepdims")
        idx = [("0" if a in self.A else f"i{a}") for a in range(self.R)
               if keep or a not in self.A]
        return ", ".join(idx) if idx else "()"

    def lines(self):
        g, out = self.g, []
        self._plan_buffers()
        self.in_buffer = set()
        for k, v in enumerate(g.inputs):
            if self.level[id(v)] == "const":
                out.append(f"x{k} = {self._load(k)}")
        pad = 0
        in_outputs = self._buffers_in_outputs()
        buffers = [f"buf_{self.names[id(op.outputs[0])]} = np.empty(d{self.A[0]}, "
                   f"{np_name(op.outputs[0].type.dtype)})  # row buffer"
                   for op in g.ops if id(op.outputs[0]) in self.buffered
                   and id(op.outputs[0]) not in in_outputs]
        for depth, a in enumerate(self.K):
            ind = "    " * pad
            if depth == 0 and buffers:     # rows in chunks: one buffer per chunk, not per row
                out.append(ind + f"for c{a} in RANGE0((d{a} + {ROW_CHUNK - 1}) // {ROW_CHUNK}):")
                out.extend(ind + "    " + b for b in buffers)
                out.append(ind + f"    for r{a} in range(imin({ROW_CHUNK}, d{a} - c{a} * "
                                 f"{ROW_CHUNK})):")
                out.append(ind + f"        i{a} = c{a} * {ROW_CHUNK} + r{a}")
                pad += 2
                continue
            rng = "RANGE0(" if depth == 0 else "range("
            out.append(ind + f"for i{a} in {rng}d{a}):")
            pad += 1
        sp = "    " * pad
        if buffers and not self.K:
            out.extend(buffers)
        rows = ", ".join(f"i{a}" for a in self.K)
        for vid, k in in_outputs.items():
            out.append(sp + f"buf_{self.names[vid]} = out{k}[{rows}]  # row buffer: the "
                       "output's own row, overwritten by the last pass")
        for k, v in enumerate(g.inputs):
            if self.level[id(v)] == "outer":
                out.append(sp + f"x{k} = {self._load(k)}")
        full_outs = []
        for op in g.ops:
            v = op.outputs[0]
            if op.type in REDUCTIONS:
                out.extend(self._reduction(op, pad))
            elif self.level[id(v)] != "full":
                out.extend(sp + ln for ln in self._stmt(op))
            if id(v) in self.out_index:
                if self._is_full_output(v):
                    full_outs.append(v)
                else:
                    out.append(sp + f"out{self.out_index[id(v)]}[{self._out_index(v, False)}]"
                               f" = {self.names[id(v)]}")
        if full_outs:
            body = self._full_chain(full_outs)
            body += [f"out{self.out_index[id(v)]}[{self._out_index(v, True)}] = "
                     f"{self.names[id(v)]}" for v in full_outs]
            out.append(sp + "# store the full-size outputs")
            out.extend(self._inner(body, pad))
        if self.misses:    # summed over the blocks of a parallel run
            out = miss_lines(self.misses, out)
        if not out:
            out.append("pass")
        return out

    def _is_full_output(self, v):
        op = self.producer[id(v)]
        if op.type in REDUCTIONS:
            return False
        return any(v.type.shape[a] != 1 for a in self.A) or self.level[id(v)] == "full"

    def _reduction(self, op, pad):
        sp = "    " * pad
        v, src = op.outputs[0], op.inputs[0]
        acc = self.names[id(v)]
        dt = v.type.dtype
        cast = np_name(dt)
        lines = [sp + f"# {op.type} over axes {list(self.A)}: {where(op)}",
                 sp + f"{acc} = {cast}({identity(op.type, dt)})"]
        body = self._full_chain([src])
        if dt.is_floating and op.type == "reduce_sum" and self.A:
            if len(self.A) == 1 and id(src) in self.buffered:   # the row is stored anyway
                return lines + self._inner(body, pad) + [
                    sp + f"lv_{acc} = stack_array({cast}, {LEVELS})  # pairwise partial sums",
                    sp + f"{acc} = buffer_sum(buf_{self.names[id(src)]}, d{self.A[0]}, "
                         f"lv_{acc}, {cast}(0))"]
            return lines + self._blocked(op, body, pad)
        if dt.is_floating and op.type in ("reduce_max", "reduce_min"):
            fn = "row_maximum" if op.type == "reduce_max" else "row_minimum"  # NaN-propagating
            body.append(f"{acc} = {fn}({acc}, {self._ref(src)})")
        else:
            body.extend(accumulate(op.type, acc, self._ref(src), cast, dt.is_floating))
        return lines + self._inner(body, pad)

    def _blocked(self, op, body, pad):
        """A float sum over the innermost reduced axis in blocks of BLOCK values: LANES
        accumulators take elements j, j + LANES, ... of a block (an inner loop over the lanes
        that LLVM vectorizes, no reassociation needed), the remainder of a block goes to one
        more in order; each block's lanes are added pairwise (`block_sum`) and the blocks as
        a pairwise tree (`cascade_push`). Fixed order, numpy-like accuracy."""
        v, acc = op.outputs[0], self.names[id(op.outputs[0])]
        t = np_name(v.type.dtype)
        zero = f"{t}(0)"
        src = self._ref(op.inputs[0])
        a = self.A[-1]
        sp = "    " * pad
        lines = [sp + f"lv_{acc} = stack_array({t}, {LEVELS})  # pairwise partial sums",
                 sp + f"ln_{acc} = stack_array({t}, {LANES})  # SIMD lanes of one block",
                 sp + f"n_{acc} = 0  # blocks done"]
        for depth, outer in enumerate(self.A[:-1]):
            lines.append("    " * (pad + depth) + f"for i{outer} in range(d{outer}):")
        ind = "    " * (pad + len(self.A) - 1)
        lines += [ind + f"for c_{acc} in range((d{a} + {BLOCK - 1}) // {BLOCK}):",
                  ind + f"    lo_{acc} = c_{acc} * {BLOCK}",
                  ind + f"    w_{acc} = imin({BLOCK}, d{a} - lo_{acc})",
                  ind + f"    for k_{acc} in range({LANES}):",
                  ind + f"        ln_{acc}[k_{acc}] = {zero}",
                  ind + f"    for b_{acc} in range(w_{acc} // {LANES}):",
                  ind + f"        for k_{acc} in range({LANES}):",
                  ind + f"            i{a} = lo_{acc} + b_{acc} * {LANES} + k_{acc}"]
        lines += [ind + "            " + ln for ln in body]
        lines += [ind + f"            ln_{acc}[k_{acc}] = {t}(ln_{acc}[k_{acc}] + {src})",
                  ind + f"    r_{acc} = {zero}  # the block's last w % {LANES} values, in order",
                  ind + f"    for i{a} in range(lo_{acc} + w_{acc} // {LANES} * {LANES}, "
                        f"lo_{acc} + w_{acc}):"]
        lines += [ind + "        " + ln for ln in body]
        lines += [ind + f"        r_{acc} = {t}(r_{acc} + {src})",
                  ind + f"    n_{acc} = cascade_push(lv_{acc}, n_{acc}, "
                        f"{t}(block_sum(ln_{acc}, {LANES}) + r_{acc}))"]
        lines.append(sp + f"{acc} = cascade_total(lv_{acc}, n_{acc}, {zero})")
        return lines
