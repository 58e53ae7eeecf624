"""gc.cond and gc.while_loop: Python control flow eagerly, `cond`/`while` nodes while tracing."""
import re

import numpy as np

from .. import dtypes as _dt
from . import context, nest
from .context import building, current_graph, format_location
from .dispatch import bind, constant, convert_to_tensor, is_number, resolve
from .executor import run_graph
from .graph import Graph
from .registry import register, CONTROL
from .tensor import Tensor, is_symbolic
from .types import TensorType, ListType, most_specific_common_shape


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
        return TensorType(a.dtype, most_specific_common_shape(a.shape, b.shape))
    ea, eb = a.element_shape, b.element_shape
    if ea is None or eb is None:
        return a if ea is not None else b
    if len(ea) != len(eb):
        return ListType(a.dtype, None)
    return ListType(a.dtype, most_specific_common_shape(ea, eb))


def _loop_out_type(inp, out):
    if isinstance(inp, ListType):
        return out if out.element_shape is not None else inp
    return inp


# -- tracing helpers ---------------------------------------------------------------------

def _to_leaf_tensor(x, what, dtype=None):
    """A branch/loop value as one tensor; Python numbers take `dtype` when it is given."""
    if hasattr(x, "_to_flow"):          # TensorArray travels as its flow value
        return x._to_flow()
    try:
        if dtype is not None and is_number(x):
            return constant(x, dtype)
        return convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {x!r} cannot be a tensor ({e})") from None


def _trace_fn(parent, name, fn, in_types, structure, arg_names=()):
    """Trace `fn(*structure-with-placeholders)` into a subgraph; returns (graph, result)."""
    sub = Graph(name, parent=parent)
    bases = [_value_base(n) for n in arg_names] or ["arg"] * len(in_types)
    phs = [Tensor._symbolic(sub.add_input(t, b), sub) for t, b in zip(in_types, bases)]
    args = _rebuild_with(structure, phs)
    with building(sub):
        result = fn(*args) if args is not None else fn()
    return sub, result


def _value_base(name):
    """A loop var's name as a readable Value name that no op name (`type_N`) can equal."""
    base = re.sub(r"\W+", "", name) or "arg"
    return base + "_" if re.search(r"_\d+$", base) else base


def _rebuild_with(structure, leaves):
    """Loop vars rebuilt around new leaves; TensorArrays come back as TensorArrays."""
    if structure is None:
        return None
    originals = nest.flatten(structure)
    new = [o._from_flow(t) if hasattr(o, "_to_flow") else t for o, t in zip(originals, leaves)]
    return nest.pack_as(structure, new)


def _finish_outputs(sub, leaves, what, dtypes=None):
    sub.outputs = []
    dtypes = dtypes or [None] * len(leaves)
    with building(sub):
        for x, dt in zip(leaves, dtypes):
            sub.outputs.append(resolve(sub, _to_leaf_tensor(x, what, dt)))


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


def _dtype_of(x):
    """dtype of a tensor-like leaf, None for Python data."""
    if type(x) is Tensor or hasattr(x, "_as_tensor") or hasattr(x, "_to_flow"):
        return x.dtype
    return None


# -- cond --------------------------------------------------------------------------------

def _check_pred(pred):
    """`pred` as a Python bool or a scalar bool tensor; anything else is a TypeError."""
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if type(pred) is Tensor or hasattr(pred, "_as_tensor") or isinstance(pred, np.ndarray):
        p = convert_to_tensor(pred)
        if p.dtype is not _dt.bool_ or p.shape != ():
            raise TypeError(f"cond: pred must be a scalar bool tensor, got {p.dtype.name}"
                            f"{list(p.shape)}{_where()}. Reduce it first (gc.reduce_any(...)) "
                            "or compare it (x > 0)")
        return p
    raise TypeError(f"cond: pred must be a bool or a scalar bool tensor, got {pred!r}{_where()}")


