"""Fast-trig kernels for flat elementwise groups: each chunk is checked before it is computed.

The fast variants of `codegen` count out-of-range trig arguments inside the main loop, and
that loop-carried sum made a loop that already spills registers ~50% slower (measured:
`tanh(a*x+b)*exp(-x*x)+0.5*sin(x)` over 10M float32, 54 ms against 36 ms without it). For a
flat group (one axis, no reductions: every elementwise chain on contiguous inputs) the
domain is cut into chunks instead. A short loop computes the chunk's trig arguments and
checks them; the chunk then runs with the fast polynomials (every argument in range, the
usual case) or is left for the redo function, which checks the chunks again and computes
only those that missed, with the whole-range functions:

    for c in RANGE0((d0 + CHUNK - 1) // CHUNK):      # split in the parallel variant
        lo = c * CHUNK; n = imin(CHUNK, d0 - lo)
        <1-d views of the chunk's inputs and outputs>
        for j in range(n): <trig arguments>; miss += fast_trig_miss(argument) != 0
        fast:  if miss == 0:  for j in range(n): <loads, statements with fast trig, stores>
               else:          slow += 1
        redo:  if miss != 0:  slow += 1; for j in range(n): <the same, whole-range trig>
    return slow

The redo is its own function so that the whole-range trig (Payne-Hanek reduction, several
times the fast polynomial's code) is not compiled with the kernel a first call waits for:
it compiles the first time an argument misses (measured on the chain above: the fast
variant compiled in 0.4 s instead of 0.74 s, its vector math in 0.55 s instead of 1.15 s).
The views start every inner index at 0: indexing `in0[lo + j]` instead made LLVM emit
gathers (47 ms instead of 35 ms for the chain above). The chunk's inputs are still in L1
when the main loop reads them again after the check.
"""
from .codegen import TRIG, statement, where

CHUNK = 4096        # elements per chunk: 16 KiB per float32 input, one outer iteration
CHECKED_FLAG = "CHUNK_CHECKED"     # module attribute: the redo covers only missed chunks


def is_chunked_group(spec):
    """A flat elementwise group with trig ops: one axis, no reduced axes."""
    return spec.rank == 1 and not spec.axes and any(op.type in TRIG for op in spec.group.ops)


class ChunkedBody:
    """Lines of a body for a group accepted by `is_chunked_group`: the fast variant
    (`redo=False`) or the redo of the chunks it left (`redo=True`)."""

    def __init__(self, spec, redo=False):
        self.spec, self.g, self.redo = spec, spec.group, redo
        self.names = {}
        for k, v in enumerate(self.g.inputs):
            self.names[id(v)] = f"x{k}"
        for n, op in enumerate(self.g.ops):
            self.names[id(op.outputs[0])] = f"v{n}"
        self.producer = {id(v): op for op in self.g.ops for v in op.outputs}

    def _indexed(self, k):
        return self.spec.in_ranks[k] == 1 and not self.spec.flags[k][0]

    def _statements(self, ops, fast):
        lines = []
        for op in ops:
            args = [self.names[id(v)] for v in op.inputs]
            lines.append(f"{self.names[id(op.outputs[0])]} = {statement(op, args, fast)}"
                         f"  # {op.type} {where(op)}")
        return lines

    def _scan_ops(self):
        """The ops needed to compute every trig op's argument, in program order."""
        need, stack = set(), [v for op in self.g.ops if op.type in TRIG for v in op.inputs]
        while stack:
            v = stack.pop()
            op = self.producer.get(id(v))
            if op is not None and id(v) not in need:
                need.add(id(v))
                stack.extend(op.inputs)
        return [op for op in self.g.ops if id(op.outputs[0]) in need]

    def _loop(self, statements, inputs_used, stores):
        loads = [f"x{k} = a{k}[j]" for k in inputs_used]
        return ["    for j in range(n):"] + ["        " + ln
                                             for ln in loads + statements + stores]

    def lines(self):
        g = self.g
        out = []
        for k in range(len(g.inputs)):
            if not self._indexed(k):
                out.append(f"x{k} = in{k}[{'()' if self.spec.in_ranks[k] == 0 else '0'}]")
        out.append("slow = 0  # chunks with trig arguments beyond the fast range")
        out.append(f"for c in RANGE0((d0 + {CHUNK - 1}) // {CHUNK}):")
        out.append(f"    lo = c * {CHUNK}")
        out.append(f"    n = imin({CHUNK}, d0 - lo)")
        indexed = [k for k in range(len(g.inputs)) if self._indexed(k)]
        out += [f"    a{k} = in{k}[lo:lo + n]" for k in indexed]
        out += [f"    o{k} = out{k}[lo:lo + n]" for k in range(len(g.outputs))]
        scan = self._scan_ops()
        used = {id(v) for op in scan for v in op.inputs}
        used |= {id(v) for op in g.ops if op.type in TRIG for v in op.inputs}
        checks = [f"miss += fast_trig_miss({self.names[id(op.inputs[0])]}) != 0"
                  for op in g.ops if op.type in TRIG]
        out.append("    miss = 0  # trig arguments beyond the fast range (an integer count: "
                   "a float sum does not vectorize without reassociation)")
        out += self._loop(self._statements(scan, True) + checks,
                          [k for k in indexed if id(g.inputs[k]) in used], [])
        stores = [f"o{k}[j] = {self.names[id(v)]}" for k, v in enumerate(g.outputs)]
        if self.redo:
            out.append("    if miss != 0:  # the fast variant left this chunk")
            out.append("        slow += 1")
            out += ["    " + ln for ln in self._loop(self._statements(g.ops, False), indexed,
                                                     stores)]
        else:
            out.append("    if miss == 0:")
            out += ["    " + ln for ln in self._loop(self._statements(g.ops, True), indexed,
                                                     stores)]
            out.append("    else:")
            out.append("        slow += 1  # left for the redo function")
        out.append("return slow")
        return out
