"""What every target's plan shares: the optimized graph (or why optimizing failed), a fused
group's numpy rules in order, and per set of input shapes the group's layout -- kernel
domain, output shapes, broadcast flags -- as the `KernelSpec` each target's code
generator lowers."""
import os
from functools import partial

import numpy as np

from ..runtime.registry import REGISTRY
from ..runtime.run_errors import located
from .fusion import REDUCTIONS


class KernelSpec:
    """What one generated kernel needs: the group, per-input broadcast flags, the rank used."""

    def __init__(self, group, flags, rank, in_ranks, axes):
        self.group = group
        self.flags = flags          # per input: tuple of bool (True: index 0 on that dim)
        self.rank = rank
        self.in_ranks = in_ranks
        self.axes = tuple(axes or ())

    def canonical(self):
        """Text that identifies the kernel: ops with types and attrs, no concrete dims."""
        g = self.group
        ids = {id(v): f"in{k}" for k, v in enumerate(g.inputs)}
        lines = [f"rank={self.rank} axes={self.axes} inputs=" + ",".join(
            f"{v.type.dtype.name}/{r}/{''.join('b' if f else 'i' for f in fl)}"
            for v, r, fl in zip(g.inputs, self.in_ranks, self.flags))]
        for n, op in enumerate(g.ops):
            for k, v in enumerate(op.outputs):
                ids[id(v)] = f"v{n}"
            attrs = {k: (v.name if hasattr(v, "is_floating") else v)
                     for k, v in sorted(op.attrs.items())}
            ins = ",".join(ids[id(v)] for v in op.inputs)
            outs = ",".join(f"{v.type.dtype.name}{len(v.type.shape)}" for v in op.outputs)
            # the op's scalar template too: the kernels package fingerprint (cache.py) does
            # not cover the registry, so an edited template must change the key itself
            tmpl = getattr(REGISTRY.get(op.type), "scalar", None)
            lines.append(f"v{n}:{outs}={op.type}({ins}){attrs} {tmpl!r}")
        lines.append("outputs=" + ",".join(ids[id(v)] for v in g.outputs))
        return "\n".join(lines)


class Layout:
    """A group's plan for one set of input shapes: kernel domain, output shapes, element
    count, the kernel spec (and a flat one-axis spec where every input covers the domain),
    or the reason no kernel fits. Targets subclass it to keep their own choices."""

    __slots__ = ("domain", "out_shapes", "spec", "flat_spec", "size", "reason")

    def __init__(self):
        self.domain = self.out_shapes = self.spec = self.flat_spec = None
        self.size = 0
        self.reason = None


