"""Each corpus function: plain Python on numpy == @gc.function on tensors; and its to_code
output compiles and gives the same result."""
import pytest

import graphc as gc
from .corpus import CORPUS
from .harness import as_expected, assert_same, check, to_graph_args
from .roundtrip import run_to_code

CASES = [(fn, args) for fn, arg_sets in CORPUS for args in arg_sets]
IDS = [f"{fn.__name__}-{i}" for fn, arg_sets in CORPUS for i in range(len(arg_sets))]


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 80


@pytest.mark.parametrize("fn,args", CASES, ids=IDS)
def test_python_and_graph_agree(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", CASES, ids=IDS)
def test_to_code_roundtrip(fn, args):
    expected = as_expected(fn(*args))
    rebuilt = run_to_code(fn)
    assert_same(gc.function(rebuilt, autograph=False)(*to_graph_args(args)), expected,
                fn.__name__)


@pytest.mark.parametrize("fn,args", CASES, ids=IDS)
def test_numba_backend_agrees(fn, args):
    pytest.importorskip("numba")
    expected = as_expected(fn(*args))
    assert_same(gc.function(fn, backend="numba")(*to_graph_args(args)), expected, fn.__name__)
