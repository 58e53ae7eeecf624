"""Each corpus function: plain Python == @gc.function, exactly (value, dtype, shape, bits),
called with tensor arguments and with Python arguments, on the numpy backend and on the
numba backend with kernels forced (asserting compiled code ran); and its to_code output
compiles and gives the same result."""
import pytest

import graphc as gc
from graphc.runtime.graph import walk
from .corpus import CORPUS
from .corpus_base import python_arg_sets
from .harness import as_expected, assert_same, bounded, fresh, to_graph_args, tolerance
from .roundtrip import run_to_code

TENSOR_CASES = [(fn, args, "tensor") for fn, arg_sets in CORPUS for args in arg_sets]
TENSOR_IDS = [f"{fn.__name__}-{i}" for fn, arg_sets in CORPUS for i in range(len(arg_sets))]
PY_CASES, PY_IDS = [], []
for _fn, _sets in CORPUS:
    for _i, _args in enumerate(python_arg_sets(_fn, _sets)):
        PY_CASES.append((_fn, _args, "python"))
        PY_IDS.append(f"{_fn.__name__}-py{_i}")
ALL_CASES, ALL_IDS = TENSOR_CASES + PY_CASES, TENSOR_IDS + PY_IDS

# A corpus program computes what its Python computes: a warning that a write inside a
# converted block happens only while tracing contradicts that, so it fails the test.
pytestmark = pytest.mark.filterwarnings(
    "error::graphc.autograph.operators.lint.TraceTimeSideEffectWarning")

# Programs (name, form) whose graph has real ops, none of which the numba backend
# compiles: their numba run must still agree, and must enter no compiled code (so a stale
# entry is noticed).
NO_COMPILED_CODE = {
    ("assert_in_loop", "tensor"): "an assert is an effectful op: the loop holding it runs "
        "in the interpreter, and its body's adds are single ops, not fused groups",
    ("nested_loop_defined_names", "tensor"): "the outer body checks that the inner loop "
        "defined `inner` (an assert op), so the loops run in the interpreter",
}
# Graphs made of these op types only hold nothing to compile (a program whose Python
# control flow folded everything into constants, or that returns its argument).
NOTHING_TO_COMPILE = {"constant", "identity"}
# Graphs using TensorArray ops (tensor_list_*) need not run compiled code: loops.py lowers
# no TensorArray op, so a loop that writes one runs in the interpreter (their other ops
# may still fuse; that is allowed, not required).
MAY_STAY_INTERPRETED_PREFIX = "tensor_list_"

# The corpus must keep at least this many programs (raise it when adding programs).
MIN_PROGRAMS = 211


def test_corpus_is_large_enough():
    assert len(CORPUS) >= MIN_PROGRAMS
    names = [fn.__name__ for fn, _ in CORPUS]
    assert len(set(names)) == len(names), "two corpus programs share a name"


def _numpy_run(fn, args):
    with bounded(fn.__name__):
        return gc.function(fn, backend="numpy")(*to_graph_args(fresh(args)))


@pytest.mark.parametrize("fn,args,form", ALL_CASES, ids=ALL_IDS)
def test_python_and_graph_agree(fn, args, form):
    expected = as_expected(fn(*fresh(args)))
    assert_same(_numpy_run(fn, args), expected, fn.__name__, tolerance(fn))


@pytest.mark.parametrize("fn,args,form", TENSOR_CASES, ids=TENSOR_IDS)
def test_to_code_roundtrip(fn, args, form):
    expected = as_expected(fn(*fresh(args)))
    rebuilt = run_to_code(fn)
    with bounded(fn.__name__):
        got = gc.function(rebuilt, autograph=False)(*to_graph_args(fresh(args)))
    assert_same(got, expected, fn.__name__, tolerance(fn))


def _compiled_code_not_required(cf):
    types = {op.type for op in walk(cf.graph)}
    return types <= NOTHING_TO_COMPILE or any(
        t.startswith(MAY_STAY_INTERPRETED_PREFIX) for t in types) or _varying_loop_state(cf)


def _varying_loop_state(cf):
    """A `while` whose state has a None dimension (a set_loop_options shape invariant):
    compiled loops compute only with static shapes, so it runs in the interpreter (allowed,
    not required; the body's other ops may still fuse)."""
    return any(op.type == "while" and any(None in getattr(v.type, "shape", ())
                                          for v in op.attrs["body"].inputs)
               for op in walk(cf.graph))


def _plan_compiles(cf):
    """Whether the numba plan of `cf` holds a fused group or a compiled loop."""
    plan = cf.graph._numba_plan
    return any(step[4] for step in plan.steps) or any(r is not None for _, r, _ in plan.loops)


@pytest.mark.parametrize("fn,args,form", ALL_CASES, ids=ALL_IDS)
def test_numba_backend_agrees(fn, args, form, numba_forced):
    from graphc.kernels.stats import COUNTS
    expected = as_expected(fn(*fresh(args)))
    # the numpy backend first: a compiled loop that never ends cannot be interrupted
    assert_same(_numpy_run(fn, args), expected, f"{fn.__name__} (numpy backend, before "
                "numba)", tolerance(fn))
    f = gc.function(fn, backend="numba")
    graph_args = to_graph_args(fresh(args))
    cf = f.get_concrete_function(*graph_args)
    if (fn.__name__, form) in NO_COMPILED_CODE:
        before = COUNTS.snapshot()
        got = f(*graph_args)
        assert COUNTS.snapshot() == before, \
            f"{fn.__name__} now runs compiled code: drop it from NO_COMPILED_CODE"
    elif _compiled_code_not_required(cf):
        got = f(*graph_args)
    elif form == "python":
        # Python arguments unroll loops into a few scalar ops, often with no two to fuse:
        # the plan must run exactly the compiled code it holds (none, or some)
        before = COUNTS.snapshot()
        got = f(*graph_args)
        ran = COUNTS.snapshot() != before
        assert ran == _plan_compiles(cf), (fn.__name__, ran)
    else:
        with numba_forced.expect():
            got = f(*graph_args)
    assert_same(got, expected, fn.__name__, tolerance(fn))
    assert f.tracing_count == 1