def plan_layout(group, shapes, lay=None):
    """Propagate concrete shapes through the group; decide the kernel spec (or a reason)."""
    lay = Layout() if lay is None else lay
    env = {id(v): s for v, s in zip(group.inputs, shapes)}
    domain = None
    try:
        for op in group.ops:
            ins = [env[id(v)] for v in op.inputs]
            if op.type in REDUCTIONS:
                if domain is not None and ins[0] != domain:
                    raise ValueError("reductions over differently shaped values")
                domain = ins[0]
                env[id(op.outputs[0])] = reduced(ins[0], op.attrs["axis"],
                                                  op.attrs.get("keepdims"))
            else:
                env[id(op.outputs[0])] = np.broadcast_shapes(*ins)
        if domain is None:
            domain = np.broadcast_shapes(*[env[id(op.outputs[0])] for op in group.ops])
    except ValueError as e:
        lay.reason = f"shapes {list(shapes)} do not fit one kernel domain ({e})"
        return lay
    axes = group.axes or ()
    if len(domain) != group.rank:
        lay.reason = f"domain rank {len(domain)} differs from the traced rank {group.rank}"
        return lay
    for op in group.ops:
        s = env[id(op.outputs[0])]
        if op.type in REDUCTIONS or id(op.outputs[0]) in getattr(group, "scalar_values", ()):
            continue    # (cuda's folded groups: a 0-d op on 0-d inputs, once per thread)
        if axes and len(op.outputs[0].type.shape) < group.rank:
            # an op on dropped-axes reduction results (cuda's folded groups): the kept axes
            if tuple(s) == reduced(domain, axes, False):
                continue
            lay.reason = (f"{op.type} '{op.name}' has shape {list(s)} at run time, not the "
                          f"kept axes of the kernel domain {list(domain)}")
            return lay
        if len(s) != group.rank or any(
                (a in axes and d not in (1, domain[a])) or (a not in axes and d != domain[a])
                for a, d in enumerate(s)):
            lay.reason = (f"{op.type} '{op.name}' has shape {list(s)} at run time, which "
                          f"broadcasts differently from the kernel domain {list(domain)}")
            return lay
    for v in group.outputs:
        static = v.type.shape
        if not is_reduction_output(group, v) and len(static) == group.rank and \
                any(static[a] != 1 for a in axes) \
                and tuple(env[id(v)]) != tuple(domain):
            lay.reason = (f"output '{v.name}' has shape {list(env[id(v)])} at run time, not "
                          f"the kernel domain {list(domain)}")
            return lay
    lay.domain = tuple(domain)
    lay.out_shapes = [env[id(v)] for v in group.outputs]
    lay.size = int(np.prod(domain, dtype=np.int64))
    flags = []
    for v, s in zip(group.inputs, shapes):
        off = group.rank - len(s)
        flags.append(tuple((d == 1 and domain[off + j] != 1) or v.type.shape[j] == 1
                           for j, d in enumerate(s)))
    ranks = [len(s) for s in shapes]
    lay.spec = KernelSpec(group, tuple(flags), group.rank, ranks, axes)
    if not axes and group.rank >= 2 and all(r == 0 or s == lay.domain
                                            for r, s in zip(ranks, shapes)):
        lay.flat_spec = KernelSpec(
            group, tuple(() if r == 0 else (False,) for r in ranks), 1,
            [0 if r == 0 else 1 for r in ranks], ())
    return lay


def reduced(shape, axes, keep):
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def is_reduction_output(group, v):
    return any(op.type in REDUCTIONS and op.outputs[0] is v for op in group.ops)


def numpy_steps(group):
    """(rule, op, ids of the intermediates last read by this op) per op."""
    last = {}
    for n, op in enumerate(group.ops):
        for v in op.inputs:
            last[id(v)] = n
    keep = {id(v) for v in group.outputs} | {id(v) for v in group.inputs}
    steps = []
    for n, op in enumerate(group.ops):
        impl = REGISTRY[op.type].numpy
        dead = tuple({id(v) for v in op.inputs if last[id(v)] == n and id(v) not in keep})
        steps.append((partial(impl, **op.attrs) if op.attrs else impl, op, dead))
    return steps


def run_numpy(group, steps, arrays):
    """The group's numpy rules (`numpy_steps(group)`) on host arrays; errors located at the
    failing op and its user line."""
    env = {id(v): a for v, a in zip(group.inputs, arrays)}
    for fn, op, dead in steps:
        ins = [env[id(v)] for v in op.inputs]
        try:
            env[id(op.outputs[0])] = fn(*ins)
        except Exception as e:  # noqa: BLE001 - re-raised at the op and its user line
            err = located(op, e, ins)
            if err is None:
                raise
            raise err from e
        for d in dead:      # as the interpreter does: a first call over 10M float32
            del env[d]      # touched 400 MB of new pages (1.4 s) when all were kept
    return [env[id(v)] for v in group.outputs]


def optimized(graph):
    try:
        from ..runtime.passes import optimize
    except ImportError:
        return graph, None
    try:
        return optimize(graph), None
    except Exception as e:  # noqa: BLE001 - run the unoptimized graph, say why in describe()
        if os.environ.get("GRAPHC_VERIFY"):
            raise           # under test, a failing pass is a bug to see, not to hide
        return graph, f"optimize() failed: {type(e).__name__}: {e}"
