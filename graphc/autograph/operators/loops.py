"""`while` and `for` loops: Python loops on Python values, `while` nodes on tensors."""
import numbers

from ...runtime import context, control_flow, nest
from ...errors import DtypeChangeError
from ...runtime.context import format_location
from ...runtime.dispatch import bind, convert_to_tensor
from ...runtime.graph import Graph
from ...runtime.loop_vars import EXACT
from ...runtime.tensor import Tensor, OPS, is_symbolic
from . import lint
from .conditionals import if_stmt
from .iteration import graph_iteration
from .loop_options import LoopOptions
from .state import StateAccess, check_carried, flat_names, zeros_like_type
from .undefined import MaybeUndefined, Undefined, UndefinedUse


def while_stmt(test, body, get_state=None, set_state=None, names=(), opts=None):
    """Run a converted `while`: `body()` while `test()`, both on the enclosing scope's
    variables. A Python test loops in Python; once the test is a symbolic tensor, the
    remaining iterations become one `while` node carrying the state (`names`, read and
    written through `get_state` / `set_state`)."""
    done = 0            # iterations run in Python before the test became a tensor
    while True:
        c = test()
        if is_symbolic(c):
            access = StateAccess(get_state, set_state, names, opts=opts)
            loc = context.user_location()
            return _graph_loop(lambda lead: test(), lambda lead: _run(body), [], access,
                               loc, "while", options=LoopOptions.of(opts, loc),
                               python_iterations=done)
        if not c:
            return
        body()
        done += 1


def for_stmt(iterable, extra_test, body, get_state=None, set_state=None, names=(), opts=None):
    """Run a converted `for`: `body(item)` for each item, while `extra_test()` (break /
    return flags) holds. `gc.range` / `range` over tensors, a symbolic tensor's first axis,
    a traced TensorArray, and enumerate/zip/reversed of those become a `while` node with a
    counter; anything else is a Python loop (unrolled while tracing)."""
    loop = graph_iteration(iterable)
    if loop is not None:
        access = StateAccess(get_state, set_state, names, opts=opts)
        loc = context.user_location()
        return _graph_for(loop, extra_test, body, access, loc, LoopOptions.of(opts, loc))
    return _python_for(iterable, extra_test, body, get_state, set_state, names, opts)


def _run(body):
    body()
    return []


# -- Python loops ------------------------------------------------------------------------

def _python_for(iterable, extra_test, body, get_state, set_state, names, opts):
    it = iter(iterable)
    watch = lint.UnrollWatch(iterable)
    while True:
        if extra_test is not None:
            go = extra_test()
            if is_symbolic(go):
                # a tensor `break`/`return` inside an unrolled loop: guard each later
                # iteration with a `cond` on the flag
                return _guarded_rest(it, go, extra_test, body, get_state, set_state, names,
                                     opts)
            if not go:
                break
        try:
            item = next(it)
        except StopIteration:
            break
        watch.before()
        body(item)
        watch.after()


def _guarded_rest(it, go, extra_test, body, get_state, set_state, names, opts):
    for item in it:
        if_stmt(go, lambda _item=item: body(_item), lambda: None, get_state, set_state,
                names, len(names), opts)
        go = extra_test()


# -- graph loops -------------------------------------------------------------------------

def _graph_for(loop, extra_test, body, access, loc, options=None):
    dtype = loop.dtype
    start = _as_dtype(loop.start, dtype)

    def test(lead):
        going = _below_limit(lead[0], loop.limit, loop.delta, dtype)
        if extra_test is None:
            return going
        return bind("logical_and", going, convert_to_tensor(extra_test()))

    def step(lead):
        i = lead[0]
        body(loop.item(i))
        return [bind("add", i, _as_dtype(loop.delta, dtype))]

    _graph_loop(test, step, [start], access, loc, "for", ["<loop counter>"], options)


def _as_dtype(v, dtype):
    if type(v) is Tensor:
        return v if v.dtype is dtype else OPS["cast"](v, dtype)
    return convert_to_tensor(v, dtype)


