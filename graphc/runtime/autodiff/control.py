"""Gradient rules that need the tracer: variable reads, cond, while and TensorArray lists.

Inside a compiled function a tape records a `cond`/`while` node as one op. Its rule builds
the backward pass from the node's subgraphs by *replaying* a branch, or one loop iteration,
under an inner tape: pure ops are recomputed, while the results of effectful ops (variable
reads, random draws, TensorArray reads) are taken from the forward pass, so no effect runs
twice. A differentiated while loop gets lists added to its body (`tensor_list_push_back`)
holding each iteration's loop variables and effect results; the backward loop runs from the
last iteration to the first, reading them back (`tensor_list_read`).
"""
import numpy as np

from ... import dtypes as _dt
from . import tape as autodiff
from .. import context
from .tape import GradientTape, key, zeros_for
from .ops import list_op, is_list_value  # also registers the gradient primitives
from ..dispatch import bind, constant, resolve
from ..graph import Graph, Operation, Value
from ..registry import REGISTRY, defvjp
from ..tensor import Tensor
from ..types import ListType, TensorType

# the gradient of a read is the variable's gradient (backward() accumulates it by variable)
defvjp("read_variable", lambda gs, outs, ins: [gs[0]])

# What a differentiated node saved for its backward pass is kept on its first subgraph
# (`_grad_saved`); backward loops carry `_grad_backward` on their body. Graph copies made
# by the optimizer keep both (they copy the graph's attributes).


# -- recording cond/while nodes ---------------------------------------------------------

def record_control(g, op, outs, inputs=None):
    """Hook called by control_flow when it adds a cond/while node while a tape records.

    The node's inputs are recorded as the objects user code holds (the tape knows those):
    a variable for its resource, the outer tensor for a captured one."""
    if inputs is None:
        watched = {}
        for tape in context.recording_tapes():
            for var in tape._watched_variables:
                v = _value_of_variable(g, var)
                if v is not None:
                    watched[id(v)] = var
        inputs = [watched[id(v)] if id(v) in watched else _original(g, v) for v in op.inputs]
    autodiff.record(REGISTRY[op.type], inputs, outs, dict(op.attrs, _op=op, _graph=g))


def _original(g, v):
    """The tensor a graph Value stands for, following captures out to where it was made."""
    while True:
        source = next((s for c, s in g.captures if c is v), None)
        if source is None:
            return Tensor._symbolic(v, g)
        if not isinstance(source, Value):
            return source            # a concrete tensor (or variable) fed from Python
        g, v = g.parent, source


def _value_of_variable(g, var):
    """The Value standing for `var` in graph `g`, if it is already there (never captures)."""
    if g.parent is None:
        v = getattr(g, "resource_args", {}).get(id(var))
        return v if v is not None else g._capture_index.get(id(var))
    outer = _value_of_variable(g.parent, var)
    return None if outer is None else g._capture_index.get(id(outer))


def _wants_grad(x):
    """Float tensors, float lists and variables get gradients (not ints, nor the raw
    resource of an unwatched variable)."""
    if type(x) is Tensor and x.type.kind not in ("tensor", "list"):
        return False
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.is_floating


# -- replaying a subgraph under an inner tape ------------------------------------------

class _GhostValue(Value):
    """Stands for a list value in a replay; it is only ever a key for gradients."""

    __slots__ = ()


def _ghost(value):
    return Tensor._symbolic(_GhostValue(f"{value.name}_replayed", value.type),
                            context.current_graph())


