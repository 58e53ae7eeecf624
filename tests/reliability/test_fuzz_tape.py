"""Training-step programs (fuzz_tape.py: gc.nn ops, reductions, broadcasts over [n, 1] /
[1, k] / [k] inputs, gradients w.r.t. Variables and watched inputs) agree eagerly, on the
numpy backend and on numba with kernels forced. A fixed handful of seeds that ran clean,
in one child process under a timeout (the class of program that once sent LLVM into
endless optimization must fail this test, not stall the suite). Long runs and shrinking:
tools/fuzz_kernels.py."""
import numpy as np
import pytest

from .fuzz_tape import compare, generate, live, run_specs, source

# each has a GradientTape loss over a domain with a size-1 dim and a fused reduction
SEEDS = [1041, 1087, 1090, 1274, 1305, 1399]
TIMEOUT = 90        # per program: a hang guard far above the ~1-3 s compile


def test_fixed_seeds_agree_with_kernels_forced():
    results = run_specs([generate(s) for s in SEEDS], TIMEOUT)
    bad = [r for r in results if r["status"] != "ok"]
    assert not bad, bad
    assert all(r["kernels"] > 0 for r in results), results     # the kernels did run


def test_fixed_seeds_cover_the_class():
    for s in SEEDS:
        text = source(generate(s))
        assert "GradientTape" in text and "reduce_" in text, text
        assert "(n, 1)" in text or "(1, k)" in text, text


@pytest.mark.parametrize("want, got, what", [
    ([1.0, np.nan], [1.0, 2.0], "1/2 differ"),
    ([1.0, 2.0], [1.0, 2.01], "1/2 differ"),
    ([np.inf], [-np.inf], "1/1 differ"),
    ([1.0], None, "None vs"),
])
def test_comparison_catches(want, got, what):
    got = None if got is None else np.float32(got)
    assert what in compare(np.float32(want), got)


def test_comparison_allows_float32_rounding():
    assert compare(np.float32([1.0, np.nan, 100.0]), np.float32([1.00001, np.nan, 100.001])) \
        is None
    assert compare(None, None) is None


def test_a_program_that_does_not_return_is_a_hang_and_the_rest_still_run():
    stmts, _ = live(generate(1041))
    stmts[0][1] = "(__import__('time').sleep(60) or " + stmts[0][1] + ")"
    slow = dict(generate(1041), stmts=stmts)
    results = run_specs([slow, generate(1305)], timeout=3)
    assert [r["status"] for r in results] == ["hang", "ok"], results
