"""gc.cond and gc.while_loop: Python control flow eagerly, `cond`/`while` nodes while tracing."""
from .. import dtypes as _dt
from . import context, nest
from .context import building, current_graph, format_location
from .dispatch import bind, convert_to_tensor, resolve
from .executor import run_graph
from .graph import Graph
from .registry import register, CONTROL
from .tensor import Tensor, is_symbolic
from .types import TensorType, ListType


# -- primitives --------------------------------------------------------------------------

def _cond_infer(types, true_branch, false_branch):
    return [_merge_branch_types(a.type, b.type)
            for a, b in zip(true_branch.outputs, false_branch.outputs)]


def _cond_impl(pred, *operands, true_branch, false_branch):
    out = run_graph(true_branch if pred else false_branch, operands)
    return out[0] if len(out) == 1 else tuple(out)


def _while_infer(types, cond, body, n_vars):
    return [_loop_out_type(i.type, o.type) for i, o in zip(body.inputs, body.outputs)]


def _while_impl(*args, cond, body, n_vars):
    from .executor import compile_graph
    run_cond, run_body = compile_graph(cond), compile_graph(body)
    loop_vars, caps = list(args[:n_vars]), list(args[n_vars:])
    while run_cond(loop_vars + caps)[0]:
        loop_vars = run_body(loop_vars + caps)
    return loop_vars[0] if n_vars == 1 else tuple(loop_vars)


register("cond", _cond_infer, _cond_impl, kind=CONTROL)
register("while", _while_infer, _while_impl, kind=CONTROL)


def _merge_branch_types(a, b):
    if isinstance(a, TensorType):
        return TensorType(a.dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))
    return a if a.element_shape is not None else b


def _loop_out_type(inp, out):
    if isinstance(inp, ListType):
        return out if out.element_shape is not None else inp
    return inp


# -- tracing helpers ---------------------------------------------------------------------

def _to_leaf_tensor(x, what):
    if hasattr(x, "_to_flow"):          # TensorArray travels as its flow value
        return x._to_flow()
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {x!r} cannot be a tensor ({e})") from None


def _trace_fn(parent, name, fn, in_types, structure):
    """Trace `fn(*structure-with-placeholders)` into a subgraph; returns (graph, result)."""
    sub = Graph(name, parent=parent)
    phs = [Tensor._symbolic(sub.add_input(t, "arg"), sub) for t in in_types]
    args = _rebuild_with(structure, phs)
    with building(sub):
        result = fn(*args) if args is not None else fn()
    return sub, result


def _rebuild_with(structure, leaves):
    """Loop vars rebuilt around new leaves; TensorArrays come back as TensorArrays."""
    if structure is None:
        return None
    originals = nest.flatten(structure)
    new = [o._from_flow(t) if hasattr(o, "_to_flow") else t for o, t in zip(originals, leaves)]
    return nest.pack_as(structure, new)


def _finish_outputs(sub, leaves, what):
    sub.outputs = []
    with building(sub):
        for x in leaves:
            sub.outputs.append(resolve(sub, _to_leaf_tensor(x, what)))


def _align_captures(outer, subs):
    """Give every subgraph the same capture inputs, in one order; returns the outer Values."""
    order, seen = [], set()
    for s in subs:
        for _, src in s.captures:
            if id(src) not in seen:
                seen.add(id(src))
                order.append(src)
    for s in subs:
        mine = {id(src): v for v, src in s.captures}
        new = []
        for src in order:
            v = mine.get(id(src))
            if v is None:
                v = s.add_capture(src, src.type, base="unused")
                mine[id(src)] = v
            new.append((v, src))
        s.captures = new
    return order


def _where():
    loc = context.user_location()
    return f" (at {format_location(loc)})" if loc else ""


# -- cond --------------------------------------------------------------------------------