def _replay(graph, env, saved, sources):
    """Re-run `graph`'s ops on `env` (Value id -> tensor/variable) in the current graph,
    recording on a fresh tape that watches `sources`. Returns (outputs, tape)."""
    tape = GradientTape(watch_accessed_variables=False)
    with tape:
        for s in sources:
            if is_list_value(s):       # a TensorArray list: watched by key
                tape._connected.add(key(s))
                tape._keep.append(s)
            else:
                tape.watch(s)
        for op in graph.operations:
            opdef = REGISTRY[op.type]
            ins = [env[id(v)] for v in op.inputs]
            if opdef.effectful:
                outs = [saved[id(o)] if id(o) in saved else _ghost(o) for o in op.outputs]
                if outs and opdef.vjp is not None and not opdef.nondiff:
                    autodiff.record(opdef, ins, outs, op.attrs)
            elif op.type in ("cond", "while"):
                outs = _rebind_control(op, ins)
            else:
                r = bind(op.type, *ins, **op.attrs)
                outs = [] if r is None else [r] if type(r) is Tensor else list(r)
            for o, t in zip(op.outputs, outs):
                env[id(o)] = t
    # what a rule called for this tape (a custom gradient's grad_fn) finds for the forward
    # values it closes over: their replayed values (through the copies _copy_graph made)
    tape._replayed = dict(env)
    for orig, v in getattr(graph, "_origins", {}).items():
        if id(v) in env:
            tape._replayed[orig] = env[id(v)]
    return [env[id(v)] for v in graph.outputs], tape


def _rebind_control(op, ins):
    """A nested cond/while inside a replayed graph: a fresh copy of it, recorded too."""
    if any(type(x) is Tensor and isinstance(x._sym, _GhostValue) for x in ins):
        raise NotImplementedError(
            f"gradient of a TensorArray passed into a nested {op.type} inside a "
            "differentiated loop or branch is not supported; stack() it into a tensor first")
    g = context.current_graph()
    attrs = {k: _copy_graph(a, g) if isinstance(a, Graph) else a for k, a in op.attrs.items()}
    values = [resolve(g, x) for x in ins]
    new = g.add_op(op.type, values, attrs, [o.type for o in op.outputs], op.loc)
    outs = [Tensor._symbolic(v, g) for v in new.outputs]
    record_control(g, new, outs, list(ins))
    return outs


def _copy_graph(src, parent, outer=None):
    """A deep copy of a subgraph, without its result-less effects (prints, assigns), which
    must not run again when the copy is recomputed for a backward pass."""
    outer = outer or {}
    g = Graph(src.name, parent)
    vmap = {}
    for v in src.inputs:
        vmap[id(v)] = Value(v.name, v.type)
        g.inputs.append(vmap[id(v)])
    for v, s in src.captures:
        vmap[id(v)] = Value(v.name, v.type)
        source = outer.get(id(s), s)
        g.captures.append((vmap[id(v)], source))
        g._capture_index[id(source)] = vmap[id(v)]
    g._names = dict(src._names)
    for op in src.operations:
        if REGISTRY[op.type].effectful and not op.outputs:
            continue
        attrs = {k: _copy_graph(a, g, vmap) if isinstance(a, Graph) else a
                 for k, a in op.attrs.items()}
        outs = [Value(o.name, o.type) for o in op.outputs]
        vmap.update((id(o), n) for o, n in zip(op.outputs, outs))
        g.operations.append(Operation(op.type, op.name, [vmap[id(v)] for v in op.inputs],
                                      attrs, outs, op.loc))
    g.outputs = [vmap[id(v)] for v in src.outputs]
    # id of each Value of `src` (and of what src was copied from) -> its copy here
    g._origins = {orig: vmap[id(v)] for orig, v in getattr(src, "_origins", {}).items()
                  if id(v) in vmap}
    g._origins.update(vmap)
    return g


def _effect_values(graph):
    """Tensor results of the effectful ops at this level of `graph` (what replays reuse)."""
    return [o for op in graph.operations if REGISTRY[op.type].effectful
            for o in op.outputs if isinstance(o.type, TensorType)]


# -- cond ----------------------------------------------------------------------------------

def _export_cond(op, g):
    """Make the forward cond also return its branches' effect results (once per node)."""
    tb, fb = op.attrs["true_branch"], op.attrs["false_branch"]
    if hasattr(tb, "_grad_saved"):
        return tb._grad_saved
    saved = {}
    for mine, other in ((tb, fb), (fb, tb)):
        for v in _effect_values(mine):
            mine.outputs.append(v)
            with context.building(other):
                zero = constant(np.zeros([d or 0 for d in v.type.shape], v.type.dtype.np))
                other.outputs.append(resolve(other, zero))
            out = Value(f"{op.name}.{len(op.outputs)}", v.type)
            op.outputs.append(out)
            saved[id(v)] = Tensor._symbolic(out, g)
    tb._plan = fb._plan = None
    tb._grad_saved = saved
    return saved


