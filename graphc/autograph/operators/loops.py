"""`while` and `for` loops: Python loops on Python values, `while` nodes on tensors."""
import numbers

from ... import dtypes as _dt
from ...runtime import context, control_flow, nest
from ...runtime.dispatch import bind, convert_to_tensor
from ...runtime.graph import Graph
from ...runtime.tensor import Tensor, OPS, is_symbolic
from . import lint
from .conditionals import if_stmt
from .state import as_result, as_tuple, check_carried, flat_names, where, zeros_like_type
from .undefined import Undefined


def while_stmt(test, body, names=(), args=()):
    """Run a converted `while`: `test(*vars)` and `vars = body(*vars)` over the loop
    variables `names` (initial values `args`). A Python test loops in Python; once the test
    is a symbolic tensor, the remaining iterations become one `while` node."""
    n = len(names)
    state = tuple(args)
    while True:
        c = test(*state)
        if is_symbolic(c):
            return _graph_loop(lambda *v: test(*v), lambda *v: as_tuple(body(*v), n),
                               names, state, where(), "while")
        if not c:
            return as_result(state)
        state = as_tuple(body(*state), n)


def for_stmt(iterable, extra_test, body, names=(), args=()):
    """Run a converted `for`: `vars = body(item, *vars)` for each item, while `extra_test`
    (break / return flags) holds. `gc.range` / `range` over tensors, a symbolic tensor's first
    axis and a traced TensorArray become a `while` node with a counter; anything else is a
    Python loop (unrolled while tracing)."""
    n = len(names)
    loop = _graph_iteration(iterable)
    if loop is not None:
        return _graph_for(loop, extra_test, body, names, tuple(args), where())
    return _python_for(iterable, extra_test, body, names, tuple(args))


# -- Python loops ------------------------------------------------------------------------

def _python_for(iterable, extra_test, body, names, state):
    n = len(names)
    it = iter(iterable)
    watch = lint.UnrollWatch(iterable)
    while True:
        if extra_test is not None:
            go = extra_test(*state)
            if is_symbolic(go):
                # a tensor `break`/`return` inside an unrolled loop: guard each later
                # iteration with a `cond` on the flag
                return _guarded_rest(it, go, extra_test, body, names, state)
            if not go:
                break
        try:
            item = next(it)
        except StopIteration:
            break
        watch.before()
        state = as_tuple(body(item, *state), n)
        watch.after()
    return as_result(state)


def _guarded_rest(it, go, extra_test, body, names, state):
    n = len(names)
    for item in it:
        def run(*vs, _item=item):
            return body(_item, *vs)

        def skip(*vs):
            return as_result(vs)
        state = as_tuple(if_stmt(go, run, skip, names, state), n)
        go = extra_test(*state)
    return as_result(state)


# -- graph loops -------------------------------------------------------------------------

class _Iteration:
    """How a graph loop walks its iterable: counter start/limit/delta and item(i)."""

    def __init__(self, start, limit, delta, item, dtype=None):
        self.start, self.limit, self.delta, self.item = start, limit, delta, item
        self.dtype = dtype


def _graph_iteration(iterable):
    if context.current_graph() is None:
        return None
    if isinstance(iterable, LazyRange):
        return _Iteration(iterable.start, iterable.limit, iterable.delta, lambda i: i,
                          iterable.dtype)
    if type(iterable) is Tensor and iterable.is_symbolic:
        if not iterable.shape:
            raise TypeError(f"cannot iterate over a scalar tensor (at {where()})")
        n = iterable.shape[0]
        if n is None:
            n = OPS["shape"](iterable)[0]
        return _Iteration(0, n, 1, lambda i: iterable[i])
    if hasattr(iterable, "_to_flow") and is_symbolic(iterable):
        return _Iteration(0, iterable.size(), 1, iterable.read)
    return None


def _graph_for(loop, extra_test, body, names, state, loc):
    n = len(names)
    dtype = _counter_dtype(loop)
    start = _as_dtype(loop.start, dtype)

    def test(i, *vs):
        going = _below_limit(i, loop.limit, loop.delta, dtype)
        if extra_test is None:
            return going
        return bind("logical_and", going, convert_to_tensor(extra_test(*vs)))

    def step(i, *vs):
        out = as_tuple(body(loop.item(i), *vs), n)
        nxt = bind("add", i, _as_dtype(loop.delta, dtype))
        return (nxt,) + out

    result = _graph_loop(test, step, ("<loop counter>",) + tuple(names), (start,) + state, loc,
                         "for")
    result = as_tuple(result, n + 1)
    return as_result(result[1:])


