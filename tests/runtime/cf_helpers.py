"""Shared by the cond / while_loop tests: compile without AutoGraph, and run both ways."""
import collections
import functools

from hypothesis import strategies as st

import graphc as gc

function = functools.partial(gc.function, autograph=False)
Pair = collections.namedtuple("Pair", "a b")
small_floats = st.floats(-100, 100, width=32)


def both(fn, *args):
    """fn run eagerly and as a compiled function, on tensors made from `args`."""
    tensors = [gc.constant(a) for a in args]
    return fn(*tensors), function(fn)(*tensors)
