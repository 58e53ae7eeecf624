"""gc.optimizers: SGD (with momentum) and Adam, with Keras' update formulas.

The learning rate is, as in Keras 3, a float32 non-trainable Variable made with the optimizer
(`<name>/learning_rate`): `opt.learning_rate = 0.5` assigns it, so compiled train steps,
which read it on every call, use the new rate; checkpoints save it beside the iteration
counter. A float64 model gets it cast (0.1 -> 0.10000000149011612), as TF, which also rounds
SGD's momentum and Adam's beta powers so. It may instead be a
`schedules.LearningRateSchedule` (called with the iteration counter) or a callable of no
arguments, called on every update.

Slot variables (momentum, Adam's moments) are created the first time a variable is updated,
which may happen inside a compiled train step: gc.function then traces once more, and the
`if slot is None` guard keeps the second trace from creating them again (the create-once
rule). Every update is a variable assignment, so it runs inside compiled train steps.
"""
import warnings

import numpy as np

from .. import dtypes
from ..runtime.dispatch import convert_to_tensor
from ..runtime.module import notify_tracked_change
from ..runtime.tensor import OPS, Tensor
from ..runtime.variables import Variable
from . import schedules
from .schedules import LearningRateSchedule

__all__ = ["Optimizer", "SGD", "Adam", "schedules"]


