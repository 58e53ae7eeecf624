"""gc.optimizers.schedules: learning rates that follow the optimizer's step count (Keras 3's
`keras.optimizers.schedules`). An optimizer given a schedule calls it with its iteration
counter (an int64 variable) on every apply_gradients, so compiled train steps follow it too.
"""
import numpy as np

from ..runtime.dispatch import convert_to_tensor
from ..runtime.tensor import OPS, Tensor
from ..runtime.variables import Variable

__all__ = ["LearningRateSchedule", "ExponentialDecay"]


class LearningRateSchedule:
    """Base class: subclasses define `__call__(self, step)` returning the learning rate for
    `step` (the number of updates applied so far) and `get_config()`."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class ExponentialDecay(LearningRateSchedule):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)`, the exponent floored
    when `staircase`. As Keras, it is computed in the initial rate's dtype (float32 for a
    Python number)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: "
                             f"decay_steps={decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        lr = self.initial_learning_rate
        lr = convert_to_tensor(lr) if isinstance(lr, (Tensor, Variable)) else \
            convert_to_tensor(np.float32(lr))
        dtype = lr.dtype
        p = _cast(step, dtype) / _cast(self.decay_steps, dtype)
        if self.staircase:
            p = OPS["floor"](p)
        return lr * OPS["pow"](_cast(self.decay_rate, dtype), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


def _cast(value, dtype):
    if isinstance(value, (Tensor, Variable)):
        t = convert_to_tensor(value)
        return t if t.dtype is dtype else OPS["cast"](t, dtype)
    return convert_to_tensor(value, dtype)
