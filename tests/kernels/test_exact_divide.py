"""exact.ifloordiv / exact.imod: numpy's integer // and % in compiled loops, emitted in place."""
import itertools
import warnings

import numpy as np
import pytest
from numba import njit

import graphc as gc
from graphc.kernels.cpu.scalar import ifloordiv, imod

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@njit(error_model="numpy")
def _mod(a, b):
    return imod(a, b)


@njit(error_model="numpy")
def _floordiv(a, b):
    return ifloordiv(a, b)


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_edge_values_give_numpys_results(dt):
    info = np.iinfo(dt)
    vals = [v for v in (info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 3, 7, info.max - 1,
                        info.max) if info.min <= v <= info.max]
    vals = [dt(v) for v in vals]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # numpy's own x // 0
        for a, b in itertools.product(vals, vals):
            for fn, ref in ((_mod, np.mod), (_floordiv, np.floor_divide)):
                if b == 0:
                    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
                        fn(a, b)
                    continue
                assert dt(fn(a, b)) == ref(a, b), (fn, a, b)


@pytest.mark.usefixtures("numba_forced")
@pytest.mark.parametrize("dtype", [gc.int32, gc.int64])
def test_compiled_loop_mod_and_floordiv_agree_with_eager(numba_forced, dtype):
    def body(n, k):
        s = gc.constant(0, dtype)
        i = gc.constant(-50, dtype)
        while i < n:
            s += i * i % 7 + i // k - i % k
            i += 1
        return s

    n, k = gc.constant(400, dtype), gc.constant(-3, dtype)
    want = body(n, k).numpy()
    f = gc.function(body, backend="numba")
    with numba_forced.expect(loops=True):
        assert f(n, k).numpy() == want
    zero = gc.constant(0, dtype)
    with pytest.raises(gc.errors.InvalidArgumentError) as eager:
        body(n, zero)
    with pytest.raises(gc.errors.InvalidArgumentError) as compiled:
        f(n, zero)
    assert str(eager.value).startswith("floordiv: integer division by zero")
    assert str(compiled.value).startswith("floordiv: integer division by zero")
    assert "test_exact_divide.py" in str(compiled.value)       # the user's line
