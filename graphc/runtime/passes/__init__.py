"""Graph -> Graph optimizing passes, run before a graph is lowered to fused kernels.

Each pass is a pure function `run(graph) -> Graph` in its own module: it never mutates its
input, keeps the graph's inputs, captures and outputs (cond/while bodies may lose captures
they no longer read), recurses into cond/while subgraphs itself, and never moves, drops or
merges an op with effects (`has_effects`), so the relative program order of prints, random
draws, variable reads/writes and tensor-list ops is preserved.
The numpy backend runs graphs unoptimized (it is the reference); compiling backends call
`optimize()`.
"""
import os
import sys
import warnings

from ... import config
from ..verify import GraphVerificationError, verify
from . import algebraic, constant_folding, cse, dce, shape_specialization
from ._rewrite import has_effects

# Order matters:
# 1. shape specialization first: it turns shape(x)/size(x) into constants and makes
#    dynamic reshape/broadcast_to static, which exposes more constants and identities;
# 2. constant folding then collapses everything computable from constants alone;
# 3. algebraic simplification needs those folded constants to spot x*1, x+0, ...;
# 4. CSE runs after simplification has canonicalized operands, so more ops compare equal
#    (and identical constants produced by folding merge);
# 5. DCE last removes whatever the earlier passes left without a user.
PIPELINE = [
    ("shape_specialization", shape_specialization.run),
    ("constant_folding", constant_folding.run),
    ("algebraic_simplification", algebraic.run),
    ("cse", cse.run),
    ("dce", dce.run),
]

PASS_NAMES = [name for name, _ in PIPELINE]


def optimize(graph, dump=None):
    """Run every pass of PIPELINE in order and return the optimized graph.

    `dump`: a pass name or "all" prints the graph text to stderr after that pass (or every
    pass); None reads GRAPHC_DUMP. With GRAPHC_VERIFY set (the test suite sets it), each
    result is checked by verify() and a failure names the pass.
    """
    dump = config.dump_after() if dump is None else dump
    if dump and dump != "all" and dump not in PASS_NAMES:
        warnings.warn(f"GRAPHC_DUMP={dump!r} names no pass; use 'all' or one of "
                      f"{', '.join(PASS_NAMES)}", stacklevel=2)
    check = bool(os.environ.get("GRAPHC_VERIFY"))
    for name, run in PIPELINE:
        graph = run(graph)
        if check:
            verify_after(name, graph)
        if dump == "all" or dump == name:
            print(f"// graphc: graph {graph.name} after pass {name}\n{graph}", file=sys.stderr)
    return graph


def verify_after(pass_name, graph):
    """verify(graph), with the failing pass named in the error."""
    try:
        return verify(graph)
    except GraphVerificationError as e:
        raise GraphVerificationError(f"after pass {pass_name}: {e}") from e


__all__ = ["PIPELINE", "PASS_NAMES", "optimize", "has_effects", "verify_after"]
