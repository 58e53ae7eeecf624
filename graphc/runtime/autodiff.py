"""Reverse-mode autodiff: GradientTape records bound ops; gradient() walks them backwards.

Gradient rules (`OpDef.vjp`) are written with public graphc ops, so the same walk computes
values eagerly and emits backward nodes into the graph being traced (where the numba backend
can fuse forward and backward together). Nested tapes see the ops of an inner gradient(),
which gives higher derivatives for free.
"""
from . import nest
from .tensor import Tensor

_tapes = []  # tapes that are recording, innermost last


class _Record:
    __slots__ = ("opdef", "inputs", "outputs", "attrs")

    def __init__(self, opdef, inputs, outputs, attrs):
        self.opdef, self.inputs, self.outputs, self.attrs = opdef, inputs, outputs, attrs


def record(opdef, inputs, outputs, attrs):
    """Called by bind() for every op while any tape is recording."""
    if opdef.nondiff or opdef.vjp is None and opdef.type != "read_variable":
        return
    for tape in _tapes:
        if tape._paused:
            continue
        if opdef.type == "read_variable":
            var = inputs[0]
            if id(var) not in tape._connected and tape._watch_accessed and var.trainable:
                tape._watch_variable(var)
        if any(id(x) in tape._connected for x in inputs):
            tape._records.append(_Record(opdef, inputs, outputs, attrs))
            for o in outputs:
                tape._connected.add(id(o))
                tape._keep.append(o)


class GradientTape:
    """Records operations on watched tensors and trainable variables for `gradient()`."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._records = []
        self._connected = set()   # ids of watched tensors/variables and everything derived
        self._keep = []           # keeps recorded objects alive, so their ids stay unique
        self._watched_variables = []
        self._paused = False
        self._used = False

    def __enter__(self):
        _tapes.append(self)
        return self

    def __exit__(self, *exc):
        _tapes.remove(self)

    def watch(self, tensor):
        """Record operations on `tensor` (a tensor, variable, or nest of them)."""
        for t in nest.flatten(tensor):
            if hasattr(t, "_resolve_in") and hasattr(t, "trainable"):
                self._watch_variable(t)
            elif type(t) is Tensor:
                if t.dtype.is_floating:
                    self._connected.add(id(t))
                    self._keep.append(t)
            else:
                raise TypeError(f"GradientTape.watch: expected tensors or variables, got {t!r}")

    def _watch_variable(self, var):
        if id(var) not in self._connected:
            self._connected.add(id(var))
            self._keep.append(var)
            self._watched_variables.append(var)

    def watched_variables(self):
        return tuple(self._watched_variables)

    def stop_recording(self):
        return _Paused(self)

    def reset(self):
        self._records.clear()
        self._connected.clear()
        self._keep.clear()
        self._watched_variables.clear()

    def gradient(self, target, sources, output_gradients=None):
        """d(sum of target) / d(sources), shaped like `sources`; None for unconnected ones."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can compute gradient() only once. "
                               "Use gc.GradientTape(persistent=True) to call it several times.")
        self._used = True
        targets = nest.flatten(target)
        ogs = nest.flatten(output_gradients) if output_gradients is not None else \
            [None] * len(targets)
        with _Paused(self):
            grads = _backward(self._records, targets, ogs)
        flat = [_result(grads, s) for s in nest.flatten(sources)]
        return nest.pack_as(sources, flat) if nest.is_nest(sources) else flat[0]


class _Paused:
    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        self.saved = self.tape._paused
        self.tape._paused = True

    def __exit__(self, *exc):
        self.tape._paused = self.saved


def _ops():
    from .tensor import OPS
    return OPS


def _backward(records, targets, ogs):
    ops = _ops()
    grads = {}
    for t, g in zip(targets, ogs):
        t = ops["convert_to_tensor"](t) if type(t) is not Tensor else t
        _accumulate(grads, t, ops["ones_like"](t) if g is None else ops["convert_to_tensor"](g))
    for rec in reversed(records):
        gouts = [grads.get(id(o)) for o in rec.outputs]
        if all(g is None for g in gouts):
            continue
        gouts = [ops["zeros_like"](o) if g is None else g for g, o in zip(gouts, rec.outputs)]
        gins = rec.opdef.vjp(gouts, rec.outputs, rec.inputs, **rec.attrs)
        for x, g in zip(rec.inputs, gins):
            if g is not None and x.dtype.is_floating:
                _accumulate(grads, x, g)
    return grads


def _accumulate(grads, x, g):
    prev = grads.get(id(x))
    grads[id(x)] = g if prev is None else _ops()["add"](prev, g)


def _result(grads, source):
    if type(source) is not Tensor and not hasattr(source, "_resolve_in"):
        raise TypeError(f"GradientTape.gradient: sources must be tensors or variables, "
                        f"got {source!r}")
    return grads.get(id(source))


def stop_gradient(x, name=None):
    """The identity, but gradients do not flow through it."""
    from .dispatch import bind, convert_to_tensor
    return bind("stop_gradient", convert_to_tensor(x))


def unbroadcast(g, shape):
    """Sum `g` over the axes that broadcasting added to reach it from `shape`."""
    ops = _ops()
    gshape = g.shape
    if tuple(gshape) == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        g = ops["reduce_sum"](g, axis=axes, keepdims=True)
        if lead:
            g = ops["reshape"](g, [1 if d == 1 else -1 if d is None else d for d in shape]
                               if None in shape else list(shape))
    return g