def _below_limit(i, limit, delta, dtype):
    limit = _as_dtype(limit, dtype)
    if isinstance(delta, numbers.Number) or (type(delta) is Tensor and not delta.is_symbolic):
        return bind("less" if float(delta) > 0 else "greater", i, limit)
    d = _as_dtype(delta, dtype)
    zero = convert_to_tensor(0, dtype)
    up = bind("logical_and", bind("greater", d, zero), bind("less", i, limit))
    down = bind("logical_and", bind("less", d, zero), bind("greater", i, limit))
    return bind("logical_or", up, down)


def _graph_loop(test, step, lead, access, loc, kind, lead_names=(), options=None,
                python_iterations=0):
    """One `while_loop` over the statement's state. `lead` are extra loop values the
    runtime keeps (a `for` counter): `test(lead)` is the condition, `step(lead)` runs the
    body and returns the next lead values. State that has no value on entry but is
    assigned on every path of the body starts as zeros of the type the body gives it, and
    is checked to exist (the loop ran) wherever it is used after the loop. `options`:
    the loop's set_loop_options (shape invariants, maximum_iterations)."""
    where_ = format_location(loc)
    init = access.read(kind, loc)
    raw = init
    keep = access.carried(init, kind, loc)
    names = access.names
    # a variable that may have no value (first assigned in an enclosing loop) is carried
    # as its value and a `defined` flag, checked only where it is used
    init, flags = list(init), {}
    for k in keep:
        if type(init[k]) is MaybeUndefined:
            flags[k], init[k] = init[k].defined, init[k].value
    init, first_defined, keep = _define_undefined(step, lead, access, tuple(init), keep,
                                                  where_, kind)
    for k in first_defined:
        flags[k] = convert_to_tensor(False)
    flagged = sorted(flags)
    n_lead, n_keep = len(lead), len(keep)

    def current(vs):
        values = list(init)
        for k, v in zip(keep, vs[n_lead:n_lead + n_keep]):
            values[k] = v
        for k, f in zip(flagged, vs[n_lead + n_keep:]):
            values[k] = _maybe_undefined(values[k], f, names[k], where_)
        return values

    def cond_fn(*vs):
        access.write(current(vs))
        return test(list(vs[:n_lead]))

    def body_fn(*vs):
        access.write(current(vs))
        new_lead = step(list(vs[:n_lead]))
        out = list(access.read(kind, loc))
        out_flags = []
        for k in flagged:
            out[k], defined = _split_maybe(out[k])
            out_flags.append(defined)
        for k in keep:
            if isinstance(out[k], Undefined):
                raise ValueError(f"loop variable '{names[k]}' of the `{kind}` at {where_} is "
                                 "no longer defined after an iteration")
            check_carried(out[k], names[k], kind, where_)
        return list(new_lead) + [out[k] for k in keep] + out_flags

    carried = [init[k] for k in keep]
    for k in keep:
        check_carried(init[k], names[k], kind, where_)
    flat = list(lead_names) + flat_names([names[k] for k in keep], carried) + \
        [f"<{names[k]} defined>" for k in flagged]
    shapes, max_iter = None, None
    if options is not None:
        max_iter = options.maximum_iterations(python_iterations)
        inv = options.invariants(raw, init, keep, names, kind, where_)
        if inv:
            shapes = [EXACT] * len(lead) + [
                (nest.pack_as(init[k], inv[k]) if nest.is_nest(init[k]) else inv[k][0])
                if k in inv else EXACT for k in keep] + [EXACT] * len(flagged)
    try:
        res = control_flow.while_loop(cond_fn, body_fn,
                                      list(lead) + carried + [flags[k] for k in flagged],
                                      shape_invariants=shapes, maximum_iterations=max_iter,
                                      _names=flat, _converted=True)
    except BaseException as e:
        access.write(init)
        weak = _python_int_mixed(e, [(names[k], init[k]) for k in keep])
        if weak:
            raise DtypeChangeError(
                f"loop variable {weak} of the `{kind}` at {where_} starts as a Python int "
                f"(an int32 tensor in the loop) and the body mixes it with another dtype: a "
                f"loop variable keeps one dtype across iterations. Start it as the dtype the "
                f"body gives it (`= 0.0`, or gc.zeros([], dtype)). ({e})") from e
        raise
    access.write(current(list(res)))


