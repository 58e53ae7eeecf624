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
partial to `part[c * nk + k]`, and the last of its blocks to finish reduces the chunks'
partials into `rb_j[k]` (in the order a separate combining kernel would); later passes
read earlier results from `rb_*`. A `final` grid-stride kernel over the domain computes
the outer statements and stores the outputs. Small ones are a single `one_block` kernel:
every reduction into `rb_*` by one block, a barrier, then the outputs.

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


def _params(b, extra_in=()):
    g = b.g
    return ([f"in{k}" for k in range(len(g.inputs))] + list(extra_in) +
            [f"out{k}" for k in range(len(g.outputs))] + b.update_params() +
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
        elif b.level[id(v)] == "outer":
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
    body = ["tid = int64(cuda.threadIdx.x)"] + b.prologue()
    body += [b.shared(op)[1] for op in b.reductions]
    body += b.const_lines()
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
        elif b.level[id(v)] == "outer":
            inner.append(b.stmt(op))
    outer_outs = b.outer_outputs()
    if outer_outs:
        inner.append("if tid == 0:")
        inner += ["    " + ln for v in outer_outs for ln in b.stores(v)]
    full_outs = b.full_outputs()
    if full_outs:
        inner.append(f"for r in range(tid, nr, {threads}):  # the full-size outputs")
        dec = []
        decompose("r", b.A, dec, 1)
        inner += dec + ["    " + ln for ln in b.full_chain(full_outs)]
        inner += ["    " + ln for v in full_outs for ln in b.stores(v)]
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
        params = ([f"in{k}" for k in range(len(g.inputs))] + rbs + ["part"] +
                  [f"d{a}" for a in range(b.R)] + ["nk", "nr", "nchunks", "chunk"])
        body = ["tid = int64(cuda.threadIdx.x)", "last = cuda.shared.array(1, int64)"]
        body += [] if columns else [b.shared(op)[1]]
        body += b.const_lines()
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
        inner = _reduce_lines(b, op, upto, "lo", "hi", columns, "part[c * nk + k]")
        body += ["    " + ln for ln in inner]
        body += _last_block(b, op, j, columns)
        params[params.index("part") + 1:params.index("part") + 1] = [f"rb_{j}", "count"]
        src += kernel_source(f"partials_{j}", params, body,
                             f"{g.name}: partials of {op.type} per (row, chunk); the last "
                             "block to finish combines them into rb_" + str(j))
    src += _final(b)
    return "\n".join(src)


def _last_block(b, op, j, columns):
    """Lines ending partials_j: every block counts itself done in `count` (after a fence:
    its partials are visible), and the last one combines the chunks' partials of every
    kept index into rb_j -- in the order the separate combining kernel used -- and
    resets the count for the next launch (threadFenceReduction in the CUDA samples)."""
    lines = ["cuda.threadfence()", "cuda.syncthreads()",
             "if tid == 0:",
             "    last[0] = 1 if cuda.atomic.add(count, 0, 1) == cuda.gridDim.x - 1 else 0",
             "cuda.syncthreads()",
             "if last[0] == 1:"]
    if columns:     # chunks in order, one thread per kept index
        inner = [f"for k in range(tid, nk, {THREADS}):",
                 f"    acc = {b.identity(op)}",
                 "    for c in range(nchunks):",
                 f"        acc = {b.combine(op, 'acc', 'part[c * nk + k]')}",
                 f"    rb_{j}[k] = acc"]
    else:
        inner = ["for k in range(nk):",
                 f"    acc = {b.identity(op)}",
                 # chunks in order on one thread for sequential ops (nchunks is 1 then)
                 f"    for c in range(tid, nchunks, {THREADS}):",
                 f"        acc = {b.combine(op, 'acc', 'part[c * nk + k]')}"]
        inner += ["    " + ln for ln in b.tree(op, b.shared(op)[0], "acc", 0)]
        inner += ["    if tid == 0:", f"        rb_{j}[k] = acc"]
    inner += ["if tid == 0:", "    count[0] = 0"]
    return lines + ["    " + ln for ln in inner]


def one_block_source(spec, columns):
    """The whole group in one launch of one block, for small inputs: each reduction's
    results into rb_j (a thread per kept index with `columns`, else the block's tree per
    kept index), a barrier, then the outputs over the domain."""
    b = Body(spec)
    g = b.g
    body = ["tid = int64(cuda.threadIdx.x)"]
    body += [] if columns else [b.shared(op)[1] for op in b.reductions]
    body += b.const_lines()
    for j, op in enumerate(b.reductions):
        body.append(f"for k in range(tid, nk, {THREADS}):" if columns else
                    "for k in range(nk):")
        inner = _reduce_lines(b, op, g.ops.index(op), "0", "nr", columns, f"rb_{j}[k]")
        body += ["    " + ln for ln in inner]
        body.append("cuda.syncthreads()  # rb_%d is read by every thread from here" % j)
    params, final = _final_body(b, f"range(tid, n, {THREADS})", consts=False)
    doc = f"{g.name}: {len(b.reductions)} reduction(s) and the outputs, one block"
    return "\n".join(HEADER + kernel_source("one_block", params, body + final, doc))


def _reduce_lines(b, op, upto, lo, hi, columns, target):
    """Lines reducing `op` over reduced elements [lo, hi) of kept index k into `target`:
    one thread per k (`columns`), else the block's threads and a shared-memory tree."""
    acc = acc_name(b, op)
    inner = []
    decompose("k", b.K, inner, 0)
    inner += b.loads("outer")
    _outer(b, upto, inner, 0)
    inner.append(f"# {op.type} over axes {list(b.A)}: {_where(op)}")
    inner += _accumulate(b, op, lo, hi, not columns, 0)
    if columns:
        return inner + [f"{target} = {acc}"]
    inner += b.tree(op, b.shared(op)[0], acc, 0)
    return inner + ["if tid == 0:", f"    {target} = {acc}"]


def one_block_steps(b, nk, nr, columns):
    """Serial steps per thread of `one_block` (loads, tree levels): the cost it is chosen
    by, against two launches or more."""
    T = THREADS
    steps = 0
    for op in b.reductions:
        if b.sequential(op):
            steps += nk * nr
        elif columns:
            steps += -(-nk // T) * nr
        else:
            steps += nk * (-(-nr // T) + T.bit_length())
    n = nk * nr if b.full_outputs() else nk
    return steps + -(-n // T)


def _final(b):
    params, body = _final_body(b, "range(cuda.grid(1), n, cuda.gridsize(1))")
    doc = f"{b.g.name}: outer statements and outputs, grid-stride over the domain"
    return kernel_source("final", params, body, doc)


def _final_body(b, loop, consts=True):
    """`consts`: the const lines (one_block has them before its reductions)."""
    g = b.g
    rbs = [f"rb_{m}" for m in range(len(b.reductions))]
    params = _params(b, extra_in=rbs) + ["nk", "nr", "n"]
    full_outs, outer_outs = b.full_outputs(), b.outer_outputs()
    body = b.prologue()
    body += b.const_lines() if consts else []
    body += [f"for t in {loop}:"]
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
        inner += ["    " + ln for v in outer_outs for ln in b.stores(v)]
    if full_outs:
        inner += b.full_chain(full_outs)
        inner += [ln for v in full_outs for ln in b.stores(v)]
    return params, body + ["    " + ln for ln in inner]


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


