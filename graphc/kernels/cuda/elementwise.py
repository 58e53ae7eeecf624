"""Elementwise groups as grid-stride kernels: thread t of the grid takes domain elements
t, t + gridsize, ...; inputs broadcast by index 0 on their broadcast dims (the spec's
flags), inputs broadcast along every dim are read once before the loop, with the 0-d ops
on them alone (codegen's "const" level). A group whose
inputs all have the domain's shape runs on flat 1-d views (`flat_spec`: no index
arithmetic)."""
from .codegen import HEADER, Body, decompose, kernel_source

KERNEL = "elementwise"


def source(spec):
    b = Body(spec)
    g = b.g
    params = ([f"in{k}" for k in range(len(g.inputs))] +
              [f"out{k}" for k in range(len(g.outputs))] + b.update_params() +
              [f"d{a}" for a in range(b.R)] + ["n"])
    body = b.prologue()
    body += b.const_lines()
    body += ["for t in range(cuda.grid(1), n, cuda.gridsize(1)):"]
    inner = []
    decompose("t", tuple(range(b.R)), inner, 0)
    inner += [ln for ln in b.loads("outer") + b.loads("full")]
    inner += [b.stmt(op) for op in g.ops if not b.is_level(op, "const")]
    inner += [ln for v in b.sinks() for ln in b.stores(v)]
    body += ["    " + ln for ln in inner]
    doc = f"{g.name}: {len(g.ops)} ops over a rank-{b.R} domain, grid-stride"
    return "\n".join(HEADER + kernel_source(KERNEL, params, body, doc))
