"""gc.custom_gradient and gc.recompute_grad: functions whose gradient the user defines.

As in TF (an IdentityN op with its gradient overridden), f's outputs pass through one
`custom_gradient` op whose inputs are f's outputs, then its arguments, then the variables
it read, and whose outputs are f's outputs again. The op's rule calls the user's grad_fn
when the gradient is built and gives the forward outputs no gradient, so f's own ops are
never differentiated; they are still recorded, so an outer tape differentiates grad_fn's
ops through the forward values they use (second derivatives, as TF's).

The op is part of the graph IR, so the rules of cond and while, which replay a branch or a
loop body under a tape of their own (control.py), meet it like any other op; its grad_fn,
which closes over the forward values, then sees each of them stand for its replayed value
(`context.replaying`). A finished trace drops these ops (`strip`): backends and saved
models see only the forward graph.
"""
import functools
import inspect

from .. import context, nest
from ..graph import Operation, Value, walk
from ..types import TensorType
from ..registry import register, OPAQUE
from ..tensor import Tensor
from .tape import GradientTape, _Paused


class _Spec:
    """The `spec` attribute of a custom_gradient op: what its rule needs."""

    __slots__ = ("name", "grad_fn", "n_out", "n_args", "variables", "loc")

    def __init__(self, name, grad_fn, n_out, n_args, variables, loc):
        self.name, self.grad_fn, self.n_out = name, grad_fn, n_out
        self.n_args, self.variables, self.loc = n_args, variables, loc

    def __repr__(self):
        return f"<grad_fn of {self.name}>"


def _infer(types, spec):
    return list(types[:spec.n_out])


def _identity(*values, spec):
    out = values[:spec.n_out]
    return out[0] if len(out) == 1 else tuple(out)


def _vjp(gs, outs, ins, spec):
    return [None] * spec.n_out + _user_gradients(spec, gs, ins[spec.n_out:])


register("custom_gradient", _infer, _identity, kind=OPAQUE, vjp=_vjp)


def _no_saved_gradient(gs, outs, ins, function):
    raise LookupError(
        f"No gradient defined here for the output of custom_gradient function '{function}': "
        "its grad_fn is Python, built while tracing, and a traced graph (a loaded "
        "SavedModel's function, or a concrete function called under a tape or in another "
        "trace) keeps only the forward. Fix: differentiate the gc.function itself (with the "
        "tape inside it, or around an eager call)")


# What a finished trace keeps of a custom_gradient op (`strip`): the identity on each float
# output, whose rule raises (a replayed graph must not silently differentiate f's ops);
# the optimizing passes drop it like stop_gradient (passes/algebraic.py).
register("custom_gradient_output", lambda types, function: [types[0]],
         lambda x, function: x, kind=OPAQUE, vjp=_no_saved_gradient)


# -- the decorator ---------------------------------------------------------------------------

