"""Random graphs round-trip exactly: the differential fuzzer's programs (every elementwise,
reduction, matmul, cast and where family, NaN/inf/-0.0 and integer-extreme inputs) and
hypothesis-drawn AutoGraph programs (nested cond/while, break/continue/return), traced,
serialized, rebuilt and run on numpy and numba: the same bits as the original graph."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from tests.autograph.test_random_programs import U, W, materialize as materialize_ag, program
from tests.autograph.harness import bounded, to_graph_args
from tests.reliability.fuzz_generator import generate
from tests.reliability.fuzz_run import materialize as materialize_fuzz
from .roundtrip import assert_same, roundtrip


def _outcome(cf, args):
    try:
        out = cf(*args)
    except Exception as e:  # noqa: BLE001 - a runtime error must be the same error
        return type(e), str(e).split(" at ")[0]
    return [t.numpy() for t in (out if isinstance(out, (list, tuple)) else [out])]


def _same_outcome(a, b):
    if isinstance(a, tuple):
        assert a == b
    else:
        assert_same(a, b)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("seed", range(24))
def test_fuzz_programs_round_trip(seed, backend, numba_forced):
    prog = generate(seed)
    fn = materialize_fuzz(prog)
    args = [gc.constant(a) for a in prog.arrays]
    try:
        cf = gc.function(fn, backend=backend, autograph=False).get_concrete_function(*args)
    except (TypeError, ValueError):
        return                       # the one program in 25 that its op rules refuse
    loaded = roundtrip(cf, backend)
    with np.errstate(all="ignore"):
        _same_outcome(_outcome(loaded, args), _outcome(cf, args))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(program(), st.sampled_from([-1.5, 0.25, 2.0]), st.sampled_from([-0.5, 1.0, 3.0]),
       st.integers(0, 3), st.sampled_from(["numpy", "numba"]))
def test_autograph_programs_round_trip(numba_forced, src, x, y, n, backend):
    fn = materialize_ag(src)
    args = to_graph_args((np.float32(x), np.float32(y), np.int32(n), U, W))
    cf = gc.function(fn, backend=backend).get_concrete_function(*args)
    loaded = roundtrip(cf, backend)
    with bounded("generated program:\n" + src):
        _same_outcome(_outcome(loaded, args), _outcome(cf, args))
