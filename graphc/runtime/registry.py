"""The op registry: every primitive defined once, with all its rules on one record."""
from dataclasses import dataclass
from typing import Callable, Optional

ELEMENTWISE, REDUCE, SHAPE, LINALG, CONTROL, RANDOM, STATE, IO, OPAQUE = (
    "elementwise", "reduce", "shape", "linalg", "control", "random", "state", "io", "opaque")


@dataclass(frozen=True)
class OpDef:
    """One primitive.

    type:      registry key, equal to Operation.type in graphs (snake_case public op name)
    infer:     (input types, **attrs) -> list of output types; raises TypeError/ValueError
               naming the op, shapes and dtypes. Runs eagerly and while tracing.
    numpy:     (*arrays, **attrs) -> array or tuple of arrays: eager mode and numpy backend
    scalar:    elementwise expression template over `{0}`, `{1}`… for fused kernels
    vjp:       gradient rule, (grads, outputs, inputs, **attrs) -> input cotangents
    kind:      op family, used by passes and backends
    effectful: print/random/variable ops: never removed, merged or reordered
    """

    type: str
    infer: Callable
    numpy: Callable
    kind: str = OPAQUE
    scalar: Optional[str] = None
    vjp: Optional[Callable] = None
    effectful: bool = False
    nondiff: bool = False


REGISTRY: dict = {}


def register(type_, infer, numpy, **rules):
    """Add a primitive. Adding an op touches only the family module that calls this."""
    if type_ in REGISTRY:
        raise ValueError(f"op {type_!r} registered twice")
    opdef = OpDef(type_, infer, numpy, **rules)
    REGISTRY[type_] = opdef
    return opdef


def defvjp(type_, rule):
    """Attach a gradient rule to an op registered elsewhere (control flow keeps its rules in
    the autodiff modules, which need the executor and tracer the op modules must not import)."""
    from dataclasses import replace
    REGISTRY[type_] = replace(REGISTRY[type_], vjp=rule, nondiff=False)