def custom_gradient(f=None):
    """Decorator: `f(*args)` returns `(result, grad_fn)`; the gradient of `result` with
    respect to `args` (and to the variables `f` reads) is what `grad_fn` says (TF's
    tf.custom_gradient). See docs/gradients.md."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        return _call(f, args, kwargs)

    def converted():   # AutoGraph converts f itself (its `if`/`for`), not this wrapper
        if "conv" not in cache:
            from ...autograph.conversion import converted_callable
            inner = converted_callable(f)
            cache["conv"] = decorated if inner is f else custom_gradient(inner)
        return cache["conv"]
    cache = {}
    decorated.__graphc_convert__ = converted
    return decorated


class _VariableWatcher(GradientTape):
    """Collects the trainable variables read while it is entered (TF's VariableWatcher);
    it records no op (its graph is none that ops are bound in)."""

    _NOWHERE = object()

    def __enter__(self):
        super().__enter__()
        self._graph = self._NOWHERE
        return self


def _call(f, args, kwargs):
    from ..dispatch import bind, convert_to_tensor
    name = getattr(f, "__name__", "f")
    loc = context.user_site()
    with _VariableWatcher() as watcher:
        out = f(*args, **kwargs)
    if not isinstance(out, (tuple, list)) or len(out) != 2 or not callable(out[1]):
        raise TypeError(f"custom_gradient: '{name}' must return (result, grad_fn), "
                        f"got {_short(out)}")
    result, grad_fn = out
    flat_args = nest.flatten(args)
    variables = [v for v in watcher.watched_variables()
                 if all(v is not a for a in flat_args)]
    if variables and not _takes_variables(grad_fn):
        raise TypeError(f"@gc.custom_gradient grad_fn must accept keyword argument "
                        f"'variables', since function '{name}' uses variables: "
                        f"{[v.name for v in variables]}")
    tapes = [t for t in context.recording_tapes() if not t._paused]
    if not tapes and context.current_graph() is None:
        return result        # eagerly, nothing can ask for this gradient
    for t in tapes:          # f's reads were not seen by a tape paused then (recompute_grad)
        if t._watch_accessed:
            for v in variables:
                t._watch_variable(v)
    flat = nest.flatten(result)
    try:
        ys = [convert_to_tensor(y) for y in flat]
        xs = [a if _is_variable(a) else convert_to_tensor(a) for a in flat_args]
    except (TypeError, ValueError) as e:
        raise TypeError(f"custom_gradient: the arguments and results of '{name}' must be "
                        f"tensors ({e})") from None
    spec = _Spec(name, grad_fn, len(ys), len(xs), variables, loc)
    outs = bind("custom_gradient", *ys, *xs, *variables, spec=spec)
    outs = [outs] if type(outs) is Tensor else list(outs)
    return nest.pack_as(result, outs) if nest.is_nest(result) else outs[0]


def _takes_variables(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in params)


def _is_variable(x):
    return hasattr(x, "_resolve_in") and hasattr(x, "trainable")


def _short(x):
    text = repr(x)
    return text if len(text) <= 100 else text[:97] + "..."


# -- the rule: call grad_fn, check what it returns -------------------------------------------

def _user_gradients(spec, upstream, inputs):
    """grad_fn's gradients for `inputs` (f's arguments, then its variables), checked."""
    xs, variables = inputs[:spec.n_args], inputs[spec.n_args:]
    what = f"the grad_fn of custom_gradient function '{spec.name}'"
    if spec.variables:
        got = spec.grad_fn(*upstream, variables=list(spec.variables))
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            _fail(spec, ValueError, f"{what} must return (input_gradients, "
                  f"variable_gradients) since '{spec.name}' uses variables, got {_short(got)}")
        input_grads, var_grads = got
        var_grads = [var_grads] if not isinstance(var_grads, (tuple, list)) else list(var_grads)
        if len(var_grads) != len(spec.variables):
            _fail(spec, ValueError, f"{what} returned {len(var_grads)} variable gradients "
                  f"but '{spec.name}' uses {len(spec.variables)} variables "
                  f"({[v.name for v in spec.variables]}); return one per variable")
    else:
        input_grads, var_grads = spec.grad_fn(*upstream), []
    flat = nest.flatten(input_grads)
    if len(flat) != spec.n_args:
        _fail(spec, ValueError, f"custom_gradient function expected to return {spec.n_args} "
              f"gradients, but returned {len(flat)} instead: {what} must return one "
              f"gradient (or None) per argument of '{spec.name}'")
    return [_checked(spec, g, x, f"argument {i}") for i, (g, x) in enumerate(zip(flat, xs))] \
        + [_checked(spec, g, v, f"variable '{v.name}'")
           for g, v in zip(var_grads, variables)]


def _checked(spec, g, x, which):
    """`g` as a tensor of x's dtype whose shape can be x's (else a clear error)."""
    from ..dispatch import convert_to_tensor
    if g is None or getattr(x, "dtype", None) is None or not x.dtype.is_floating:
        return None
    try:
        g = convert_to_tensor(g, x.dtype) if type(g) is not Tensor else g
    except (TypeError, ValueError) as e:
        _fail(spec, TypeError, f"the grad_fn of custom_gradient function '{spec.name}' "
              f"returned {_short(g)} as the gradient of its {which}: {e}")
    if g.dtype is not x.dtype:
        _fail(spec, TypeError, f"the grad_fn of custom_gradient function '{spec.name}' "
              f"returned a {g.dtype.name} gradient for its {which}, which is {x.dtype.name}")
    gs, xs = tuple(g.shape), tuple(x.shape)
    if len(gs) != len(xs) or any(a is not None and b is not None and a != b
                                 for a, b in zip(gs, xs)):
        _fail(spec, ValueError, f"the grad_fn of custom_gradient function '{spec.name}' "
              f"returned a gradient of shape {list(gs)} for its {which}, of shape "
              f"{list(xs)}; a gradient has the shape of what it is the gradient of")
    return g


def _fail(spec, kind, message):
    where = f" ('{spec.name}' called at {context.format_location(spec.loc)}"
    here = context.user_site()
    where += f"; gradient computed at {context.format_location(here)})" if here else ")"
    raise kind(message + where)


# -- recompute_grad --------------------------------------------------------------------------

def recompute_grad(f):
    """TF's tf.recompute_grad: `f` with the same values and gradients, whose forward values
    are not kept for the backward pass (they are recomputed there). Eagerly, the tape keeps
    none of f's intermediate tensors; in a compiled function the graph recomputes them."""
    @functools.wraps(f)
    def inner(*args, **kwargs):
        @custom_gradient
        def run(*xs):
            with _paused_tapes():
                result = f(*xs, **kwargs)

            def grad(*upstream, variables=None):
                sources = [x for x in xs if type(x) is Tensor or _is_variable(x)] + \
                    list(variables or [])
                with GradientTape(watch_accessed_variables=False) as tape:
                    tape.watch(sources)
                    again = f(*xs, **kwargs)
                grads = tape.gradient(nest.flatten(again), sources,
                                      output_gradients=list(upstream))
                by_source = dict(zip(map(id, sources), grads))
                arg_grads = [by_source.get(id(x)) for x in xs]
                if variables:
                    return arg_grads, [by_source[id(v)] for v in variables]
                return arg_grads
            return result, grad
        run.__name__ = getattr(f, "__name__", "f")
        return run(*args)
    return inner