class Optimizer:
    """Base class: `apply_gradients(zip(grads, vars))` updates each variable in place."""

    def __init__(self, learning_rate, name):
        self.name = name
        self._slots = {}          # variable -> {slot name: Variable}
        self._iterations = None
        self._learning_rate = _initial_learning_rate(name, learning_rate)

    @property
    def iterations(self):
        """Number of apply_gradients() calls so far (an int64 variable, updated in graphs)."""
        if self._iterations is None:
            self._iterations = Variable(np.int64(0), trainable=False,
                                        name=f"{self.name}/iterations")
            notify_tracked_change()     # a checkpoint restored earlier may hold its value
        return self._iterations

    def _trackable_children(self):
        """What checkpoints save of the optimizer itself (gc.train.trackable): the iteration
        counter once it exists and the learning rate Variable (TF's `_iterations` and
        `_learning_rate`). Slots are saved under the variables they belong to. A checkpoint
        without the learning rate (graphc before it was a Variable) restores the rest."""
        items = [] if self._iterations is None else [("iterations", self._iterations)]
        if isinstance(self._learning_rate, Variable):
            items.append(("learning_rate", self._learning_rate))
        return items

    @property
    def learning_rate(self):
        """The learning rate Variable; with a schedule, its value at the current iteration;
        with a callable, what it returns (Keras 3)."""
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            return lr(self.iterations)
        if callable(lr) and not isinstance(lr, (Variable, Tensor)):
            return lr()
        return lr

    @learning_rate.setter
    def learning_rate(self, value):
        """A number, tensor or Variable is assigned to the learning-rate Variable (so the
        change reaches compiled steps); a schedule or callable replaces it (Keras 3)."""
        if _is_schedule_or_callable(value):
            self._learning_rate = value
            return
        lr = self._learning_rate
        if not isinstance(lr, Variable):
            kind = "a `LearningRateSchedule`" if isinstance(lr, LearningRateSchedule) else \
                "a callable"
            raise TypeError(f"{self.name}: this optimizer's learning rate is {kind}, hence "
                            "it is not settable to a value (as in Keras). If you need to set "
                            "it, create the optimizer with a float `learning_rate`.")
        _check_hyper(self.name, "learning_rate", value)
        lr.assign(_cast(value, lr.dtype))

    def get_slot(self, var, slot_name):
        """The slot variable `slot_name` ("momentum", "m", "v") kept for `var`."""
        try:
            return self._slots[var][slot_name]
        except KeyError:
            raise KeyError(f"{self.name}: no slot {slot_name!r} for variable {var.name!r} "
                           "(slots are created by the first apply_gradients)") from None

    @property
    def variables(self):
        """The optimizer's own state: the iteration counter, the learning rate Variable
        and every slot variable, in Keras 3's order. A list, as Keras 3's
        `optimizer.variables` property; calling it (`variables()`, the older Keras method)
        gives the same list."""
        out = _VariableList([self.iterations])
        if isinstance(self._learning_rate, Variable):
            out.append(self._learning_rate)
        for slots in self._slots.values():
            out.extend(slots.values())
        return out

    def apply_gradients(self, grads_and_vars, name=None):
        """Apply one update for each (gradient, variable) pair; pairs whose gradient is None
        are skipped (as in Keras), but at least one gradient must be given."""
        pairs = list(grads_and_vars)
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"{self.name}.apply_gradients: expected (gradient, gc.Variable) "
                                f"pairs, got a {type(v).__name__} where the variable should be")
        live = [(g, v) for g, v in pairs if g is not None]
        if live and len(live) < len(pairs):
            names = [v.name for g, v in pairs if g is None]
            warnings.warn(f"{self.name}.apply_gradients: gradients do not exist for variables "
                          f"{names}; they are left unchanged (as Keras warns). Check that the "
                          "loss depends on them.", UserWarning, stacklevel=2)
        if not live:
            names = ", ".join(v.name for _, v in pairs) or "none given"
            raise ValueError(f"{self.name}.apply_gradients: no gradients provided for any "
                             f"variable ({names}). Check that the loss depends on them and "
                             "that they were read inside the GradientTape.")
        iterations = self.iterations
        # once per update, before the counter moves (Keras); a Variable is read once, a
        # callable's Python float becomes float32 before the cast to a variable's dtype (TF)
        lr = convert_to_tensor(self.learning_rate)
        rates = {}                          # lr cast once per variable dtype
        checked, created = [], False
        for g, v in live:
            if not v.dtype.is_floating:
                raise TypeError(f"{self.name}: variable {v.name!r} has dtype {v.dtype.name}; "
                                "only float variables can be trained")
            g = convert_to_tensor(g)
            if g.dtype is not v.dtype:
                raise TypeError(f"{self.name}: gradient of dtype {g.dtype.name} for variable "
                                f"{v.name!r} of dtype {v.dtype.name}")
            created |= self._ensure_slots(v)
            checked.append((g, v))
        if created:     # once for all new slots: a pending checkpoint restore fills them
            notify_tracked_change()
        for g, v in checked:
            if v.dtype not in rates:
                rates[v.dtype] = _cast(lr, v.dtype)
            self._update(g, v, iterations, rates[v.dtype])
        iterations.assign_add(np.int64(1))
        return iterations

    def apply(self, grads, trainable_variables):
        """Keras 3's form: `apply(grads, variables)` is `apply_gradients(zip(grads,
        variables))`."""
        grads, variables = list(grads), list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"{self.name}.apply: {len(grads)} gradients for "
                             f"{len(variables)} variables")
        return self.apply_gradients(zip(grads, variables))

    def build(self, var_list):
        """Create the slots of `var_list` now (Keras 3's build); apply_gradients otherwise
        creates them on first use."""
        created = False
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"{self.name}.build: expected gc.Variables, got "
                                f"{type(v).__name__}")
            created |= self._ensure_slots(v)
        self.iterations     # noqa: B018  (made now, as Keras builds it)
        if created:
            notify_tracked_change()

    # -- subclasses --------------------------------------------------------------------
    _slot_names = ()

    def _ensure_slots(self, var):
        """Create `var`'s slots unless they exist; True when it created any."""
        if var in self._slots:
            return False
        slots = {}
        for s in self._slot_names:
            slots[s] = Variable(np.zeros(var.shape, dtype=var.dtype.np), trainable=False,
                                name=f"{var._given_name}/{s}")
        self._slots[var] = slots
        return bool(slots)

    def _update(self, grad, var, iterations, lr):
        """Update `var` by `grad`; `lr` is the learning rate as a tensor of var's dtype."""
        raise NotImplementedError


class _VariableList(list):
    """optimizer.variables: a list that may also be called (Keras 2's method form)."""

    def __call__(self):
        return self


