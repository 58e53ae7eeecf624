"""vecmath helpers compile as IR for inlining only: no machine code or wrappers of their own,
and callers that inline them compute what numpy computes."""
import numba
import numpy as np
import pytest

from graphc.kernels import vecmath as vm
from graphc.kernels.vecmath import bits, linking


def test_inline_only_library_has_no_machine_code_and_is_cached():
    helper = numba.njit(error_model="numpy")(lambda x: x * x + 1.0)
    cres = linking.compile_inline_only(helper, (numba.float64,))
    assert isinstance(cres.library, linking.InlineOnlyLibrary)
    assert cres.library.get_llvm_str().count("define ") >= 1     # the IR is there
    assert not helper.overloads                # numba's own compile path never ran
    with pytest.raises(RuntimeError, match="inlining only"):
        cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    assert linking.compile_inline_only(helper, (numba.float64,)) is cres


def test_inlined_helper_runs_inside_a_caller_and_agrees():
    helper = numba.njit(error_model="numpy")(lambda x, y: x * y - x)
    call = bits.inlined(helper, 2)
    assert call.inlined_dispatcher is helper

    @numba.njit(error_model="numpy")
    def caller(a, b):
        out = np.empty_like(a)
        for i in range(a.size):
            out[i] = call(a[i], b[i])
        return out

    a = np.array([1.5, -0.0, np.inf, np.nan, 3.0], np.float32)
    b = np.array([2.0, 5.0, 0.0, 1.0, -1e38], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = a * b - a
    np.testing.assert_array_equal(caller(a, b), want)
    assert not helper.overloads
    # inlined: the caller's optimized IR calls no function named after the helper
    ir_text = next(iter(caller.inspect_llvm().values()))
    assert not [ln for ln in ir_text.splitlines() if " call " in ln and "lambda" in ln]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_define_lowers_to_the_implementation_without_a_wrapper(dtype):
    @numba.njit(error_model="numpy")
    def loop(x):
        e, t = np.empty_like(x), np.empty_like(x)
        for i in range(x.size):
            e[i], t[i] = vm.exp(x[i]), vm.tanh(x[i])
        return e, t

    x = np.linspace(-20, 20, 301).astype(dtype)
    e, t = loop(x)
    wide = x.astype(np.longdouble)
    assert vm.max_ulp_error(e, np.exp(wide).astype(dtype))[0] <= 4
    assert vm.max_ulp_error(t, np.tanh(wide).astype(dtype))[0] <= 4
    fn_types = {type(k[0]).__name__ for k in linking._compiled}
    assert fn_types == {"CPUDispatcher"}       # only dispatchers, compiled for inlining
