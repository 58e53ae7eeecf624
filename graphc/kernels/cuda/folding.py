"""Fewer launches than fuse()'s steps: two CUDA-side folds (the CPU targets keep fuse()'s).

Epilogues: an elementwise group that reads a reduction group's dropped-axes results
(`reduce_mean`'s divide, a bias gradient's `lr * g`) -- besides those, only scalars and
values of the same kept-axes shape -- joins the reduction's kernel, where its ops run per
kept index after the reductions (the kernel's final write). fuse() keeps them apart:
the values are not of the group's rank.

Scalars: a rank-0 group on 0-d inputs only (Adam's `lr * sqrt(1 - b2^t) / (1 - b1^t)`
from the step counter, one per variable) whose results only later groups read joins each
of them: their kernels compute it once per thread, before their loops (codegen's "const"
level) -- a few flops per thread instead of a launch.

Updates: assign / assign_add / assign_sub ops right after the group that computes their
values are written by that group's kernel (`new = old - value` per element, cast to the
variable's dtype, integers wrapping), so the value itself is stored only where something
else reads it. So is a 0-d update by a 0-d value made before the group (the optimizer's
`iterations += 1` after the last variable's update; constant steps between are moved
before the group): one thread writes it. Every read of the old value ran at an earlier
step, and the kernel writes a new array, so those reads keep their contents. As
updates.py, the result is a new array, and the old value is kept while a device check's
failure is unseen (checks.py). Where the kernel cannot take them at run time (no kernel
fits the shapes, a wrong-shaped value, one variable updated twice), the group runs alone
and the updates one by one, as unfolded.
"""
import copy

import numpy as np

from ..fusion import Group, raises_on_integers
from ..planning import reduced
from .records import STATS, Record, kernel_text

UPDATE_KINDS = {"assign_variable": "assign", "assign_add_variable": "add",
                "assign_sub_variable": "subtract"}


def fold(graph, steps):
    """fuse()'s steps with epilogues merged and ("update", Fold) for folded updates."""
    steps = _merge_scalars(graph, _merge_epilogues(graph, list(steps)))
    users = _users(graph, steps)
    made = _made(steps)
    out, k = [], 0
    while k < len(steps):
        kind, g = steps[k]
        run, moved, j = [], [], k + 1
        while kind == "group" and j < len(steps):
            nxt, op = steps[j]
            if nxt == "op" and op.type == "constant" and not op.inputs:
                moved.append(steps[j])      # no inputs, no launch: it may run first
            elif _takes(g, op if nxt == "op" else None, made, k, moved):
                run.append(op)
            else:
                break
            j += 1
        if run and not _constant_only(g) and not any(map(raises_on_integers, g.ops)):
            at = range(k + 1, j)
            read = {id(v) for v in g.outputs if any(s not in at for s in users.get(id(v), ()))}
            out += moved + [("update", Fold(g, run, read))]
            k = j
        else:
            out.append(steps[k])
            k += 1
    return out


def _takes(g, op, made, k, moved):
    """Whether group `g`'s kernel (at step k) can write update `op`: its value is one of
    g's, or a 0-d value made before g runs (one thread writes it)."""
    from .updates import ON_DEVICE
    if op is None or op.type not in UPDATE_KINDS:
        return False
    v = op.inputs[1]
    if v.type.dtype.np.char not in ON_DEVICE:
        return False
    if id(v) in g.values:
        return True
    return tuple(v.type.shape) == () and (
        made.get(id(v), -1) < k or any(v is c.outputs[0] for _, c in moved))


def _made(steps):
    """id(value) -> position of the step making it."""
    return {id(v): s for s, (kind, item) in enumerate(steps)
            for op in (item.ops if kind == "group" else [item]) for v in op.outputs}


def _constant_only(g):
    return all(op.type == "constant" and not op.inputs for op in g.ops)


def _users(graph, steps):
    """id(value) -> positions of the steps reading it (len(steps) for a graph output)."""
    users = {}
    for s, (kind, item) in enumerate(steps):
        for v in item.inputs:
            users.setdefault(id(v), []).append(s)
    for v in graph.outputs:
        users.setdefault(id(v), []).append(len(steps))
    return users


