"""Reverse-mode autodiff: GradientTape records bound ops; gradient() walks them backwards.

Gradient rules (`OpDef.vjp`) are written with public graphc ops, so the same walk computes
values eagerly and emits backward nodes into the graph being traced (where the numba backend
can fuse forward and backward together). Nested tapes see the ops of an inner gradient(),
which gives higher derivatives for free.

A tape records only the ops bound in the graph it was entered in (None: eager). Ops traced
into a cond branch or loop body are not recorded one by one: the `cond`/`while` node itself
is, and its rule (autodiff/control.py) differentiates the subgraph.
"""
import numpy as np

from .. import context, nest
from ..registry import REGISTRY
from ..tensor import Tensor


def key(x):
    """Identity of a value for the tape: a symbolic tensor by its graph Value (many Tensor
    objects may wrap one Value), anything else (concrete tensor, variable) by itself."""
    if type(x) is Tensor and x._np is None:
        return id(x._sym)
    return id(x)


def eager_tape_recording():
    """True while an eager GradientTape records: compiled functions then run their
    (converted) Python eagerly, so the tape sees every op they run."""
    tapes = context.recording_tapes()
    return any(not t._paused and t._graph is None for t in tapes) if tapes else False


class _Record:
    __slots__ = ("opdef", "inputs", "outputs", "attrs", "needs")

    def __init__(self, opdef, inputs, outputs, attrs, needs):
        self.opdef, self.inputs, self.outputs, self.attrs = opdef, inputs, outputs, attrs
        self.needs = needs   # which inputs lead back to a watched value


def record(opdef, inputs, outputs, attrs):
    """Called by bind() for every op while any tape is recording."""
    if opdef.nondiff or opdef.vjp is None:
        return
    graph = context.current_graph()
    for tape in context.recording_tapes():
        if tape._paused:
            continue
        if opdef.type == "read_variable":
            var = inputs[0]
            if tape._watch_accessed and var.trainable:
                tape._watch_variable(var)
        if tape._graph is not graph:
            continue
        needs = tuple(key(x) in tape._connected for x in inputs)
        if any(needs):
            tape._records.append(_Record(opdef, inputs, outputs, attrs, needs))
            for o in outputs:
                tape._connected.add(key(o))
                tape._keep.append(o)