class _paused_tapes:
    """Pause every recording tape (but a _VariableWatcher) for the block."""

    def __enter__(self):
        self.pauses = [_Paused(t) for t in context.recording_tapes()
                       if not isinstance(t, _VariableWatcher)]
        for p in self.pauses:
            p.__enter__()

    def __exit__(self, *exc):
        for p in reversed(self.pauses):
            p.__exit__()


# -- finished traces -------------------------------------------------------------------------

def strip(graph):
    """Replace the custom_gradient ops of a finished trace, whose gradients are all built
    and which carry a Python callable, by custom_gradient_output identities."""
    if any(op.type == "custom_gradient" for op in walk(graph)):
        _strip(graph, {})


def _strip(g, outer):
    if outer:
        g.captures = [(v, outer.get(id(s), s) if isinstance(s, Value) else s)
                      for v, s in g.captures]
        g._capture_index = {}
        for v, s in g.captures:
            g._capture_index.setdefault(id(s), v)
    alias, kept = {}, []
    for op in g.operations:
        op.inputs = [alias.get(id(v), v) for v in op.inputs]
        if op.type == "custom_gradient":
            for o, v in zip(op.outputs, op.inputs):
                if isinstance(o.type, TensorType) and o.type.dtype.is_floating:
                    kept.append(Operation("custom_gradient_output", g.unique_name(
                        "custom_gradient_output"), [v], {"function": op.attrs["spec"].name},
                        [o], op.loc))
                else:
                    alias[id(o)] = v
            continue
        for _, sub in op.subgraphs():
            _strip(sub, alias)
        kept.append(op)
    g.operations = kept
    g.outputs = [alias.get(id(v), v) for v in g.outputs]
    g._plan = None