# -- scalars --------------------------------------------------------------------------------

def _merge_scalars(graph, steps):
    """Each scalar group whose results only later groups read, merged into those groups
    (in order: one merged into another scalar group goes on with it). Not into a group
    that runs op by op (lowering refuses it): the scalar would move to the host."""
    users = _users(graph, steps)
    keep = []
    for i, (kind, s) in enumerate(steps):
        at = {u for v in s.outputs for u in users.get(id(v), ())} if kind == "group" else ()
        if not at or not _is_scalar(s) or any(
                u >= len(steps) or steps[u][0] != "group" or
                any(map(raises_on_integers, steps[u][1].ops)) for u in at):
            keep.append(i)
            continue
        for u in at:
            steps[u] = ("group", _with_scalars(s, steps[u][1]))
    return [steps[i] for i in keep]


def _is_scalar(g):
    return (g.rank == 0 and g.axes is None and bool(g.inputs) and
            all(tuple(v.type.shape) == () for v in g.inputs) and
            not any(map(raises_on_integers, g.ops)))


def _with_scalars(s, c):
    """Group `c` computing scalar group `s`'s values itself (0-d: the "const" level)."""
    m = copy.copy(c)
    m.ops = s.ops + c.ops
    m.values = c.values | s.values
    ins = [v for v in c.inputs if id(v) not in s.values]
    m.inputs = ins + [v for v in s.inputs if all(v is not w for w in ins)]
    m.scalar_values = frozenset(getattr(c, "scalar_values", ())) | s.values
    return m


# -- epilogues ------------------------------------------------------------------------------

def _merge_epilogues(graph, steps):
    merged = True
    while merged:
        merged = False
        made = {id(v): s for s, (kind, item) in enumerate(steps)
                for op in (item.ops if kind == "group" else [item]) for v in op.outputs}
        users = _users(graph, steps)
        for j, (kind, e) in enumerate(steps):
            if kind != "group" or e.axes is not None:
                continue
            srcs = {made[id(v)] for v in e.inputs if id(v) in made and
                    steps[made[id(v)]][0] == "group" and steps[made[id(v)]][1].axes}
            if len(srcs) != 1:
                continue
            i = srcs.pop()
            m = _epilogue(steps[i][1], e, users, i, j)
            if m is None:
                continue
            at = _placement(steps, made, users, steps[i][1], e, i, j)
            if at is None:
                continue
            steps[at] = ("group", m)
            del steps[j if at == i else i]
            merged = True
            break
    return steps


def _epilogue(r, e, users, i, j):
    """Reduction group `r` with elementwise group `e` after it, or None when `e` reads
    something the kernel cannot index per kept index."""
    kept = reduced(r.domain, r.axes, False)
    if None in r.domain or tuple(e.domain) != kept:
        return None
    extra = []
    for v in e.inputs:
        shape = tuple(v.type.shape)
        if id(v) in r.values:
            if len(shape) != len(kept):
                return None         # a keepdims result: fuse() would have joined them
        elif any(v is w for w in r.inputs):
            if shape != ():
                return None         # r's ops index it aligned to the right
        elif shape == () or shape == kept:
            extra.append(v)
        else:
            return None
    m = Group(r.id, r.rank, r.domain)
    m.axes, m.ops, m.values = r.axes, r.ops + e.ops, r.values | e.values
    m.inputs = r.inputs + extra
    m.kept_inputs = frozenset(getattr(r, "kept_inputs", ())) | {
        id(v) for v in extra if v.type.shape != ()}
    m.outputs = [v for v in r.outputs if any(s != j for s in users.get(id(v), ()))]
    m.outputs += e.outputs
    return m


def _placement(steps, made, users, r, e, i, j):
    """Where the merged group runs: at `e`'s step when nothing between reads `r`'s results
    (a later kernel can take the updates after it), else at `r`'s when `e`'s other inputs
    are ready by then, else None."""
    if all(not i < s < j for v in r.outputs for s in users.get(id(v), ())):
        return j
    if all(made.get(id(v), -1) < i for v in e.inputs if id(v) not in r.values):
        return i
    return None


# -- updates --------------------------------------------------------------------------------