def cond(pred, true_fn=None, false_fn=None, name=None, *, _names=None):
    """Run `true_fn()` if `pred` else `false_fn()`.

    Eagerly this is plain Python. While tracing, both branches are traced into subgraphs of
    one `cond` node; they must return the same structure and dtypes (shapes may differ: the
    result then has None for the differing dimensions). A Python number returned by one
    branch takes the dtype of the other branch's tensor.
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables taking no arguments")
    p = _check_pred(pred)
    if not is_symbolic(p):
        return true_fn() if bool(p) else false_fn()
    g = current_graph()
    tg, t_res = _trace_fn(g, "true_branch", true_fn, [], None)
    fg, f_res = _trace_fn(g, "false_branch", false_fn, [], None)
    names = _names or nest.paths(t_res, "output")
    _check_same_structure(t_res, f_res, names)
    t_leaves, f_leaves = nest.flatten(t_res), nest.flatten(f_res)
    keep = []
    for i, (a, b) in enumerate(zip(t_leaves, f_leaves)):
        if a is b and not isinstance(a, (bool, int, float)):
            continue    # the same object from both branches (None, an outer value) passes
        if a is None or b is None:
            branch = "true" if a is None else "false"
            raise ValueError(f"cond: '{_name(names, i)}' is None in the {branch} branch but a "
                             f"value in the other{_where()}; both branches must produce it")
        keep.append(i)
    _finish_outputs(tg, [t_leaves[i] for i in keep], "cond true branch",
                    [_dtype_of(f_leaves[i]) for i in keep])
    _finish_outputs(fg, [f_leaves[i] for i in keep], "cond false branch",
                    [_dtype_of(t_leaves[i]) for i in keep])
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
        leaves[i] = _relink(t_leaves[i], outs[j])
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

    `loop_vars` is a list or tuple (any nest inside: lists, tuples, dicts, namedtuples,
    TensorArrays); the result has its structure. A loop variable may not change dtype, nor
    shape unless `shape_invariants` (a nest of shapes matching loop_vars, None for a
    dimension that may vary; None for a whole shape leaves every dimension free) allows it.
    `maximum_iterations` (int or int tensor) caps the number of iterations.
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    single = not isinstance(loop_vars, (list, tuple))
    vars_ = [loop_vars] if single else list(loop_vars)
    leaves = nest.flatten(vars_)
    names = list(_names or [f"loop_vars{p}" for p in nest.paths(vars_)])
    shapes = None
    if shape_invariants is not None:
        shapes = _flatten_invariants([shape_invariants] if single else shape_invariants, vars_)
    g = current_graph()
    if g is None:
        return _eager_while(cond, body, loop_vars, vars_, single, shapes, maximum_iterations,
                            names)
    tensors = [_to_leaf_tensor(x, "while_loop") for x in leaves]
    in_types = [_allowed_type(t.type, s, n) for t, s, n in
                zip(tensors, shapes or [_EXACT] * len(tensors), names)]
    counter = maximum_iterations is not None
    if counter:
        in_types.append(TensorType(_dt.int32, ()))
        max_t = _max_iterations_tensor(maximum_iterations)

    def call_cond(*args):
        r = _check_cond_result(cond(*args[:len(vars_)]))
        if counter:
            r = bind("logical_and", bind("less", args[-1], max_t), r)
        return r

    def call_body(*args):
        flat = nest.flatten(_body_output(body(*args[:len(vars_)]), vars_, single))
        if counter:
            flat.append(bind("add", args[-1], convert_to_tensor(1, _dt.int32)))
        return flat

    struct_in = vars_ + ([0] if counter else [])
    arg_names = names + (["iteration"] if counter else [])
    cg, c_res = _trace_fn(g, "cond", call_cond, in_types, struct_in, arg_names)
    bg, b_res = _trace_fn(g, "body", call_body, in_types, struct_in, arg_names)
    _finish_outputs(cg, [c_res], "while_loop cond")
    _finish_outputs(bg, b_res, "while_loop body", [t.dtype for t in in_types])
    for i, (v, o) in enumerate(zip(bg.inputs, bg.outputs)):
        _check_loop_var(_name(names + ["<iteration counter>"], i), v.type, o.type,
                        shapes is not None, "after one iteration")
    init = [resolve(g, t) for t in tensors]
    if counter:
        init.append(resolve(g, convert_to_tensor(0, _dt.int32)))
    operands = _align_captures(g, [cg, bg])
    outs = bind_control("while", g, init + operands, dict(cond=cg, body=bg, n_vars=len(init)))
    return nest.pack_as(loop_vars, [_relink(o, v) for o, v in zip(leaves, outs)])


_EXACT = object()   # no shape invariant given: the loop var keeps its initial shape


def _flatten_invariants(inv, structure):
    """One shape per loop-var leaf; `inv` nests like the loop vars (None covers a subtree)."""
    out = []

    def walk(s, x):
        if x is None and nest.is_nest(s):
            out.extend([None] * len(nest.flatten(s)))
        elif isinstance(s, dict):
            if not isinstance(x, dict) or set(x) != set(s):
                raise ValueError(f"while_loop: shape_invariants {inv!r} does not nest like "
                                 "loop_vars")
            for k in sorted(s, key=repr):
                walk(s[k], x[k])
        elif isinstance(s, (list, tuple)):
            if not isinstance(x, (list, tuple)) or len(x) != len(s):
                raise ValueError(f"while_loop: shape_invariants {inv!r} does not nest like "
                                 "loop_vars")
            for a, b in zip(s, x):
                walk(a, b)
        else:
            out.append(_as_shape(x))
    walk(structure, inv)
    return out


def _as_shape(x):
    if x is None:
        return None
    shape = getattr(x, "shape", x)
    try:
        return tuple(None if d is None else int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"while_loop: a shape invariant must be a list of ints and None (or "
                        f"None), got {x!r}") from None


def _allowed_type(t, shape, name):
    """The loop var's type inside the loop: its initial type relaxed by its shape invariant."""
    if shape is _EXACT or not isinstance(t, TensorType):
        return t
    if shape is None:
        return TensorType(t.dtype, (None,) * len(t.shape))
    if len(shape) != len(t.shape) or any(a is not None and a != b
                                         for a, b in zip(shape, t.shape)):
        raise ValueError(f"while_loop: shape invariant {list(shape)} for '{name}' does not fit "
                         f"its initial shape {list(t.shape)}{_where()}")
    return TensorType(t.dtype, shape)


