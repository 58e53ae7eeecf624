"""What every generated CUDA kernel shares: launch sizes, index arithmetic, value levels,
input loads and statements from the registry's templates, and compiling a module's source.

A group's domain has axes i0..i{R-1}; reduced axes A, kept axes K (as in `fusion`). A
value is *full* (varies along A: recomputed wherever a pass needs it, never stored) or
*outer* (one per kept index: reduction results and ops on them). Kernels index by flat
counters: `t` over the domain, `k` over the kept axes, `r` over the reduced ones,
decomposed into i0.. by the dims d0.. passed as arguments (C order). Every statement
casts to the op's dtype (`expr.statement`) and is commented with the op and the user's
file:line; inputs of rank 0 arrive as 1-element vectors (`in3[0]`).

Groups folded by `folding` may also hold ops on dropped-axes reduction results (values of
the kept axes only: `i{K}`), read inputs of that shape (`group.kept_inputs`), and write
variable updates (`group.updates`): a value stored as `new_j = old_j (op) value`, or
`old_j` while a device check's failure is unseen (`guard`, checks.py); a 0-d update by a
0-d input is written by one thread. Ops on 0-d inputs alone (a scalar group folding
merged in) are the "const" level: computed once per thread, before any loop.
"""
import contextlib
import linecache
import threading

from .. import cache
from ..expr import int_op, np_name, statement, where
from ..fusion import REDUCTIONS
from .scalar import SIMULATOR

# The simulator runs every thread as a Python thread: small blocks, few of them.
THREADS = 16 if SIMULATOR else 256
MIN_ROW_THREADS = 4 if SIMULATOR else 32    # a warp: short rows get one warp per block
MAX_BLOCKS = 3 if SIMULATOR else None      # None: a multiple of the device's SM count
BLOCKS_PER_SM = 32

HEADER = ["import math",
          "import numpy as np",
          "from numba import cuda",
          "from graphc.kernels.cuda.scalar import *  # noqa: F401,F403", ""]

_MODULES = {}       # key -> namespace of a compiled module, shared by the process
_LOCK = threading.Lock()
# The simulator swaps a fake `cuda` into a kernel's globals while it runs, so two threads
# launching at once break each other ('Thread' object has no attribute 'blockIdx');
# on a device, launches from several threads need no lock.
_SIM_LAUNCH = threading.Lock() if SIMULATOR else contextlib.nullcontext()


def launching():
    """Context for one launch: serialized under the simulator."""
    return _SIM_LAUNCH


_SMS = []