def _expose_exports(outs, saved):
    """Make the saved effect results outputs of the recorded node too (`outs` is the
    record's own list), so an outer tape differentiating this gradient can send their
    gradients back through the node (second derivatives w.r.t. variables read inside)."""
    extra = [t for t in saved.values() if all(t is not o for o in outs)]
    if not extra:
        return
    for tape in context.recording_tapes():
        if any(key(o) in tape._connected for o in outs):
            tape._connected.update(key(t) for t in extra)
            tape._keep.extend(extra)
    outs.extend(extra)


def _cond_vjp(gs, outs, ins, true_branch, false_branch, _op=None, _graph=None):
    from ..control_flow import cond
    if _op is None:
        raise NotImplementedError("cond gradients need the traced cond node")
    saved = _export_cond(_op, _graph)
    _expose_exports(outs, saved)
    pred, operands = ins[0], list(ins[1:])
    want = [i for i, x in enumerate(operands) if _wants_grad(x)]
    float_outs = [k for k in range(len(gs)) if _wants_grad(outs[k])]
    if not want or not float_outs:
        return [None] * len(ins)
    sources = [operands[i] for i in want]

    def branch_grads(branch):
        def fn():
            env = {id(v): operands[k] for k, (v, _) in enumerate(branch.captures)}
            results, tape = _replay(branch, env, saved, sources)
            grads = tape.gradient([results[k] for k in float_outs], sources,
                                  output_gradients=[gs[k] for k in float_outs])
            return [zeros_for(s) if gr is None else gr for s, gr in zip(sources, grads)]
        return fn
    res = cond(pred, branch_grads(true_branch), branch_grads(false_branch))
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    out = [None] * len(ins)
    for i, g in zip(want, res):
        out[1 + i] = g
    return out


defvjp("cond", _cond_vjp)


# -- while ---------------------------------------------------------------------------------

def _insert_before(g, op, new_op):
    g.operations.remove(new_op)
    g.operations.insert(g.operations.index(op), new_op)


def _export_while(op, g):
    """Give the forward loop one list (a stack) per saved value: each tensor loop variable as
    it enters an iteration, and each effect result of the body. Returns (stacks, saved) where
    `saved` lists (kind, what) per stack: ("var", loop-var index) or ("effect", Value)."""
    body, cond_g, n = op.attrs["body"], op.attrs["cond"], op.attrs["n_vars"]
    if hasattr(body, "_grad_saved"):
        return body._grad_saved
    plan = [("var", k) for k, v in enumerate(body.inputs[:n]) if isinstance(v.type, TensorType)]
    plan += [("effect", v) for v in _effect_values(body)]
    if not plan:   # nothing to save still needs the trip count: count iterations
        plan = [("tick", None)]
    stacks = []
    size = g.add_op("constant", [], dict(value=np.array(0, np.int32)),
                    [TensorType(_dt.int32, ())], op.loc)
    _insert_before(g, op, size)
    for kind, what in plan:
        t = body.inputs[what].type if kind == "var" else \
            what.type if kind == "effect" else TensorType(_dt.int32, ())
        new = g.add_op("tensor_list_new", [size.outputs[0]],
                       dict(dtype=t.dtype, element_shape=t.shape, dynamic_size=True),
                       [ListType(t.dtype, t.shape)], op.loc)
        _insert_before(g, op, new)
        stack_in = Value(f"stack_{len(stacks)}", new.outputs[0].type)
        body.inputs.append(stack_in)
        cond_g.inputs.append(Value(f"stack_{len(stacks)}", stack_in.type))
        pushed = body.inputs[what] if kind == "var" else what if kind == "effect" else None
        if pushed is None:
            with context.building(body):
                pushed = resolve(body, constant(np.int32(0)))
        push = body.add_op("tensor_list_push_back", [stack_in, pushed], {}, [stack_in.type],
                           op.loc)
        body.outputs.append(push.outputs[0])
        op.inputs.insert(n + len(stacks), new.outputs[0])
        op.outputs.append(Value(f"{op.name}.{len(op.outputs)}", stack_in.type))
        stacks.append(Tensor._symbolic(new.outputs[0], g))
    op.attrs["n_vars"] = n + len(stacks)
    body._plan = cond_g._plan = None
    body._grad_saved = (stacks, plan)
    return stacks, plan