class GradientTape:
    """Records operations on watched tensors and trainable variables for `gradient()`.

    persistent: allow several gradient() calls (otherwise a second one raises RuntimeError).
    watch_accessed_variables: watch every trainable gc.Variable read while recording.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._records = []
        self._connected = set()   # keys of watched tensors/variables and everything derived
        self._keep = []           # keeps recorded objects alive, so their ids stay unique
        self._watched_variables = []
        self._paused = False
        self._used = False
        self._graph = None
        self._replayed = None     # for a tape of a replayed region: see context.replaying

    def __enter__(self):
        self._graph = context.current_graph()
        self._recording_in = context._tls.tapes    # this thread's: other threads' ops unseen
        context._push(self._recording_in, self)
        return self

    def __exit__(self, *exc):
        context._pop(self._recording_in, self)

    def watch(self, tensor):
        """Record operations on `tensor` (a tensor, variable, or nest of them)."""
        for t in nest.flatten(tensor):
            if hasattr(t, "_resolve_in") and hasattr(t, "trainable"):
                self._watch_variable(t)
            elif type(t) is Tensor:
                if t.dtype.is_floating:
                    self._connected.add(key(t))
                    self._keep.append(t)
            else:
                raise TypeError(f"GradientTape.watch: expected tensors or variables, got {t!r}")

    def _watch_variable(self, var):
        if id(var) not in self._connected:
            self._connected.add(id(var))
            self._keep.append(var)
            self._watched_variables.append(var)

    def watched_variables(self):
        """The variables this tape watches (explicitly or because they were read), in the
        order they were created, as TF's."""
        return tuple(sorted(self._watched_variables, key=lambda v: getattr(v, "_number", 0)))

    def jacobian(self, target, sources, unconnected_gradients="none"):
        """d target[i...] / d source[j...], shaped target.shape + source.shape (for each
        source of the nest). Like gradient(), a non-persistent tape allows one call."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can compute gradients only once. "
                               "Use gc.GradientTape(persistent=True) to call it several times.")
        self._used = True
        for s in nest.flatten(sources):
            _check_source(s)
        return _jacobian(self, target, sources, unconnected_gradients)

    def batch_jacobian(self, target, source, unconnected_gradients="none",
                       parallel_iterations=None, experimental_use_pfor=True):
        """TF's batch_jacobian: d target[b, i...] / d source[b, j...] for each example b of
        the first axis, shaped [B] + target.shape[1:] + source.shape[1:] (rows of different
        examples are assumed independent, as in TF). Shapes must be fully known."""
        from ..dispatch import convert_to_tensor
        ops = _ops()
        t = convert_to_tensor(target)
        if not t.shape or not getattr(source, "shape", None) or \
                t.shape[0] != source.shape[0] or None in t.shape or None in source.shape:
            raise ValueError(f"GradientTape.batch_jacobian: target and source need the same "
                             f"known first (batch) dimension and known shapes, got "
                             f"{list(t.shape)} and {list(getattr(source, 'shape', ()))}")
        jac = self.jacobian(t, source, unconnected_gradients)
        if jac is None:
            return None
        b = t.shape[0]
        ny = int(np.prod(t.shape[1:], dtype=np.int64))
        nx = int(np.prod(source.shape[1:], dtype=np.int64))
        blocks = ops["reshape"](ops["transpose"](ops["reshape"](jac, [b, ny, b, nx]),
                                                 [0, 2, 1, 3]), [b * b, ny, nx])
        diag = ops["gather"](blocks, convert_to_tensor(np.arange(b, dtype=np.int32) * (b + 1)))
        return ops["reshape"](diag, [b] + list(t.shape[1:]) + list(source.shape[1:]))

    def stop_recording(self):
        """Context manager: ops inside are not recorded."""
        return _Paused(self)

    def reset(self):
        """Forget everything recorded so far."""
        self._records.clear()
        self._connected.clear()
        self._keep.clear()
        self._watched_variables.clear()

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients="none"):
        """d(sum of target) / d(sources), shaped like `sources`; None for unconnected ones
        (zeros with unconnected_gradients="zero"). `output_gradients` weights each target."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can compute gradient() only once. "
                               "Use gc.GradientTape(persistent=True) to call it several times.")
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.gradient: unconnected_gradients must be 'none' or "
                             f"'zero', got {unconnected_gradients!r}")
        self._used = True
        targets = nest.flatten(target)
        ogs = nest.flatten(output_gradients) if output_gradients is not None else \
            [None] * len(targets)
        if len(ogs) != len(targets):
            raise ValueError(f"GradientTape.gradient: {len(ogs)} output_gradients for "
                             f"{len(targets)} targets; give one per target")
        flat_sources = nest.flatten(sources)
        for s in flat_sources:
            _check_source(s)
        graph = context.current_graph()
        before = {id(op) for op in graph.operations} if graph is not None else None
        with context.replaying(self._replayed):
            flat = self._gradient(targets, ogs, flat_sources, unconnected_gradients)
        if graph is not None:
            _prune_unused(graph, before, flat)
        return nest.pack_as(sources, flat) if nest.is_nest(sources) else flat[0]

    def _gradient(self, targets, ogs, flat_sources, unconnected_gradients):
        if self._persistent and not self._paused and \
                self in getattr(self, "_recording_in", ()):
            # inside its own block, a persistent tape records the gradient's ops too, so a
            # second gradient() of this one gives higher derivatives (as TF's)
            grads = backward(list(self._records), targets, ogs)
            flat = [_result(grads, s, unconnected_gradients) for s in flat_sources]
        else:
            with _Paused(self):
                grads = backward(self._records, targets, ogs)
                flat = [_result(grads, s, unconnected_gradients) for s in flat_sources]
        return flat


def _prune_unused(graph, before, results):
    """Drop the ops gradient() just added whose results nothing uses (e.g. the gradient of
    a constant operand), so no backend spends time on them."""
    new_ops = [op for op in graph.operations if id(op) not in before]
    uses = {}

    def use(v):
        uses[id(v)] = uses.get(id(v), 0) + 1
    for op in new_ops:
        for v in op.inputs:
            use(v)
        for _, sub in op.subgraphs():
            for _, src in sub.captures:
                use(src)
    for t in results:
        if type(t) is Tensor and t._graph is graph:
            use(t._sym)
    for op in reversed(new_ops):
        if REGISTRY[op.type].effectful or op.subgraphs() or \
                any(uses.get(id(v)) for v in op.outputs):
            continue
        graph.operations.remove(op)
        for v in op.inputs:
            uses[id(v)] -= 1


def _jacobian(tape, target, sources, unconnected):
    """One backward pass per element of `target` (its size must be static)."""
    from ..dispatch import convert_to_tensor
    ops = _ops()
    target = convert_to_tensor(target)
    if None in target.shape:
        raise ValueError(f"GradientTape.jacobian: the target's shape {list(target.shape)} "
                         "must be fully known")
    n = int(np.prod(target.shape, dtype=np.int64))
    flat_sources = nest.flatten(sources)
    rows = [[] for _ in flat_sources]
    with _Paused(tape):
        for i in range(n):
            seed = np.zeros(n, target.dtype.np)
            seed[i] = 1
            seed = ops["reshape"](convert_to_tensor(seed), list(target.shape))
            grads = backward(tape._records, [target], [seed])
            for k, s in enumerate(flat_sources):
                rows[k].append(_result(grads, s, unconnected))
    out = []
    for s, r in zip(flat_sources, rows):
        if any(g is None for g in r):
            out.append(None)
            continue
        out.append(ops["reshape"](ops["stack"](r), list(target.shape) + list(s.shape)))
    return nest.pack_as(sources, out) if nest.is_nest(sources) else out[0]


