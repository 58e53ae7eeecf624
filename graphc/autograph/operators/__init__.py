"""The AutoGraph runtime: the `ag__` namespace converted code calls into."""
from .asserts import assert_
from .calls import call, call_initial_value
from .conditionals import if_exp, if_stmt
from .lint import TraceTimeSideEffectWarning
from .logical import and_, compare, not_, or_
from .iteration import LazyRange
from .loops import for_stmt, while_stmt
from .undefined import Undefined, UndefinedReturnValue, ld, ldu

__all__ = ["assert_", "call", "call_initial_value", "if_exp", "if_stmt", "and_", "compare",
           "not_", "or_", "for_stmt", "while_stmt", "Undefined", "UndefinedReturnValue", "ld",
           "ldu", "LazyRange", "TraceTimeSideEffectWarning"]