def cond(pred, true_fn=None, false_fn=None, name=None, *, _names=None):
    """Run `true_fn()` if `pred` else `false_fn()`.

    Eagerly this is plain Python. While tracing, both branches are traced into subgraphs of
    one `cond` node; they must return the same structure and dtypes (shapes may differ: the
    result then has None for the differing dimensions).
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables taking no arguments")
    if not is_symbolic(pred):
        return true_fn() if bool(pred) else false_fn()
    g = current_graph()
    p = convert_to_tensor(pred)
    if p.dtype is not _dt.bool_ or p.shape != ():
        raise TypeError(f"cond: pred must be a scalar bool tensor, got {p.dtype.name}"
                        f"{list(p.shape)}{_where()}. Reduce it first, e.g. gc.reduce_any(...)")
    tg, t_res = _trace_fn(g, "true_branch", true_fn, [], None)
    fg, f_res = _trace_fn(g, "false_branch", false_fn, [], None)
    names = _names or nest.paths(t_res, "output")
    _check_same_structure(t_res, f_res, names)
    t_leaves, f_leaves = nest.flatten(t_res), nest.flatten(f_res)
    keep = [i for i, (a, b) in enumerate(zip(t_leaves, f_leaves)) if a is not None or b is not None]
    for i in keep:
        if t_leaves[i] is None or f_leaves[i] is None:
            branch = "true" if t_leaves[i] is None else "false"
            raise ValueError(f"cond: '{_name(names, i)}' is None in the {branch} branch but a "
                             f"value in the other{_where()}; both branches must produce it")
    _finish_outputs(tg, [t_leaves[i] for i in keep], "cond true branch")
    _finish_outputs(fg, [f_leaves[i] for i in keep], "cond false branch")
    for j, i in enumerate(keep):
        a, b = tg.outputs[j].type, fg.outputs[j].type
        if a.dtype is not b.dtype or type(a) is not type(b):
            raise TypeError(f"cond: '{_name(names, i)}' is {a} in the true branch but {b} in "
                            f"the false branch{_where()}; both branches must give one dtype")
        if isinstance(a, TensorType) and len(a.shape) != len(b.shape):
            raise ValueError(f"cond: '{_name(names, i)}' has rank {len(a.shape)} in the true "
                             f"branch but {len(b.shape)} in the false branch{_where()}")
    operands = _align_captures(g, [tg, fg])
    outs = bind_control("cond", g, [resolve(g, p)] + operands,
                        dict(true_branch=tg, false_branch=fg))
    leaves = list(t_leaves)
    for j, i in enumerate(keep):
        leaves[i] = outs[j]
    leaves = [_relink(o, v) for o, v in zip(t_leaves, leaves)]
    return nest.pack_as(t_res, leaves) if nest.is_nest(t_res) else leaves[0]


def _relink(original, value):
    if hasattr(original, "_to_flow") and value is not None:
        return original._from_flow(value)
    return value


def bind_control(type_, g, inputs, attrs):
    from .registry import REGISTRY
    types = REGISTRY[type_].infer([v.type for v in inputs], **attrs)
    op = g.add_op(type_, inputs, attrs, types, context.user_location())
    return [Tensor._symbolic(v, g) for v in op.outputs]


def _name(names, i):
    return names[i] if i < len(names) else f"output[{i}]"


def _check_same_structure(a, b, names):
    if not nest.same_structure(a, b):
        raise ValueError(f"cond: the branches return different structures: {_describe(a)} vs "
                         f"{_describe(b)}{_where()}")


def _describe(x):
    if isinstance(x, (list, tuple)):
        return type(x).__name__ + "(" + ", ".join(_describe(v) for v in x) + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in x.items()) + "}"
    return "None" if x is None else "value"


# -- while_loop --------------------------------------------------------------------------

def while_loop(cond, body, loop_vars, shape_invariants=None, maximum_iterations=None,
               name=None, *, _names=None):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`.

    `loop_vars` is a list or tuple (any nest inside). While tracing, this is one `while`
    node; a loop variable may not change dtype, nor shape unless `shape_invariants` gives
    None for that dimension.
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    single = not isinstance(loop_vars, (list, tuple))
    vars_ = [loop_vars] if single else loop_vars
    leaves = nest.flatten(vars_)
    g = current_graph()
    if g is None:
        return _eager_while(cond, body, vars_, maximum_iterations, single)
    names = _names or [f"loop_vars{p}" for p in nest.paths(list(vars_))]
    tensors = [_to_leaf_tensor(x, "while_loop") for x in leaves]
    in_types = _invariant_types(tensors, shape_invariants, vars_, names)
    counter = maximum_iterations is not None
    if counter:
        in_types.append(TensorType(_dt.int32, ()))
        max_t = convert_to_tensor(maximum_iterations, _dt.int32)
    structure = list(vars_)

    def call_cond(*args):
        r = cond(*args[:len(vars_)])
        r = convert_to_tensor(r)
        if r.dtype is not _dt.bool_ or r.shape != ():
            raise TypeError(f"while_loop: cond must return a scalar bool, got {r.dtype.name}"
                            f"{list(r.shape)}{_where()}")
        if counter:
            r = bind("logical_and", bind("less", args[-1], max_t), r)
        return r

    def call_body(*args):
        out = body(*args[:len(vars_)])
        out = [out] if single or not isinstance(out, (list, tuple)) else list(out)
        if not nest.same_structure(out, structure):
            raise ValueError(f"while_loop: body returned {_describe(out)} but the loop vars are "
                             f"{_describe(structure)}{_where()}")
        flat = nest.flatten(out)
        if counter:
            flat.append(bind("add", args[-1], convert_to_tensor(1, _dt.int32)))
        return flat

    struct_in = structure + ([0] if counter else [])
    cg, c_res = _trace_fn(g, "cond", call_cond, in_types, struct_in)
    bg, b_res = _trace_fn(g, "body", call_body, in_types, struct_in)
    _finish_outputs(cg, [c_res], "while_loop cond")
    _finish_outputs(bg, b_res, "while_loop body")
    _check_loop_types(bg, names + ["<iteration counter>"], shape_invariants is not None)
    init = [resolve(g, t) for t in tensors]
    if counter:
        init.append(resolve(g, convert_to_tensor(0, _dt.int32)))
    operands = _align_captures(g, [cg, bg])
    outs = bind_control("while", g, init + operands, dict(cond=cg, body=bg, n_vars=len(init)))
    outs = outs[:len(tensors)]
    result = nest.pack_as(list(vars_), [_relink(o, v) for o, v in zip(leaves, outs)])
    if single:
        return result[0]
    return type(loop_vars)(result) if isinstance(loop_vars, tuple) else result


def _invariant_types(tensors, shape_invariants, vars_, names):
    types = [t.type for t in tensors]
    if shape_invariants is None:
        return types
    shapes = _flatten_shapes(shape_invariants, len(types))
    out = []
    for t, s, n in zip(types, shapes, names):
        if s is None or isinstance(t, ListType):
            out.append(t)
            continue
        s = tuple(s)
        if len(s) != len(t.shape) or any(a is not None and a != b for a, b in zip(s, t.shape)):
            raise ValueError(f"while_loop: shape invariant {list(s)} for '{n}' does not fit its "
                             f"initial shape {list(t.shape)}{_where()}")
        out.append(TensorType(t.dtype, s))
    return out


def _flatten_shapes(inv, n):
    """Shape invariants nest like loop_vars, but a shape itself is a list of dims."""
    out = []

    def walk(x):
        if x is None or (isinstance(x, (list, tuple)) and all(
                d is None or isinstance(d, int) for d in x) and not _has_nested(x)):
            out.append(x)
        elif isinstance(x, dict):
            for k in sorted(x, key=repr):
                walk(x[k])
        else:
            for v in x:
                walk(v)
    walk(inv)
    if len(out) != n:
        raise ValueError(f"while_loop: shape_invariants has {len(out)} shapes for {n} loop vars")
    return out


def _has_nested(x):
    return any(isinstance(d, (list, tuple, dict)) for d in x)


def _check_loop_types(bg, names, have_invariants):
    for i, (inp, out) in enumerate(zip(bg.inputs, bg.outputs)):
        a, b = inp.type, out.type
        n = names[i] if i < len(names) else f"loop var {i}"
        if type(a) is not type(b) or a.dtype is not b.dtype:
            raise ValueError(f"while_loop: loop variable '{n}' enters the loop as {a} but the "
                             f"body makes it {b}{_where()}. A loop variable must keep its dtype: "
                             "cast inside the body, or initialize it with the final dtype.")
        if isinstance(a, TensorType) and (len(a.shape) != len(b.shape) or any(
                x is not None and x != y for x, y in zip(a.shape, b.shape))):
            hint = "" if have_invariants else (
                f" If it is meant to grow, pass shape_invariants with None for that "
                f"dimension (e.g. {[None if x != y else x for x, y in zip(a.shape, b.shape)]}).")
            raise ValueError(f"while_loop: loop variable '{n}' has shape {list(a.shape)} on "
                             f"entry but {list(b.shape)} after one iteration{_where()}.{hint}")


def _eager_while(cond, body, vars_, maximum_iterations, single):
    vs = list(vars_)
    i = 0
    limit = None if maximum_iterations is None else int(maximum_iterations)
    while (limit is None or i < limit) and bool(cond(*vs)):
        out = body(*vs)
        vs = [out] if single or not isinstance(out, (list, tuple)) else list(out)
        if len(vs) != len(vars_):
            raise ValueError(f"while_loop: body returned {len(vs)} values for {len(vars_)} "
                             "loop vars")
        i += 1
    if single:
        return vs[0]
    return tuple(vs) if isinstance(vars_, tuple) else vs
