"""gc.cond and gc.while_loop: Python control flow eagerly, `cond`/`while` nodes while tracing."""
import re

import numpy as np

from .. import dtypes as _dt
from ..errors import DtypeChangeError, PredicateError, StructureError
from . import context, loop_vars as lv, nest
from .context import building, current_graph
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
    with building(sub):
        args = _rebuild_with(structure, phs)   # TensorArrays owned by the subgraph
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
            raise PredicateError(
                f"cond: pred must be a scalar bool tensor, got {p.dtype.name}{list(p.shape)}"
                f"{lv.where()}. Reduce it first (gc.reduce_any(...)) or compare it (x > 0)")
        return p
    raise TypeError(f"cond: pred must be a bool or a scalar bool tensor, got {pred!r}{lv.where()}")


def cond(pred, true_fn=None, false_fn=None, name=None, *, _names=None):
    """Run `true_fn()` if `pred` else `false_fn()`.

    Eagerly this is plain Python. While tracing, both branches are traced into subgraphs of
    one `cond` node; they must return the same structure and dtypes (shapes may differ: the
    result then has None for the differing dimensions). A Python number returned by one
    branch takes the dtype of the other branch's tensor, except a Python float beside an
    integer or bool tensor (a DtypeChangeError: eagerly that branch gives a float).
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables taking no arguments")
    p = _check_pred(pred)
    if not is_symbolic(p):
        return true_fn() if bool(p) else false_fn()
    g = current_graph()
    tg, t_res = _trace_fn(g, "true_branch", true_fn, [], None)
    fg, f_res = _trace_fn(g, "false_branch", false_fn, [], None)
    names = lv.leaf_names(_names, t_res, "output")   # after tracing: AutoGraph fills _names then
    _check_same_structure(t_res, f_res, names)
    t_leaves, f_leaves = nest.flatten(t_res), nest.flatten(f_res)
    keep = []
    for i, (a, b) in enumerate(zip(t_leaves, f_leaves)):
        if a is b and not isinstance(a, (bool, int, float)):
            continue    # the same object from both branches (None, an outer value) passes
        if a is None or b is None:
            branch = "true" if a is None else "false"
            raise ValueError(f"cond: '{_name(names, i)}' is None in the {branch} branch but a "
                             f"value in the other{lv.where()}; both branches must produce it")
        _check_python_float(a, b, names, i)
        keep.append(i)
    _finish_outputs(tg, [t_leaves[i] for i in keep], "cond true branch",
                    [_dtype_of(f_leaves[i]) for i in keep])
    _finish_outputs(fg, [f_leaves[i] for i in keep], "cond false branch",
                    [_dtype_of(t_leaves[i]) for i in keep])
    for j, i in enumerate(keep):
        a, b = tg.outputs[j].type, fg.outputs[j].type
        if a.dtype is not b.dtype or type(a) is not type(b):
            raise DtypeChangeError(
                f"cond: '{_name(names, i)}' is {_kind(a)} in the true branch but {_kind(b)} in "
                f"the false branch{lv.where()}; both branches must give the same kind of value "
                "with one dtype")
        if isinstance(a, TensorType) and len(a.shape) != len(b.shape):
            raise ValueError(f"cond: '{_name(names, i)}' has rank {len(a.shape)} in the true "
                             f"branch but {len(b.shape)} in the false branch{lv.where()}")
    operands = _align_captures(g, [tg, fg])
    outs = bind_control("cond", g, [resolve(g, p)] + operands,
                        dict(true_branch=tg, false_branch=fg))
    leaves = list(t_leaves)
    for j, i in enumerate(keep):
        leaves[i] = _relink(t_leaves[i], outs[j])
    return nest.pack_as(t_res, leaves) if nest.is_nest(t_res) else leaves[0]


def _check_python_float(a, b, names, i):
    """A Python float beside an integer or bool tensor cannot take that tensor's dtype:
    eagerly that path gives a float32 (2.0 would silently become int32 2 in the graph)."""
    for x, y, side, other in ((a, b, "true", "false"), (b, a, "false", "true")):
        dt = _dtype_of(y)
        if isinstance(x, (float, np.floating)) and dt is not None and not dt.is_floating:
            raise DtypeChangeError(
                f"cond: '{_name(names, i)}' is the Python float {x!r} in the {side} branch "
                f"but {_kind(y.type if hasattr(y, 'type') else y)} in the {other} branch"
                f"{lv.where()}; both branches must give the same kind of value with one dtype "
                f"(eagerly the {side} branch gives a float32). Give both branches one dtype: "
                f"a {dt.name} value in the {side} branch, or a float in the {other} branch.")


def _kind(t):
    return f"a TensorArray ({t})" if isinstance(t, ListType) else str(t)


def _relink(original, value):
    if hasattr(original, "_to_flow") and value is not None:
        return original._from_flow(value)
    return value


def bind_control(type_, g, inputs, attrs):
    from .registry import REGISTRY
    types = REGISTRY[type_].infer([v.type for v in inputs], **attrs)
    op = g.add_op(type_, inputs, attrs, types, context.user_site())
    outs = [Tensor._symbolic(v, g) for v in op.outputs]
    if outs and context.recording_tapes():   # a tape sees the node as one op (autodiff_control)
        from .autodiff.control import record_control
        record_control(g, op, outs)
    return outs


def _name(names, i):
    return names[i] if i < len(names) else f"output[{i}]"


def _check_same_structure(a, b, names):
    if not nest.same_structure(a, b):
        raise StructureError(f"cond: the branches return different structures: "
                             f"{lv.describe(a)} vs {lv.describe(b)}{lv.where()}")


# -- while_loop --------------------------------------------------------------------------

def while_loop(cond, body, loop_vars, shape_invariants=None, maximum_iterations=None,
               name=None, *, parallel_iterations=10, back_prop=True, swap_memory=False,
               _names=None, _converted=False):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`.

    `loop_vars` is a list or tuple (any nest inside: lists, tuples, dicts, namedtuples,
    TensorArrays); the result has its structure. A loop variable may not change dtype, nor
    shape unless `shape_invariants` (a nest of shapes matching loop_vars, None for a
    dimension that may vary; None for a whole shape leaves every dimension free) allows it.
    `maximum_iterations` (int or int tensor) caps the number of iterations.
    TF's `parallel_iterations` and `swap_memory` are scheduling hints with no effect on
    results (accepted, unused); `back_prop=False` stops gradients through the result.
    """
    out = _while_loop(cond, body, loop_vars, shape_invariants, maximum_iterations, _names,
                      _converted)
    if back_prop:
        return out
    from .autodiff.tape import stop_gradient
    leaves = nest.flatten(out)
    return nest.pack_as(out, [stop_gradient(x) if type(x) is Tensor else x for x in leaves])


