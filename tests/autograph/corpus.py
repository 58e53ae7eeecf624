"""The differential corpus: small functions with control flow, each with argument sets.

Every function runs in plain Python and through @gc.function, with tensor arguments and
with Python arguments; results must match exactly (see corpus_base and harness).
"""
from . import (corpus_attrs, corpus_branches, corpus_calls, corpus_closures,  # noqa: F401
               corpus_compare, corpus_iteration, corpus_loop_options, corpus_loops,
               corpus_mixed, corpus_state)  # (they register cases)
from .corpus_base import CORPUS  # noqa: F401
from .corpus_calls import Scaler  # noqa: F401  (used by the CLI test as corpus:Scaler)
