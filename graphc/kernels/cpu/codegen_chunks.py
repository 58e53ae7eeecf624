"""Fast-trig kernels for flat elementwise groups: one flat loop, chunks redone if they missed.

For a flat group (one axis, no reductions: every elementwise chain on contiguous inputs)
the fast variant is one loop over the call's elements (a parallel block's, or all of them)
with the fast polynomials, that also ORs together "this trig argument is beyond the fast
range" into a bool. Nearly always nothing missed and the call is done. Otherwise the redo
function runs: it cuts the domain into chunks, checks each chunk's trig arguments again and
recomputes (rewrites) only the chunks that missed, with the whole-range functions:

    fast:  c_lo, c_hi = BOUNDS0(chunks)                # split in the parallel variant
           <1-d views of elements [c_lo * CHUNK, c_hi * CHUNK) of inputs and outputs>
           for j in range(n): <loads, statements with fast trig>
                              miss |= fast_trig_miss(argument) != 0; <stores>
           return 1 if miss else 0
    redo:  for c in RANGE0((d0 + CHUNK - 1) // CHUNK):
               lo = c * CHUNK; n = imin(CHUNK, d0 - lo); <1-d views of the chunk>
               for j in range(n): <trig arguments>; miss += fast_trig_miss(argument) != 0
               if miss != 0:  slow += 1; for j in range(n): <the same, whole-range trig>
           return slow                                 # chunks redone (Kernel.slow_chunks)

A chunk the fast loop got wrong is rewritten whole by the redo, which reads the inputs
again: outputs never share memory with inputs (the output pool hands out only arrays no one
else refers to). Every element's value is the one the chunk scheme computed before.

The check is a bool OR: the fast loop used to count misses in an int64 sum inside the loop,
which made it ~50% slower (`tanh(a*x+b)*exp(-x*x)+0.5*sin(x)`, 10M float32: 54 ms against
36 ms), so the fast variant checked each chunk in a loop of its own before computing it.
That chunked form cost ~0.3 ns/element over a hand-written loop (1M float32, one thread,
AVX-512: 1.36 against 1.05 ns; AVX2 code: ~2.3-2.9 against ~2.1): the chunk loop nest made
LLVM rematerialize the math's constants inside the inner loop, and the check loop's burst of
loads stalled on memory at large sizes (nothing overlapped it). The bool OR costs nothing
measurable (`benchmarks/chain_kernel_bench.py`).

The redo is its own function so that the whole-range trig (Payne-Hanek reduction, several
times the fast polynomial's code) is not compiled with the kernel a first call waits for:
it compiles the first time an argument misses (measured on the chain above: the fast
variant compiled in 0.4 s instead of 0.74 s, its vector math in 0.55 s instead of 1.15 s).
The views start every inner index at 0: indexing `in0[lo + j]` instead made LLVM emit
gathers (47 ms instead of 35 ms for the chain above; numba's negative-index wraparound is
not provably dead for an index that does not start at 0).
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
        return self._redo_lines() if self.redo else self._fast_lines()

    def _scalar_reads(self):
        """Lines reading each input that is not indexed per element (0-d, or broadcast
        from one element) once, as `x<k>`."""
        return [f"x{k} = in{k}[{'()' if self.spec.in_ranks[k] == 0 else '0'}]"
                for k in range(len(self.g.inputs)) if not self._indexed(k)]

    def _views(self):
        """(indexed inputs, lines viewing them and the outputs over elements [lo, lo + n))."""
        indexed = [k for k in range(len(self.g.inputs)) if self._indexed(k)]
        return indexed, ([f"a{k} = in{k}[lo:lo + n]" for k in indexed] +
                         [f"o{k} = out{k}[lo:lo + n]" for k in range(len(self.g.outputs))])

    def _fast_lines(self):
        """One flat loop over this call's elements, checking the trig arguments as it goes."""
        g = self.g
        out = self._scalar_reads()
        out.append(f"c_lo, c_hi = BOUNDS0((d0 + {CHUNK - 1}) // {CHUNK})  # this call's chunks")
        out.append(f"lo = imin(c_lo * {CHUNK}, d0)")
        out.append(f"n = imax(imin(c_hi * {CHUNK}, d0) - lo, 0)")
        indexed, views = self._views()
        out += views
        out.append("miss = False  # a trig argument beyond the fast range (a bool: an OR "
                   "costs nothing in the loop, an int64 count did)")
        checks = [f"miss |= fast_trig_miss({self.names[id(op.inputs[0])]}) != 0"
                  for op in g.ops if op.type in TRIG]
        stores = [f"o{k}[j] = {self.names[id(v)]}" for k, v in enumerate(g.outputs)]
        body = self._loop(self._statements(g.ops, True) + checks, indexed, stores)
        out += [ln[4:] for ln in body]
        out.append("return 1 if miss else 0  # then the redo function rewrites the chunks "
                   "that missed")
        return out

    def _redo_lines(self):
        g = self.g
        out = self._scalar_reads()
        out.append("slow = 0  # chunks with trig arguments beyond the fast range")
        out.append(f"for c in RANGE0((d0 + {CHUNK - 1}) // {CHUNK}):")
        out.append(f"    lo = c * {CHUNK}")
        out.append(f"    n = imin({CHUNK}, d0 - lo)")
        indexed, views = self._views()
        out += ["    " + ln for ln in views]
        scan = self._scan_ops()
        used = {id(v) for op in scan for v in op.inputs}
        used |= {id(v) for op in g.ops if op.type in TRIG for v in op.inputs}
        checks = [f"miss += fast_trig_miss({self.names[id(op.inputs[0])]}) != 0"
                  for op in g.ops if op.type in TRIG]
        out.append("    miss = 0  # trig arguments beyond the fast range")
        out += self._loop(self._statements(scan, True) + checks,
                          [k for k in indexed if id(g.inputs[k]) in used], [])
        stores = [f"o{k}[j] = {self.names[id(v)]}" for k, v in enumerate(g.outputs)]
        out.append("    if miss != 0:  # the fast variant got this chunk wrong")
        out.append("        slow += 1")
        out += ["    " + ln for ln in self._loop(self._statements(g.ops, False), indexed,
                                                 stores)]
        out.append("return slow")
        return out