def _while_vjp(gs, outs, ins, cond, body, n_vars, _op=None, _graph=None):
    from ..control_flow import while_loop
    if _op is None:
        raise NotImplementedError("while gradients need the traced while node")
    if getattr(body, "_grad_backward", False):
        raise NotImplementedError(
            "second derivatives through a while_loop inside a compiled function are not "
            "supported; compute them eagerly, or unroll the loop over a Python range")
    n = n_vars
    stacks, plan = _export_while(_op, _graph)
    init, operands = list(ins[:n]), list(ins[n:])
    diff = [k for k in range(n) if _wants_grad(outs[k])]
    want = [j for j, x in enumerate(operands) if _wants_grad(x)]
    if not diff:
        return [None] * len(ins)

    def step_cond(i, *_):
        return i >= 0

    def step_body(i, *carried):
        gv, gcap = list(carried[:len(diff)]), list(carried[len(diff):])
        values = [bind("tensor_list_read", s, i) for s in stacks]
        env, saved = {}, {}
        for (kind, what), val in zip(plan, values):
            if kind == "var":
                env[id(body.inputs[what])] = val
            elif kind == "effect":
                saved[id(what)] = val
        for v in body.inputs:
            if id(v) not in env:     # TensorArray loop vars and the stacks themselves
                env[id(v)] = _ghost(v)
        for (v, _), x in zip(body.captures, operands):
            env[id(v)] = x
        sources = [env[id(body.inputs[k])] for k in diff] + [operands[j] for j in want]
        results, tape = _replay(body, env, saved, sources)
        grads = tape.gradient([results[k] for k in diff], sources, output_gradients=gv)
        grads = [zeros_for(s) if g is None else g for s, g in zip(sources, grads)]
        new_gcap = [list_op("tensor_list_add", acc, g) if is_list_value(acc) else acc + g
                    for acc, g in zip(gcap, grads[len(diff):])]
        return [i - 1] + grads[:len(diff)] + new_gcap

    _connect_for_outer_tapes(outs, stacks)
    start = bind("tensor_list_size", stacks[0]) - 1
    carried = [gs[k] for k in diff] + [zeros_for(operands[j]) for j in want]
    invariants = [()] + [_invariant(body.inputs[k].type) for k in diff] + \
        [_invariant(_type_of(operands[j])) for j in want]
    res = while_loop(step_cond, step_body, [start] + carried, shape_invariants=invariants)
    _mark_backward_loop(res[0])
    out = [None] * len(ins)
    for k, g in zip(diff, res[1:1 + len(diff)]):
        out[k] = g
    for j, g in zip(want, res[1 + len(diff):]):
        out[n + j] = g
    return out


def _mark_backward_loop(counter):
    """Flag the loop that produced `counter` (its body graph) as a backward loop."""
    for op in reversed(counter._graph.operations):
        if op.type == "while" and counter._sym in op.outputs:
            op.attrs["body"]._grad_backward = True
            return


def _connect_for_outer_tapes(outs, stacks):
    """Tapes that saw the forward loop must also see the backward loop (which reads the
    saved stacks), so that differentiating it reports the unsupported case instead of
    silently missing the path through the stacks."""
    graph = context.current_graph()
    for tape in context.recording_tapes():
        if not tape._paused and tape._graph is graph and \
                any(key(o) in tape._connected for o in outs):
            tape._connected.update(key(s) for s in stacks)
            tape._keep.extend(stacks)


def _type_of(x):
    return x.type if type(x) is Tensor else TensorType(x.dtype, x.shape)


def _invariant(t):
    return list(t.shape) if isinstance(t, TensorType) else None


defvjp("while", _while_vjp)


from . import lists as autodiff_lists  # noqa: E402,F401  (the TensorArray rules)