def _max_iterations_tensor(maximum_iterations):
    m = maximum_iterations
    if type(m) is Tensor or hasattr(m, "_as_tensor"):
        m = convert_to_tensor(m)
        if not m.dtype.is_integer or m.shape != ():
            raise TypeError(f"while_loop: maximum_iterations must be a scalar integer, got "
                            f"{m.dtype.name}{list(m.shape)}")
        return m if m.dtype is _dt.int32 else bind("cast", m, dtype=_dt.int32)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"while_loop: maximum_iterations must be an int, got {m!r}")
    return convert_to_tensor(int(m), _dt.int32)


def _check_cond_result(r):
    if isinstance(r, (bool, np.bool_)) and current_graph() is None:
        return bool(r)
    r = convert_to_tensor(r)
    if r.dtype is not _dt.bool_ or r.shape != ():
        raise TypeError(f"while_loop: cond must return a scalar bool, got {r.dtype.name}"
                        f"{list(r.shape)}{_where()}")
    return r


def _body_output(out, vars_, single):
    """The body's result as a list shaped like the loop vars (ValueError when it is not)."""
    flat = [out] if single or not isinstance(out, (list, tuple)) else list(out)
    if len(vars_) == 1 and not nest.same_structure(flat, vars_) and \
            nest.same_structure([out], vars_):
        flat = [out]        # one loop var that is itself a list/tuple
    if not nest.same_structure(flat, vars_):
        raise ValueError(f"while_loop: body returned {_describe(out)} but the loop vars are "
                         f"{_describe(vars_)}{_where()}; it must return the loop vars' structure")
    return flat


def _check_loop_var(name, a, b, have_invariants, when):
    """`a`: the type a loop var may have inside the loop; `b`: what the body made of it."""
    if type(a) is not type(b) or a.dtype is not b.dtype:
        raise ValueError(f"while_loop: loop variable '{name}' enters the loop as {a} but the "
                         f"body makes it {b}{_where()}. A loop variable must keep its dtype: "
                         "cast inside the body, or initialize it with the final dtype.")
    if isinstance(a, TensorType) and (len(a.shape) != len(b.shape) or any(
            x is not None and x != y for x, y in zip(a.shape, b.shape))):
        hint = ""
        if len(a.shape) == len(b.shape):
            fit = [None if x != y else x for x, y in zip(a.shape, b.shape)]
            hint = (f" If it is meant to change, pass shape_invariants with None for that "
                    f"dimension (e.g. {fit} for '{name}').")
        elif not have_invariants:
            hint = " A loop variable must keep its rank."
        raise ValueError(f"while_loop: loop variable '{name}' has shape {list(a.shape)} on "
                         f"entry but {list(b.shape)} {when}{_where()}.{hint}")


def _eager_type(x):
    if hasattr(x, "_to_flow"):
        return ListType(x.dtype, None)
    if type(x) is Tensor or hasattr(x, "_as_tensor"):
        return TensorType(x.dtype, tuple(x.shape))
    return None     # Python data: only checked once it becomes a tensor


def _eager_while(cond, body, loop_vars, vars_, single, shapes, maximum_iterations, names):
    """Plain Python loop with the same checks (structure, dtype, shape) as the traced loop."""
    limit = None if maximum_iterations is None else int(_max_iterations_tensor(maximum_iterations))
    allowed = []
    for x, s, n in zip(nest.flatten(vars_), shapes or [_EXACT] * len(names), names):
        t = _eager_type(x)
        if t is None and is_number(x):
            t = convert_to_tensor(x).type
        allowed.append(None if t is None else _allowed_type(t, s, n))
    vs, i = vars_, 0
    while True:
        go = bool(_check_cond_result(cond(*vs)))
        if not go or (limit is not None and i >= limit):
            break
        vs = _body_output(body(*vs), vars_, single)
        for n, a, x in zip(names, allowed, nest.flatten(vs)):
            b = _eager_type(x)
            if a is not None and b is not None:
                _check_loop_var(n, a, b, shapes is not None, f"after iteration {i + 1}")
        i += 1
    return nest.pack_as(loop_vars, nest.flatten(vs))
