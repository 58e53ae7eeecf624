"""Fusion: group producer->consumer chains of elementwise ops plus reductions into kernels.

A group has one iteration domain (a full-rank shape) and at most one set of reduced axes.
Its values are either *full* (they vary along the reduced axes: recomputed inside each
inner loop that needs them, never stored) or *outer* (reduction results and elementwise
ops on them: one value per outer iteration). Softmax, logsumexp and layernorm come out as
one group each: a few inner passes per row, inputs read once per pass, outputs written once.

The plan is a list of steps in a valid order: ("group", Group) or ("op", Operation).
"""
from ..runtime.graph import Graph
from ..runtime.registry import REGISTRY, ELEMENTWISE
from ..runtime.types import TensorType

SUPPORTED_DTYPES = {"float32", "float64", "int32", "int64", "bool"}
REDUCTIONS = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_all",
              "reduce_any"}


class Group:
    """One fused kernel: ops in program order over a common domain."""

    def __init__(self, gid, rank, domain):
        self.id = gid
        self.rank = rank
        self.domain = tuple(domain)      # static dims, None where unknown
        self.axes = None                 # reduced axes (tuple) once a reduction joins
        self.ops = []
        self.values = set()              # id() of values produced inside
        self.inputs = []                 # external Values read, in first-use order
        self.outputs = []                # Values needed outside the group
        self.anc = set()                 # ids of groups this one depends on

    @property
    def name(self):
        return f"group_{self.id}"

    def has_reduction(self):
        return any(op.type in REDUCTIONS for op in self.ops)


def _dtype_ok(t):
    return isinstance(t, TensorType) and t.dtype.name in SUPPORTED_DTYPES


def _dims_equal(a, b):
    return a == b   # None only matches None: two unknown dims are checked at run time


def _bcast(shapes):
    """Static numpy broadcasting of shapes with None dims (None unless provably known)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if None in dims:
            out.append(known.pop() if len(known) == 1 else None)
        else:
            out.append(known.pop() if known else 1)
    return tuple(out)


def raises_on_integers(op):
    """Integer `pow` (negative exponent), `floordiv` and `mod` (zero divisor) raise, as in
    numpy and TF. A fused kernel cannot report that (numba returns 0, and a raise inside
    prange is not supported), so they keep their numpy rule and its located error."""
    return op.type in ("pow", "floordiv", "mod") and op.outputs[0].type.dtype.is_integer


def is_fusible_elementwise(op):
    """Elementwise with a scalar template, supported dtypes, and shape = broadcast(inputs)."""
    opdef = REGISTRY.get(op.type)
    if opdef is None or opdef.kind != ELEMENTWISE or not opdef.scalar or opdef.effectful:
        return False
    if len(op.outputs) != 1 or not op.inputs or raises_on_integers(op):
        return False
    if not all(_dtype_ok(v.type) for v in op.inputs + op.outputs):
        return False
    return _bcast([v.type.shape for v in op.inputs]) == tuple(op.outputs[0].type.shape)


def is_fusible_reduction(op):
    if op.type not in REDUCTIONS or not _dtype_ok(op.inputs[0].type):
        return False
    axes = tuple(op.attrs.get("axis", ()))
    return bool(axes)


def _aligned(shape, rank):
    return (1,) * (rank - len(shape)) + tuple(shape)


def _level(group, shape):
    """'full', 'outer' or None: where a rank-R value of `shape` sits in `group`'s domain."""
    if len(shape) != group.rank:
        return None
    if group.axes is None:
        return "full" if all(_dims_equal(a, b) for a, b in zip(shape, group.domain)) else None
    for i, (a, b) in enumerate(zip(shape, group.domain)):
        if i in group.axes:
            continue
        if not _dims_equal(a, b):
            return None
    red = [shape[i] for i in group.axes]
    if all(d == 1 for d in red):
        return "outer"
    if all(_dims_equal(shape[i], group.domain[i]) for i in group.axes):
        return "full"
    return None


def _internal_ok(group, op):
    """Values from inside the group must be rank-R (a dropped-axes reduction result is not)."""
    for v in op.inputs:
        if id(v) in group.values and len(v.type.shape) != group.rank:
            return False
    return True


def _accepts(group, op, levels):
    if not _internal_ok(group, op):
        return False
    if op.type in REDUCTIONS:
        src = op.inputs[0]
        if id(src) not in group.values or levels.get(id(src)) != "full":
            return False
        axes = tuple(op.attrs["axis"])
        return group.axes is None or group.axes == axes
    return _level(group, op.outputs[0].type.shape) is not None


def _depends_on(v, gid, anc_of, find, by_id):
    """Does value `v` come after group `gid` runs? Its recorded ancestors, and theirs through
    each group's `anc`: a group's own set grows when ops join it later, while the sets
    recorded for values it produced earlier do not (a value of group T made before T took an
    op that reads group G still runs after G)."""
    seen, stack = set(), [find(a) for a in anc_of.get(id(v), ())]
    while stack:
        g = stack.pop()
        if g == gid:
            return True
        if g in seen:
            continue
        seen.add(g)
        stack.extend(find(a) for a in by_id[g].anc)
    return False


def _no_cycle(group, op, anc_of, find, by_id):
    return not any(id(v) not in group.values and _depends_on(v, group.id, anc_of, find, by_id)
                   for v in op.inputs)


