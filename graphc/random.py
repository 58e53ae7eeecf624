"""gc.random: stateful random number ops (fresh numbers on every call of a compiled function)."""
from .runtime.context import located_errors
from .runtime.ops.random import normal, set_seed, uniform  # noqa: F401

normal = located_errors(normal)
uniform = located_errors(uniform)