def _check_hyper(opt, name, value):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ValueError(f"{opt}: {name} must be >= 0, got {value}")


def _is_schedule_or_callable(value):
    return isinstance(value, LearningRateSchedule) or (
        callable(value) and not isinstance(value, (Variable, Tensor)))


def _initial_learning_rate(opt, value):
    """What the optimizer keeps: a schedule or callable as given; a Variable as given (a
    graphc extension: Keras 3 accepts only floats); any other scalar number or tensor as a
    new float32 non-trainable Variable, Keras 3's `<name>/learning_rate`."""
    if _is_schedule_or_callable(value):
        return value
    if isinstance(value, Variable):
        if value.shape != () or not value.dtype.is_floating:
            raise ValueError(f"{opt}: a learning_rate Variable must be a float scalar, got "
                             f"{value.dtype.name}{list(value.shape)}")
        return value
    shape = tuple(value.shape) if isinstance(value, Tensor) else np.shape(value)
    if isinstance(value, (bool, str)) or value is None or shape != ():
        raise ValueError(f"{opt}: `learning_rate` should be a float, a LearningRateSchedule, "
                         "or a callable returning the learning rate (Keras). Received instead: "
                         f"learning_rate={value!r}")
    _check_hyper(opt, "learning_rate", value)
    return Variable(_cast(value, dtypes.float32), trainable=False,
                    name=f"{opt}/learning_rate")


def _tf_float(x):
    """A Python-float hyperparameter as Keras 3 uses it in `ops.cast(x, variable.dtype)`:
    TF converts it to float32 first, so a float64 model sees SGD's momentum 0.9 and Adam's
    beta_1 0.9 (in its bias correction) as 0.8999999761581421."""
    return float(np.float32(x))


def _cast(value, dtype):
    """A number, tensor or Variable as a tensor of `dtype`."""
    t = convert_to_tensor(value) if isinstance(value, (Variable, Tensor)) else \
        convert_to_tensor(value, dtype)
    return t if t.dtype is dtype else OPS["cast"](t, dtype)


class SGD(Optimizer):
    """Gradient descent with optional momentum (Keras formula):
    `v = momentum * v - learning_rate * g; w += v` (`w -= learning_rate * g` without momentum).
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        super().__init__(learning_rate, name)
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"SGD: momentum must be a number in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self._slot_names = ("momentum",) if self.momentum else ()

    def _update(self, g, var, iterations, lr):
        if not self.momentum:
            var.assign_sub(lr * g)
            return
        v = self._slots[var]["momentum"]
        momentum = convert_to_tensor(_tf_float(self.momentum), var.dtype)
        new_v = momentum * v - lr * g
        v.assign(new_v)
        var.assign_add(momentum * new_v - lr * g if self.nesterov else new_v)


class Adam(Optimizer):
    """Adam (Keras formula): with t the 1-based step,
    `m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    w -= lr sqrt(1-b2^t) / (1-b1^t) * m / (sqrt(v) + epsilon)`."""

    _slot_names = ("m", "v")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adam"):
        super().__init__(learning_rate, name)
        for hname, value in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"Adam: {hname} must be a number in [0, 1), got {value!r}")
        _check_hyper(name, "epsilon", epsilon)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _update(self, g, var, iterations, lr):
        dtype = var.dtype
        step = OPS["cast"](iterations + np.int64(1), dtype)
        b1 = convert_to_tensor(_tf_float(self.beta_1), dtype)   # (1 - beta) below: exact
        b2 = convert_to_tensor(_tf_float(self.beta_2), dtype)
        alpha = lr * OPS["sqrt"](1.0 - b2 ** step) / (1.0 - b1 ** step)
        m, v = self._slots[var]["m"], self._slots[var]["v"]
        new_m = m + (g - m) * (1.0 - self.beta_1)
        new_v = v + (g * g - v) * (1.0 - self.beta_2)
        m.assign(new_m)
        v.assign(new_v)
        var.assign_sub(alpha * new_m / (OPS["sqrt"](new_v) + self.epsilon))