def _mergeable(a, b, anc_of, find, by_id):
    """Can groups a and b become one kernel? Same domain, compatible reductions, no cycle."""
    if a.rank != b.rank or a.domain != b.domain or None in a.domain:
        return False
    if a.axes is not None and b.axes is not None and a.axes != b.axes:
        return False
    for x, y in ((a, b), (b, a)):
        for op in y.ops:
            for v in op.inputs:
                if id(v) in y.values or id(v) in x.values:
                    continue
                if _depends_on(v, x.id, anc_of, find, by_id):
                    return False
    return True


def _merge(into, other, pos):
    into.ops = sorted(into.ops + other.ops, key=lambda op: pos[id(op)])
    into.values |= other.values
    into.anc |= other.anc
    into.anc.discard(into.id)
    if into.axes is None:
        into.axes = other.axes


def fuse(graph: Graph):
    """Partition `graph`'s top-level ops into fused groups and single ops, in a valid order."""
    anc_of = {}          # id(value) -> set of group ids it depends on
    group_of = {}        # id(value) -> Group that produces it
    levels = {}          # id(value) -> 'full' | 'outer' within its group
    groups, owner, alias = [], {}, {}
    pos = {id(op): i for i, op in enumerate(graph.operations)}

    def find(gid):
        while gid in alias:
            gid = alias[gid]
        return gid

    by_id = {}
    effect_anc = set()
    for op in graph.operations:
        target = None
        if is_fusible_elementwise(op) or is_fusible_reduction(op):
            cands = []
            for v in op.inputs:
                g = group_of.get(id(v))
                g = by_id[find(g.id)] if g is not None else None
                if g is not None and g not in cands:
                    cands.append(g)
            cands.sort(key=lambda g: -g.id)
            for g in cands:
                if _accepts(g, op, levels) and _no_cycle(g, op, anc_of, find, by_id):
                    target = g
                    break
            if target is not None:
                for other in cands:
                    if other is not target and _mergeable(target, other, anc_of, find, by_id):
                        _merge(target, other, pos)
                        alias[other.id] = target.id
                        groups.remove(other)
                        for o in other.ops:
                            owner[id(o)] = target
                if not (_accepts(target, op, levels) and _no_cycle(target, op, anc_of, find, by_id)):
                    target = None
            if target is None:
                target = _new_group(len(by_id), op)
                by_id[target.id] = target
                groups.append(target)
            _add(target, op, levels)
            owner[id(op)] = target
        inherited = set()
        for v in op.inputs:
            inherited |= {find(a) for a in anc_of.get(id(v), ())}
        opdef = REGISTRY.get(op.type)
        if opdef is not None and (opdef.effectful or opdef.kind == "control"):
            # effects run in program order: each depends on everything the previous one did
            inherited |= effect_anc
            effect_anc = inherited
        if target is not None:
            target.anc |= inherited - {target.id}
            inherited = inherited | {target.id}
        for v in op.outputs:
            anc_of[id(v)] = inherited
            if target is not None:
                group_of[id(v)] = target
    for g in groups:
        g.id = groups.index(g)
    _finish_groups(graph, groups)
    return _schedule(graph, groups, owner)


def _new_group(gid, op):
    if op.type in REDUCTIONS:
        shape = op.inputs[0].type.shape
        return Group(gid, len(shape), shape)
    shape = op.outputs[0].type.shape
    return Group(gid, len(shape), shape)


def _add(group, op, levels):
    if op.type in REDUCTIONS:
        group.axes = tuple(op.attrs["axis"])
        level = "outer"
    else:
        level = _level(group, op.outputs[0].type.shape)
    group.ops.append(op)
    for v in op.outputs:
        group.values.add(id(v))
        levels[id(v)] = level


def _finish_groups(graph, groups):
    used_outside = {id(v) for v in graph.outputs}
    by_op_group = {}
    for g in groups:
        for op in g.ops:
            by_op_group[id(op)] = g
    for op in graph.operations:
        g = by_op_group.get(id(op))
        for v in op.inputs:
            if g is None or id(v) not in g.values:
                used_outside.add(id(v))
    for g in groups:
        seen = set()
        for op in g.ops:
            for v in op.inputs:
                if id(v) not in g.values and id(v) not in seen:
                    seen.add(id(v))
                    g.inputs.append(v)
        g.outputs = [v for op in g.ops for v in op.outputs if id(v) in used_outside]


def _schedule(graph, groups, owner):
    """Topological order of steps (groups and single ops); effectful ops keep their order."""
    steps, step_of_value, pos = [], {}, {}
    for i, op in enumerate(graph.operations):
        g = owner.get(id(op))
        key = ("group", g) if g is not None else ("op", op)
        sid = id(g) if g is not None else id(op)
        if sid not in pos:
            pos[sid] = len(steps)
            steps.append([key, set(), i])
        for v in op.outputs:
            step_of_value[id(v)] = pos[sid]
    last_effect = None
    for i, op in enumerate(graph.operations):
        g = owner.get(id(op))
        me = pos[id(g) if g is not None else id(op)]
        for v in op.inputs:
            src = step_of_value.get(id(v))
            if src is not None and src != me:
                steps[me][1].add(src)
        opdef = REGISTRY.get(op.type)
        if opdef is not None and (opdef.effectful or opdef.kind == "control"):
            if last_effect is not None and last_effect != me:
                steps[me][1].add(last_effect)
            last_effect = me
    done, order = set(), []
    remaining = list(range(len(steps)))
    while remaining:
        for k, s in enumerate(remaining):
            if steps[s][1] <= done:
                order.append(steps[s][0])
                done.add(s)
                del remaining[k]
                break
        else:  # cannot happen when fusion rejected cycles; keep program order to be safe
            raise AssertionError("fusion produced a dependency cycle")
    return order