def _counter_dtype(loop):
    if loop.dtype is not None:
        return _dt.as_dtype(loop.dtype)
    for v in (loop.start, loop.limit, loop.delta):
        if type(v) is Tensor:
            return v.dtype
    if any(isinstance(v, float) for v in (loop.start, loop.limit, loop.delta)):
        return _dt.float32
    return _dt.int32


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


def _graph_loop(test, body, names, state, loc, kind):
    """One `while_loop` over `state`; undefined loop variables are filled or reported."""
    lint.confirm_store(kind, context.user_location())
    state = _define_undefined(body, names, state, loc, kind)
    keep = [k for k, v in enumerate(state) if not isinstance(v, Undefined)]
    full = list(state)

    def pick(vs):
        return [vs[k] for k in keep]

    def spread(vs):
        out = list(full)
        for k, v in zip(keep, vs):
            out[k] = v
        return out

    def cond_fn(*vs):
        return test(*spread(vs))

    def body_fn(*vs):
        out = tuple(body(*spread(vs)))
        for k in keep:
            if isinstance(out[k], Undefined):
                raise ValueError(f"loop variable '{names[k]}' of the `{kind}` at {loc} is no "
                                 "longer defined after an iteration")
            check_carried(out[k], names[k], kind, loc)
        return pick(out)

    kept_state = pick(state)
    for k in keep:
        check_carried(state[k], names[k], kind, loc)
    flat = flat_names([names[k] for k in keep], kept_state)
    with lint.in_graph_loop():
        res = control_flow.while_loop(cond_fn, body_fn, kept_state, _names=flat)
    return as_result(tuple(spread(list(res))))


def _define_undefined(body, names, state, loc, kind):
    """Loop variables must have a value on entry. A lowered return value may not: its dtype
    and shape come from tracing the body once, and it starts as zeros (never read before
    a `return` sets it, since the return flag is a loop variable too)."""
    undefined = [k for k, v in enumerate(state) if isinstance(v, Undefined)]
    if not undefined:
        return state
    for k in undefined:
        if not state[k].fillable:
            raise ValueError(
                f"'{names[k]}' must be defined before the `{kind}` loop at {loc}: it is "
                f"assigned inside the loop and used after it (or in a later iteration), and a "
                f"tensor loop needs its initial value. Give '{names[k]}' a value of the right "
                "dtype and shape before the loop.")
    probe = _probe_body(body, names, state)
    state = list(state)
    for k in undefined:
        if probe[k] is not None and not isinstance(probe[k], Undefined):
            state[k] = zeros_like_type(probe[k])
    return tuple(state)


def _probe_body(body, names, state):
    parent = context.current_graph()
    scratch = Graph("probe", parent=parent)
    args = []
    with context.building(scratch):
        for v in state:
            if isinstance(v, Undefined):
                args.append(v)
                continue
            leaves = []
            for leaf in nest.flatten(v):
                if hasattr(leaf, "_to_flow"):
                    flow = leaf._to_flow()
                    ph = Tensor._symbolic(scratch.add_input(flow.type, "probe"), scratch)
                    leaves.append(leaf._from_flow(ph))
                else:
                    t = convert_to_tensor(leaf)
                    leaves.append(Tensor._symbolic(scratch.add_input(t.type, "probe"), scratch))
            args.append(nest.pack_as(v, leaves) if nest.is_nest(v) else leaves[0])
        with lint.suppressed():
            return tuple(body(*args))


class LazyRange:
    """`range(...)` / `gc.range(...)` with tensor bounds while tracing, before a `for` turns
    it into a counter. Used as a value anywhere else, it becomes the `gc.range` tensor."""

    def __init__(self, start, limit, delta, dtype=None):
        self.start, self.limit, self.delta, self.dtype = start, limit, delta, dtype

    def _as_tensor(self):
        from ...runtime.ops.creation import range as gc_range
        return gc_range(self.start, self.limit, self.delta, dtype=self.dtype)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._as_tensor(), name)

    def __iter__(self):
        return iter(self._as_tensor())

    def __len__(self):
        return len(self._as_tensor())


def _forward(op):
    def method(self, *args):
        return getattr(self._as_tensor(), op)(*args)
    method.__name__ = op
    return method


for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
            "rfloordiv", "mod", "rmod", "pow", "rpow", "neg", "abs", "lt", "le", "gt", "ge",
            "eq", "ne", "getitem", "bool", "array"):
    setattr(LazyRange, f"__{_op}__", _forward(f"__{_op}__"))
