"""Reduction groups (`group.axes` set), in two layouts.

Row kernel (the reduced axes are the innermost ones, and there are rows): one block per
kept index `k` (grid-stride over rows). For each reduction in program order the block's
threads stride over the row's reduced elements `r`, recomputing the full-level values the
reduction reads (softmax's `exp(x - max)`), combine their partials in a shared-memory tree,
and every thread gets the result; outer statements follow; a last pass over the row
computes and stores the full-level outputs. Softmax, logsumexp and layernorm are one
launch each.

Two-pass kernels (column and full reductions, and very long rows): per reduction `j`,
`partials_j` has one block per (kept index, chunk of the reduced elements) writing a tree's
partial to `part[c * nk + k]`, and `combine_j` has one block per kept index reducing the
chunks' partials into `rb_j[k]`; later passes read earlier results from `rb_*`. A `final`
grid-stride kernel over the domain computes the outer statements and stores the outputs.

Float sums differ from numpy's only by rounding (tree order). Float products run
sequentially in numpy's order on one thread (`Body.sequential`), max/min propagate NaN.
"""
from .codegen import HEADER, THREADS, Body, decompose, kernel_source

ROW = "row"
TWO_PASS = "two_pass"


def is_row(spec):
    """The reduced axes are the innermost ones and some axes are kept."""
    R, A = spec.rank, tuple(spec.axes)
    return bool(A) and len(A) < R and A == tuple(range(R - len(A), R))


def _params(b, extra_in=(), extra_out=()):
    g = b.g
    return ([f"in{k}" for k in range(len(g.inputs))] + list(extra_in) +
            [f"out{k}" for k in range(len(g.outputs))] + list(extra_out) +
            [f"d{a}" for a in range(b.R)])


def _outer(b, upto, lines, pad):
    """Outer statements of the ops before index `upto`, reduction results read from
    `rb_*[k]` (combined by an earlier kernel)."""
    sp = "    " * pad
    for op in b.g.ops[:upto]:
        v = op.outputs[0]
        if op in b.reductions:
            j = b.reductions.index(op)
            lines.append(sp + f"{b.names[id(v)]} = rb_{j}[k]  # {op.type}, combined earlier")
        elif b.level[id(v)] != "full":
            lines.append(sp + b.stmt(op))


def acc_name(b, op):
    return f"acc_{b.names[id(op.outputs[0])]}"


def _accumulate(b, op, lo, hi, block, pad):
    """Lines leaving this thread's partial of reduction `op` over r in [lo, hi) in its
    accumulator: `block`: the block's threads striding (thread 0 alone, in order, for
    sequential ops); else this thread alone, in order."""
    sp = "    " * pad
    acc = acc_name(b, op)
    if not block:
        rng = f"range({lo}, {hi})"
    elif b.sequential(op):
        rng = f"range({lo} if tid == 0 else {hi}, {hi})"
    else:
        rng = f"range({lo} + tid, {hi}, {b.threads})"
    lines = [sp + f"{acc} = {b.identity(op)}",
             sp + f"for r in {rng}:"]
    inner = []
    decompose("r", b.A, inner, pad + 1)
    chain = b.full_chain([op.inputs[0]])
    src = b.ref(op.inputs[0])
    lines += inner + [sp + "    " + ln for ln in chain]
    lines.append(sp + f"    {acc} = {b.combine(op, acc, f'{b.acc_type(op)}({src})')}")
    return lines


def row_source(spec, threads):
    b = Body(spec, threads)
    g = b.g
    params = _params(b) + ["nk", "nr"]
    body = ["tid = int64(cuda.threadIdx.x)"]
    body += [b.shared(op)[1] for op in b.reductions]
    body += [f"{ln}  # read once: broadcast along every dim" for ln in b.loads("const")]
    body += ["for k in range(int64(cuda.blockIdx.x), nk, int64(cuda.gridDim.x)):"]
    inner = []
    decompose("k", b.K, inner, 0)
    inner += b.loads("outer")
    for op in g.ops:
        v = op.outputs[0]
        if op in b.reductions:
            inner.append(f"# {op.type} over axes {list(b.A)}: {_where(op)}")
            inner += _accumulate(b, op, "0", "nr", True, 0)
            inner += b.tree(op, b.shared(op)[0], acc_name(b, op), 0)
            inner.append(f"{b.names[id(v)]} = {acc_name(b, op)}")
        elif b.level[id(v)] != "full":
            inner.append(b.stmt(op))
    outer_outs = b.outer_outputs()
    if outer_outs:
        inner.append("if tid == 0:")
        inner += ["    " + b.store(v) for v in outer_outs]
    full_outs = b.full_outputs()
    if full_outs:
        inner.append(f"for r in range(tid, nr, {threads}):  # the full-size outputs")
        dec = []
        decompose("r", b.A, dec, 1)
        inner += dec + ["    " + ln for ln in b.full_chain(full_outs)]
        inner += ["    " + b.store(v) for v in full_outs]
    body += ["    " + ln for ln in inner]
    doc = (f"{g.name}: {len(b.reductions)} reduction(s) over axes {list(b.A)}, one block "
           f"of {threads} threads per row")
    return "\n".join(HEADER + kernel_source("row", params, body, doc))