class _Paused:
    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        self.saved = self.tape._paused
        self.tape._paused = True

    def __exit__(self, *exc):
        self.tape._paused = self.saved


def _ops():
    from ..tensor import OPS
    return OPS


def backward(records, targets, ogs):
    """Run the rules of `records` in reverse from `targets` (seeded with `ogs`, None meaning
    ones). Returns {key: gradient}."""
    from ..dispatch import convert_to_tensor
    ops = _ops()
    grads = {}
    for t, g in zip(targets, ogs):
        if hasattr(t, "_resolve_in") and _differentiable(t):
            # a Variable target stands for itself, as TF's handle does: d v / d v = ones,
            # not the gradient of a fresh (unrecorded) read of it
            accumulate(grads, t, ops["ones"](list(t.shape), t.dtype) if g is None
                       else convert_to_tensor(g, t.dtype))
            continue
        t = convert_to_tensor(t) if type(t) is not Tensor else t
        if not _differentiable(t):
            continue          # an integer target has no gradient (as in TF)
        if g is None:
            g = ops["ones_like"](t)
        elif not _is_list(g):
            g = convert_to_tensor(g, t.dtype)
        accumulate(grads, t, g)
    for rec in reversed(records):
        gouts = [grads.get(key(o)) for o in rec.outputs]
        if all(g is None for g in gouts):
            continue
        gouts = [zeros_for(o) if g is None else g for g, o in zip(gouts, rec.outputs)]
        if getattr(rec.opdef.vjp, "takes_needs", False):   # rules that skip unneeded work
            gins = rec.opdef.vjp(gouts, rec.outputs, rec.inputs, needs=rec.needs, **rec.attrs)
        else:
            gins = rec.opdef.vjp(gouts, rec.outputs, rec.inputs, **rec.attrs)
        for x, g, need in zip(rec.inputs, gins, rec.needs):
            if g is not None and need and _differentiable(x):
                accumulate(grads, x, g)
    return grads


def _differentiable(x):
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.is_floating


def _is_list(x):
    from .ops import is_list_value
    return is_list_value(x)


def zeros_for(x):
    """A zero gradient for `x` (a TensorArray list gets an empty list gradient)."""
    if _is_list(x):
        from .ops import zeros_list
        return zeros_list(x.dtype)
    if hasattr(x, "_resolve_in"):      # a variable: zeros of its shape, without reading it
        return _ops()["zeros"](x.shape, x.dtype)
    return _ops()["zeros_like"](x)


def accumulate(grads, x, g):
    """Add gradient `g` to what `x` has collected so far."""
    k = key(x)
    prev = grads.get(k)
    if prev is None:
        grads[k] = g
    elif _is_list(prev) or _is_list(g):
        from .ops import list_op
        grads[k] = list_op("tensor_list_add", prev, g)
    else:
        grads[k] = _ops()["add"](prev, g)


def _check_source(source):
    if type(source) is not Tensor and not hasattr(source, "_resolve_in"):
        raise TypeError(f"GradientTape.gradient: sources must be tensors or variables, "
                        f"got {source!r}")


def _result(grads, source, unconnected):
    g = grads.get(key(source))
    if g is None and unconnected == "zero":
        return _ops()["zeros_like"](source)
    return g


def stop_gradient(x, name=None):
    """The identity, but gradients do not flow through it."""
    from ..dispatch import bind, convert_to_tensor
    return bind("stop_gradient", convert_to_tensor(x))


def unbroadcast(g, like, *others, core=0):
    """Sum `g` over the axes that broadcasting added to reach it from tensor `like`'s shape
    (`others`: the tensors it was broadcast against; the last `core` dims never broadcast,
    e.g. matmul's matrices). Known from the static shapes, or, where `like` has a dim
    unknown until run time that may have been 1 while another operand's was not, by the
    sum_to_shape op on its run-time shape (else x of shape [None], 1 at run time, times
    y of 5 got a gradient of 5 elements)."""
    ops = _ops()
    gshape, shape = tuple(g.shape), tuple(like.shape)
    n = len(shape)

    def may_broadcast(i):
        k = n - i                       # the axis counted from the right
        if shape[i] is not None or k <= core or gshape[-k] == 1:
            return False
        return not others or any(len(o.shape) >= k and o.shape[-k] != 1 for o in others)
    if any(may_broadcast(i) for i in range(n)):
        from ..dispatch import bind
        from ... import dtypes
        return bind("sum_to_shape", g, bind("shape", like, out_type=dtypes.int32),
                    shape=shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if len(axes) == lead:           # only added leading axes (e.g. a bias): one reduction
        return ops["reduce_sum"](g, axis=axes) if axes else g
    g = ops["reduce_sum"](g, axis=axes, keepdims=True)
    return ops["squeeze"](g, axis=list(range(lead))) if lead else g