class Fold:
    """A group and the variable updates its kernel writes (`ops`, in program order);
    `read`: ids of its outputs that other steps or the graph's outputs read."""

    def __init__(self, group, ops, read):
        from .lowering import GroupKernel
        self.full, self.ops = group, ops
        k = self.group = copy.copy(group)
        k.updates = [(op.inputs[1], UPDATE_KINDS[op.type]) for op in ops]
        mine = {id(v) for v, _ in k.updates}
        # 0-d values made before the group: inputs of its kernel (after the group's own)
        k.inputs = list(group.inputs)
        k.inputs += [v for v, _ in k.updates if id(v) not in group.values and
                     all(v is not w for w in k.inputs)]
        k.outputs = [v for v in group.outputs if id(v) not in mine or id(v) in read]
        self.kernel, self._plain = GroupKernel(k), None

    def step(self, plan, index):
        """(run, ins, outs, record) of the plan's "mixed" step: the group's inputs and the
        variables in, the stored outputs out."""
        g = self.group
        ins = tuple(index[id(v)] for v in g.inputs) + tuple(
            index[id(op.inputs[0])] for op in self.ops)
        outs = tuple(index.setdefault(id(v), len(index)) for v in g.outputs)
        names = ", ".join(f"{op.type} '{op.name}'" for op in self.ops)
        unfolded = []      # the last run's reason to run unfolded, if any

        def why():
            return (unfolded[0] if unfolded else "variable updates written by the kernel"
                    ) + "; " + kernel_text(self.kernel)
        rec = Record(f"{g.name} [{', '.join(op.name for op in g.ops)}] + {names}", "kernel",
                     why)

        def run(env, ins, outs):
            n = len(g.inputs)
            values = [env.device(i) for i in ins[:n]]
            variables = [env.host(i) for i in ins[n:]]
            olds = self._olds(plan, values, variables)
            unfolded[:] = [] if olds is not None else [
                "last run: the group, then the updates one by one (unfolded)"]
            if olds is None:
                return self._unfolded(plan, env, values, variables, outs)
            r = self.kernel(values, alloc=env.allocator(outs), olds=olds)
            STATS.add("kernels")
            for o, x in zip(outs, r):
                env.put(o, x)
            for var, new in zip(variables, r[len(outs):]):
                STATS.add("device_ops")
                plan.dev.set_variable(var, new)
        return run, ins, outs, rec

    def _olds(self, plan, values, variables):
        """The variables' device values when the kernel can write the updates, else None."""
        kp = self.kernel.plan(values)
        if kp.kind is None or len({id(v) for v in variables}) < len(variables):
            return None
        olds = []
        for var, (v, _) in zip(variables, self.group.updates):
            shape = kp.value_shape(v) if id(v) in self.group.values else ()
            if tuple(var.shape) != shape or var.dtype.np != v.type.dtype.np:
                return None
            old = plan.dev.variable_on_device(var)
            if not old.is_c_contiguous():
                return None
            olds.append(old)
        return olds

    def _unfolded(self, plan, env, values, variables, outs):
        from ...runtime.run_errors import located
        from .control import update_variable
        from .lowering import GroupKernel
        if self._plain is None:
            self._plain = GroupKernel(self.full)
        slot = {id(v): o for v, o in zip(self.group.outputs, outs)}

        def alloc(k, shape, dtype):
            o = slot.get(id(self.full.outputs[k]))
            return plan.dev.alloc(shape, dtype) if o is None else \
                env.allocator((o,))(0, shape, dtype)
        got = dict(zip(map(id, self.group.inputs), values))     # 0-d update values
        got.update(zip(map(id, self.full.outputs),
                       self._plain(values[:len(self.full.inputs)], alloc=alloc)))
        STATS.add("kernels")
        for v, o in zip(self.group.outputs, outs):
            env.put(o, got[id(v)])
        for op, var in zip(self.ops, variables):
            value = got[id(op.inputs[1])]
            try:
                update_variable(plan, op, var, value)
            except Exception as e:  # noqa: BLE001 - re-raised at the op and its user line
                err = located(op, e, [var, np.broadcast_to(np.zeros((), value.dtype),
                                                           value.shape)])
                if err is None:
                    raise
                raise err from e