def max_blocks():
    """Blocks worth launching at most (grid-stride loops cover the rest)."""
    if MAX_BLOCKS is not None:
        return MAX_BLOCKS
    if not _SMS:        # asked once per process, not per launch
        from numba import cuda
        _SMS.append(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    return _SMS[0] * BLOCKS_PER_SM


def row_threads(nr):
    """Threads of a row kernel's block: the power of two covering a row, a warp to
    THREADS (a 64-element softmax row keeps 64 threads busy, not 64 of 256)."""
    t = MIN_ROW_THREADS
    while t < nr and t < THREADS:
        t *= 2
    return t


def blocks_for(n, per_block=THREADS):
    return int(max(1, min(-(-n // per_block), max_blocks())))


def load(key, source):
    """The module for `source` (compiled once per process; `key` names it). Kernels are
    `cuda.jit` dispatchers: each compiles on its first launch for the argument types."""
    ns = _MODULES.get(key)
    if ns is not None:
        return ns
    with _LOCK:
        ns = _MODULES.get(key)
        if ns is None:
            filename = f"<graphc-cuda {key[:16]}>"
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            ns = {"__name__": f"graphc_cuda_{key[:16]}"}
            exec(compile(source, filename, "exec"), ns)   # noqa: S102 - graphc's own source
            _MODULES[key] = ns
    return ns


def module_key(kind, canonical):
    return cache.kernel_key(f"cuda {kind} threads={THREADS} sim={SIMULATOR}\n{canonical}")


def decompose(flat, axes, lines, pad):
    """Lines setting i{a} for `axes` (C order) from the flat counter `flat`."""
    sp = "    " * pad
    if not axes:
        return
    if len(axes) == 1:
        lines.append(sp + f"i{axes[0]} = {flat}")
        return
    lines.append(sp + f"q = {flat}")
    for a in reversed(axes[1:]):
        lines.append(sp + f"i{a} = q % d{a}")
        lines.append(sp + f"q = q // d{a}")
    lines.append(sp + f"i{axes[0]} = q")


def product(t, a, b):
    """A float product NVVM cannot contract into an fma with a later add (it does so
    without fastmath): x * y overflowing to inf and then - 3e38 stays inf, as in numpy."""
    fn = "fmul_rn" if t == "float32" else "dmul_rn"
    return f"{t}({fn}({t}({a}), {t}({b})))"


class Body:
    """Levels, loads and statements of one group under one kernel spec
    (`kernels.planning.KernelSpec`: broadcast flags and ranks per input)."""

    def __init__(self, spec, threads=THREADS):
        self.spec, g = spec, spec.group
        self.threads = threads      # per block (a power of two: the trees halve it)
        self.g = g
        self.R = spec.rank
        self.A = tuple(spec.axes)
        self.K = tuple(a for a in range(self.R) if a not in self.A)
        self.in_index = {id(v): k for k, v in enumerate(g.inputs)}
        self.out_index = {id(v): k for k, v in enumerate(g.outputs)}
        self.producer = {id(v): op for op in g.ops for v in op.outputs}
        self.names = {id(op.outputs[0]): f"v{n}" for n, op in enumerate(g.ops)}
        self.level = {}
        for k, v in enumerate(g.inputs):
            axes = self._input_axes(k)
            self.level[id(v)] = ("const" if not axes else
                                 "outer" if not set(axes) & set(self.A) else "full")
        for op in g.ops:
            lv = {self.level[id(i)] for i in op.inputs}
            v = op.outputs[0]
            if op.type in REDUCTIONS:
                self.level[id(v)] = "outer"
            elif "full" in lv:
                self.level[id(v)] = "full"
            elif lv == {"const"} and not v.type.shape:
                self.level[id(v)] = "const"     # scalars only: once per thread, up front
            else:
                self.level[id(v)] = "outer"
        self.reductions = [op for op in g.ops if op.type in REDUCTIONS]
        self.updates = getattr(g, "updates", ())       # (value, "add"|"subtract"|"assign")

    def _axes_of(self, k):
        """Domain axes of input k's dims: the kept axes for a kept input, else numpy's
        alignment to the right."""
        if id(self.g.inputs[k]) in getattr(self.g, "kept_inputs", ()):
            return self.K
        r = self.spec.in_ranks[k]
        return tuple(range(self.R - r, self.R))

    def _input_axes(self, k):
        return [a for a, f in zip(self._axes_of(k), self.spec.flags[k]) if not f]

    # -- loads and statements ---------------------------------------------------------------
    def load(self, k):
        r = self.spec.in_ranks[k]
        if r == 0:
            return f"in{k}[0]"
        idx = ["0" if f else f"i{a}" for a, f in zip(self._axes_of(k), self.spec.flags[k])]
        return f"in{k}[{', '.join(idx)}]"

    def ref(self, v):
        k = self.in_index.get(id(v))
        return f"x{k}" if k is not None else self.names[id(v)]

    def stmt(self, op):
        v = op.outputs[0]
        args = [self.ref(i) for i in op.inputs]
        dt = v.type.dtype
        if op.type in ("multiply", "square") and dt.is_floating:
            expr = product(np_name(dt), args[0], args[-1])
        else:
            expr = statement(op, args)
        return f"{self.names[id(v)]} = {expr}  # {op.type} {where(op)}"

    def loads(self, level):
        return [f"x{k} = {self.load(k)}" for k, v in enumerate(self.g.inputs)
                if self.level[id(v)] == level]

    def const_lines(self):
        """Lines before any loop: loads of inputs broadcast along every dim, then the ops
        on those alone (0-d: a scalar group folding.py merged, e.g. Adam's rate)."""
        lines = [f"{ln}  # read once: broadcast along every dim" for ln in self.loads("const")]
        return lines + [self.stmt(op) for op in self.g.ops if self.is_level(op, "const")]

    def is_level(self, op, level):
        return self.level[id(op.outputs[0])] == level

    def full_chain(self, sinks):
        """Loads and statements computing the full-level values `sinks` need, in order."""
        need, stack = set(), list(sinks)
        while stack:
            v = stack.pop()
            if id(v) in need or self.level.get(id(v)) != "full":
                continue
            need.add(id(v))
            op = self.producer.get(id(v))
            if op is not None:
                stack.extend(op.inputs)
        lines = [f"x{self.in_index[id(v)]} = {self.load(self.in_index[id(v)])}"
                 for v in self.g.inputs if id(v) in need]
        lines += [self.stmt(op) for op in self.g.ops if id(op.outputs[0]) in need]
        return lines

    # -- outputs ----------------------------------------------------------------------------
    def is_full_output(self, v):
        op = self.producer[id(v)]
        if op.type in REDUCTIONS or len(v.type.shape) != self.R:
            return False
        return any(v.type.shape[a] != 1 for a in self.A) or self.level[id(v)] == "full"

    def sinks(self):
        """Values the kernel writes: outputs, then update values not among them."""
        vs = [v for v in self.g.outputs if id(v) in self.producer]
        return vs + [v for v, _ in self.updates
                     if id(v) in self.producer and all(v is not w for w in vs)]

    def full_outputs(self):
        return [v for v in self.sinks() if self.is_full_output(v)]

    def outer_outputs(self):
        return [v for v in self.sinks() if not self.is_full_output(v)]

    def _index(self, v):
        if self.is_full_output(v):
            idx = [f"i{a}" for a in range(self.R)]
        else:       # dropped reduced axes: a value of the kept axes only
            keep = len(v.type.shape) == self.R
            idx = [("0" if a in self.A else f"i{a}") for a in range(self.R)
                   if keep or a not in self.A]
        return ", ".join(idx) if idx else "0"

    def stores(self, v):
        """Lines writing `v`: its output, and each variable update of it (old value while
        `keep`: a device check failed)."""
        idx, name = self._index(v), self.names[id(v)]
        k = self.out_index.get(id(v))
        lines = [] if k is None else [f"out{k}[{idx}] = {name}"]
        return lines + [self._update(j, idx, name) for j, (u, _) in enumerate(self.updates)
                        if u is v]

    def _update(self, j, idx, value):
        v, kind = self.updates[j]
        t = np_name(v.type.dtype)
        new = value if kind == "assign" else (
            int_op(kind, f"old{j}[{idx}]", value, t) if v.type.dtype.is_integer
            else f"old{j}[{idx}] {'+' if kind == 'add' else '-'} {value}")
        return f"new{j}[{idx}] = old{j}[{idx}] if keep else {t}({new})  # {kind} into a variable"

    def update_params(self):
        """Kernel parameters after the outputs: each update's old and new value, the
        guard."""
        ps = [p for j in range(len(self.updates)) for p in (f"old{j}", f"new{j}")]
        return ps + ["guard"] if ps else []

    def prologue(self):
        """The guard's read; then 0-d updates by a value the kernel reads as an input
        (`iterations += 1`), written by the grid's first thread."""
        if not self.updates:
            return []
        lines = ["keep = guard[0] != 0  # a device check failed: variables keep their values"]
        ones = [self._update(j, "0", self.load(self.in_index[id(v)]))
                for j, (v, _) in enumerate(self.updates) if id(v) in self.in_index]
        if ones:
            lines += ["if cuda.grid(1) == 0:  # 0-d updates: one thread"]
            lines += ["    " + ln for ln in ones]
        return lines

    # -- reductions -------------------------------------------------------------------------
    def acc_type(self, op):
        return np_name(op.outputs[0].type.dtype)

    def combine(self, op, a, b):
        """`a` and `b` combined by reduction `op` in its dtype (NaN-propagating max/min,
        wrapping integer sums and products)."""
        dt = op.outputs[0].type.dtype
        t = np_name(dt)
        kind = op.type
        if kind in ("reduce_sum", "reduce_prod"):
            if dt.is_floating:
                return f"{t}({a} + {b})" if kind == "reduce_sum" else product(t, a, b)
            fn = "wadd" if kind == "reduce_sum" else "wmul"
            return f"{t}({fn}({t}({a}), {t}({b})))"
        if kind in ("reduce_max", "reduce_min"):
            return f"{t}({'max' if kind == 'reduce_max' else 'min'}({a}, {b}))"
        return f"({a} and {b})" if kind == "reduce_all" else f"({a} or {b})"

    def sequential(self, op):
        """Float products run in numpy's order on one thread: regrouped, a product that
        overflows in one part and underflows in another gives inf * 0 = NaN."""
        return op.type == "reduce_prod" and op.outputs[0].type.dtype.is_floating

    def tree(self, op, sh, acc, pad):
        """Block-wide tree in shared memory `sh` (a slot per thread); every thread gets the
        result in `acc`. All threads of the block must reach it."""
        sp = "    " * pad
        return [sp + f"{sh}[tid] = {acc}",
                sp + "cuda.syncthreads()",
                sp + f"s = {self.threads // 2}",
                sp + "while s > 0:",
                sp + "    if tid < s:",
                sp + f"        {sh}[tid] = {self.combine(op, f'{sh}[tid]', f'{sh}[tid + s]')}",
                sp + "    cuda.syncthreads()",
                sp + "    s //= 2",
                sp + f"{acc} = {sh}[0]",
                sp + f"cuda.syncthreads()  # {sh} is rewritten next"]

    def shared(self, op):
        name = f"sh_{self.names[id(op.outputs[0])]}"
        return name, f"{name} = cuda.shared.array({self.threads}, {self.acc_type(op)})"

    def identity(self, op):
        from ..expr import identity
        return f"{self.acc_type(op)}({identity(op.type, op.outputs[0].type.dtype)})"


def kernel_source(name, params, body, doc):
    lines = [f"def {name}({', '.join(params)}):", f'    """{doc}"""']
    lines += ["    " + b for b in body]
    lines.append(f"{name} = cuda.jit({name})")
    return lines + [""]