def _where(op):
    from ..expr import where
    return where(op)


def two_pass_source(spec, columns):
    """`columns`: one thread (not one block) per (kept index, chunk), each summing its
    chunk in order -- consecutive threads take consecutive kept indices, so with the
    kept axes innermost (a column reduction) their loads are coalesced; used when there
    are at least a block's worth of kept indices."""
    b = Body(spec)
    g = b.g
    src = list(HEADER)
    for j, op in enumerate(b.reductions):
        upto = g.ops.index(op)
        rbs = [f"rb_{m}" for m in range(j)]
        acc = acc_name(b, op)
        params = ([f"in{k}" for k in range(len(g.inputs))] + rbs + ["part"] +
                  [f"d{a}" for a in range(b.R)] + ["nk", "nr", "nchunks", "chunk"])
        body = [] if columns else ["tid = int64(cuda.threadIdx.x)", b.shared(op)[1]]
        body += [f"{ln}  # read once: broadcast along every dim" for ln in b.loads("const")]
        if columns:
            body += ["for task in range(cuda.grid(1), nk * nchunks, cuda.gridsize(1)):",
                     "    c = task // nk",
                     "    k = task - c * nk"]
        else:
            body += ["for task in range(int64(cuda.blockIdx.x), nk * nchunks, "
                     "int64(cuda.gridDim.x)):",
                     "    k = task // nchunks",
                     "    c = task - k * nchunks"]
        body += ["    lo = c * chunk", "    hi = min(lo + chunk, nr)"]
        inner = []
        decompose("k", b.K, inner, 0)
        inner += b.loads("outer")
        _outer(b, upto, inner, 0)
        inner.append(f"# {op.type} over axes {list(b.A)}: {_where(op)}")
        inner += _accumulate(b, op, "lo", "hi", not columns, 0)
        if columns:
            inner.append(f"part[c * nk + k] = {acc}")
        else:
            inner += b.tree(op, b.shared(op)[0], acc, 0)
            inner += ["if tid == 0:", f"    part[c * nk + k] = {acc}"]
        body += ["    " + ln for ln in inner]
        src += kernel_source(f"partials_{j}", params, body,
                             f"{g.name}: partials of {op.type} per (row, chunk)")
        if columns:     # chunks in order, one thread per kept index
            body = ["for k in range(cuda.grid(1), nk, cuda.gridsize(1)):",
                    f"    acc = {b.identity(op)}",
                    "    for c in range(nchunks):",
                    f"        acc = {b.combine(op, 'acc', 'part[c * nk + k]')}",
                    f"    rb_{j}[k] = acc"]
        else:
            body = ["tid = int64(cuda.threadIdx.x)", b.shared(op)[1],
                    "for k in range(int64(cuda.blockIdx.x), nk, int64(cuda.gridDim.x)):",
                    f"    acc = {b.identity(op)}",
                    # chunks in order on one thread for sequential ops (nchunks is 1 then)
                    f"    for c in range(tid, nchunks, {THREADS}):",
                    f"        acc = {b.combine(op, 'acc', 'part[c * nk + k]')}"]
            body += ["    " + ln for ln in b.tree(op, b.shared(op)[0], "acc", 0)]
            body += ["    if tid == 0:", f"        rb_{j}[k] = acc"]
        src += kernel_source(f"combine_{j}", ["part", f"rb_{j}", "nk", "nchunks"], body,
                             f"{g.name}: {op.type} of the chunks' partials")
    src += _final(b)
    return "\n".join(src)


def _final(b):
    g = b.g
    rbs = [f"rb_{m}" for m in range(len(b.reductions))]
    params = _params(b, extra_in=rbs) + ["nk", "nr", "n"]
    full_outs, outer_outs = b.full_outputs(), b.outer_outputs()
    body = [f"{ln}  # read once: broadcast along every dim" for ln in b.loads("const")]
    body += ["for t in range(cuda.grid(1), n, cuda.gridsize(1)):"]
    if full_outs:
        inner = ["k = t // nr", "r = t - k * nr"]
    else:
        inner = ["k = t", "r = 0 * t  # outer outputs only: n is nk"]
    decompose("k", b.K, inner, 0)
    decompose("r", b.A, inner, 0)
    inner += b.loads("outer")
    _outer(b, len(g.ops), inner, 0)
    if outer_outs:
        inner.append("if r == 0:")
        inner += ["    " + b.store(v) for v in outer_outs]
    if full_outs:
        inner += b.full_chain(full_outs)
        inner += [b.store(v) for v in full_outs]
    body += ["    " + ln for ln in inner]
    doc = f"{g.name}: outer statements and outputs, grid-stride over the domain"
    return kernel_source("final", params, body, doc)


def chunks(nr, nk, sequential, target_blocks, columns):
    """(nchunks, chunk): enough chunks to give `target_blocks` blocks work (`columns`: a
    thread per chunk and kept index; else a block), at least THREADS elements per block's
    chunk; one chunk when a reduction is sequential (float products)."""
    if sequential:
        return 1, nr
    if columns:
        want = max(1, min(nr, -(-target_blocks * THREADS // nk)))
    else:
        want = max(1, min(-(-nr // THREADS), max(1, target_blocks // max(nk, 1))))
    size = -(-nr // want)
    return -(-nr // size), size