def _python_int_mixed(error, named_inits):
    """The loop variables that start as Python ints, quoted, when `error` is an op's
    refusal to mix int32 with another dtype (`s = 0; for v in x: s += v` over floats:
    Python gives a float, the loop an int32 variable): '' otherwise."""
    text = str(error)
    mixed = "different dtypes" in text or (      # `s = 0` then `s = s + 0.5`
        "cannot use Python value" in text and "int32 tensor" in text)
    if type(error) is not TypeError or not mixed or "int32" not in text:
        return ""
    weak = [f"'{n}'" for n, v in named_inits
            if isinstance(v, numbers.Integral) and not isinstance(v, bool)]
    return " or ".join(weak)


def _maybe_undefined(value, defined, name, loop):
    leaves = [MaybeUndefined(v, defined, name, loop) if type(v) is Tensor else v
              for v in nest.flatten(value)]
    return nest.pack_as(value, leaves) if nest.is_nest(value) else leaves[0]


def _split_maybe(value):
    """(value without MaybeUndefined wrappers, whether it is defined: a bool tensor)."""
    leaves, defined = [], convert_to_tensor(True)
    for v in nest.flatten(value):
        if type(v) is MaybeUndefined:
            defined = bind("logical_and", defined, v.defined)
            v = v.value
        leaves.append(v)
    return (nest.pack_as(value, leaves) if nest.is_nest(value) else leaves[0]), defined


def _define_undefined(step, lead, access, init, keep, loc, kind):
    """Loop state must have a value on entry. A value the body assigns on every path before
    reading it gets its dtype and shape from tracing the body once, and starts as zeros:
    a lowered return value (never read before a `return` sets it) or a variable first
    assigned in the loop. Returns (state, indices of such variables, the indices still carried)."""
    undefined = [k for k in keep if isinstance(init[k], Undefined)]
    if not undefined:
        return init, [], keep
    probe, missing = _probe_body(step, lead, access, init, keep)
    state, first, unset = list(init), [], set()
    for k in undefined:
        name = access.names[k]
        got = probe[k] if probe is not None else None
        if init[k].fillable and probe is not None and isinstance(got, Undefined):
            unset.add(k)        # a `return` the body never reaches: nothing to carry
            continue
        if missing == name or got is None or isinstance(got, Undefined):
            raise ValueError(
                f"'{name}' must be defined before the `{kind}` loop at {loc}: it is read in "
                f"the loop before it is assigned, or not assigned on every path of the body, "
                f"and it is used after the loop or in a later iteration. Give '{name}' a value "
                "of the right dtype and shape before the loop.")
        state[k] = zeros_like_type(got)
        if not init[k].fillable:
            first.append(k)
    return tuple(state), first, [k for k in keep if k not in unset]


def _probe_body(step, lead, access, init, keep):
    """Trace the body once on placeholders, in a scratch graph; the state it leaves, or
    (None, name) when it reads a variable that has no value yet."""
    parent = context.current_graph()
    scratch = Graph("probe", parent=parent)
    values = list(init)
    with context.building(scratch):
        for k in keep:
            if not isinstance(init[k], Undefined):
                values[k] = _placeholder_like(scratch, init[k])
        lead_ph = [_placeholder_like(scratch, v) for v in lead]
        try:
            access.write(values)
            with lint.suppressed():
                step(lead_ph)
            return access.read(), None
        except UndefinedUse as e:
            return None, e.name
        finally:
            access.write(init)


def _placeholder_like(graph, v):
    leaves = []
    for leaf in nest.flatten(v):
        if hasattr(leaf, "_to_flow"):
            flow = leaf._to_flow()
            ph = Tensor._symbolic(graph.add_input(flow.type, "probe"), graph)
            leaves.append(leaf._from_flow(ph))
        else:
            t = convert_to_tensor(leaf)
            leaves.append(Tensor._symbolic(graph.add_input(t.type, "probe"), graph))
    return nest.pack_as(v, leaves) if nest.is_nest(v) else leaves[0]
