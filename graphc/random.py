"""gc.random: stateful random number ops (fresh numbers on every call of a compiled function)."""
from .runtime.ops.random import normal, set_seed, uniform  # noqa: F401
