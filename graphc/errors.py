"""graphc's exception types."""


class GraphcError(Exception):
    """Base class of graphc's own exceptions."""


class OperatorNotAllowedInGraphError(GraphcError, TypeError):
    """A symbolic tensor was used as a Python value (bool, iteration) while tracing."""


class InvalidArgumentError(GraphcError, ValueError):
    """A graph assertion failed, or a compiled function got bad runtime input."""


class NotFoundError(GraphcError, FileNotFoundError):
    """A SavedModel or checkpoint path that does not exist: a GraphcError (API.md: graphc's
    own errors) that is also the OSError TF raises for a missing SavedModel
    ("SavedModel file does not exist at ...")."""


class ResourceExhaustedError(GraphcError, MemoryError):
    """An op's result does not fit in memory (as TF's ResourceExhaustedError)."""


class RetracingWarning(UserWarning):
    """A gc.function keeps tracing new graphs; the message says which argument and the fix."""


class DtypeChangeError(GraphcError, ValueError, TypeError):
    """A loop variable changes dtype across iterations, or the branches of a tensor `if`
    give one variable two dtypes: a ValueError (API.md) that is also a TypeError (what TF
    raises for it), so code written against either catches it."""


class PredicateError(GraphcError, TypeError, ValueError):
    """A tensor condition (`if`, `while`, gc.cond) that is not a scalar bool: a TypeError
    (a value of the wrong type) that is also the ValueError TF's AutoGraph raises for it
    ("condition of if statement expected to be `tf.bool` scalar")."""


class StructureError(GraphcError, ValueError, TypeError):
    """The branches of a tensor `if` (or a loop's iterations) give a value different
    structures, or a value that cannot be graph state (None, an arbitrary object): TF raises
    TypeError for some of these and ValueError for others, so this is both."""


class InputSignatureError(GraphcError, ValueError, TypeError):
    """An argument's shape does not fit a gc.function's input_signature: a ValueError
    (API.md) that is also a TypeError (what TF raises for it), as DtypeChangeError."""


class AssignDtypeError(GraphcError, TypeError, ValueError):
    """A value of another dtype assigned to a Variable: a TypeError as graphc's other dtype
    errors, and the ValueError TF raises for it."""