def _plain_value(x):
    return is_number(x) or (isinstance(x, (np.ndarray, np.generic))
                            and x.dtype.kind in "biuf")


def _while_loop(cond, body, loop_vars, shape_invariants, maximum_iterations, _names,
                converted=False):
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    single = not isinstance(loop_vars, (list, tuple))
    if not single and not nest.flatten(loop_vars):
        raise ValueError("while_loop: loop_vars is empty; a loop needs at least one loop "
                         "variable (e.g. a counter) that cond depends on")
    vars_ = [loop_vars] if single else list(loop_vars)
    leaves = nest.flatten(vars_)
    names = lv.leaf_names(_names, vars_, "loop_vars")
    shapes = None
    if shape_invariants is not None:
        shapes = lv.flatten_invariants([shape_invariants] if single else shape_invariants, vars_)
    g = current_graph()
    if g is None and not converted:
        # as TF's eager while_loop (and the traced loop): Python numbers and numpy values
        # enter as tensors, so the result is tensors, e.g. while_loop(c, b, (0, 0.0)) gives
        # int32/float32 and (np.int64(0),) int64
        vars_ = nest.pack_as(vars_, [convert_to_tensor(x) if _plain_value(x) else x
                                     for x in leaves])
    if g is None:
        return lv.eager_while(cond, body, loop_vars, vars_, single, shapes, maximum_iterations,
                              names)
    tensors = [_to_leaf_tensor(x, "while_loop") for x in leaves]
    in_types = [lv.allowed_type(t.type, s, n) for t, s, n in
                zip(tensors, shapes or [lv.EXACT] * len(tensors), names)]
    counter = maximum_iterations is not None
    if counter:
        in_types.append(TensorType(_dt.int32, ()))
        max_t = lv.max_iterations_tensor(maximum_iterations)

    def call_cond(*args):
        r = lv.check_cond_result(cond(*args[:len(vars_)]))
        if counter:
            r = bind("logical_and", bind("less", args[-1], max_t), r)
        return r

    def call_body(*args):
        flat = nest.flatten(lv.body_output(body(*args[:len(vars_)]), vars_, single))
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
        lv.check_loop_var(_name(names + ["<iteration counter>"], i), v.type, o.type,
                          shapes is not None and i < len(shapes) and shapes[i] is not lv.EXACT,
                          "after one iteration", converted)
    init = [resolve(g, t) for t in tensors]
    if counter:
        init.append(resolve(g, convert_to_tensor(0, _dt.int32)))
    operands = _align_captures(g, [cg, bg])
    outs = bind_control("while", g, init + operands, dict(cond=cg, body=bg, n_vars=len(init)))
    return nest.pack_as(loop_vars, [_relink(o, v) for o, v in zip(leaves, outs)])
