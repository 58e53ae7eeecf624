"""gc.debugging.check_numerics and assert_equal/assert_less/assert_greater as TF 2.21's
tf.debugging ones: eagerly they raise InvalidArgumentError at once; in a compiled function
(numpy and auto backends, kernels forced) when it runs, naming the user's line as graphc's
other run-time asserts do; known while tracing they raise then, as TF."""
import inspect

import numpy as np
import pytest

import graphc as gc
from tf_ops_helpers import f32, forced, tf_grad_agrees

D = gc.debugging
IAE = gc.errors.InvalidArgumentError


def _line(fn, text):
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(src) if text in s)


def test_check_numerics_as_tf():
    np.testing.assert_array_equal(D.check_numerics(gc.constant([1.0, 2.0]), "ok").numpy(),
                                  [1, 2])
    # TF's words: "<message> : Tensor had NaN values" (NaN checked before Inf)
    with pytest.raises(IAE, match="bad : Tensor had NaN values"):
        D.check_numerics(gc.constant([np.inf, np.nan]), "bad")
    with pytest.raises(IAE, match="bad : Tensor had Inf values"):
        D.check_numerics(gc.constant([1.0, -np.inf]), "bad")
    with pytest.raises(TypeError, match="floating"):          # TF: no int CheckNumerics
        D.check_numerics(gc.constant([1, 2]), "bad")


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_check_numerics_in_a_compiled_function_names_the_line(backend):
    def fn(x):
        y = gc.math.log(x) * 1.0 + 0.0
        return D.check_numerics(y, "log of x") * 2.0 + 1.0
    f = gc.function(fn, backend=backend)
    np.testing.assert_allclose(f(f32([1.0, np.e])).numpy(), [1.0, 3.0], rtol=1e-6)
    with pytest.raises(IAE, match="log of x : Tensor had NaN values") as info:
        f(f32([1.0, -1.0]))
    assert f"test_tf_ops_debugging.py:{_line(fn, 'check_numerics')}" in str(info.value)


def test_check_numerics_checks_its_gradient_as_tf():
    tf_grad_agrees(lambda x: D.check_numerics(x, "m"), f32([1, 2]), [1, 2], [2])
    # TF: "Not a number (NaN) or infinity (Inf) values detected in gradient. m"
    with pytest.raises(IAE, match="detected in gradient. m : Tensor had Inf values"):
        tf_grad_agrees(lambda x: D.check_numerics(x, "m") * gc.constant([1.0, np.inf]),
                       f32([1, 2]), [1, np.inf], [2])


def test_asserts_pass_and_fail_eagerly_as_tf():
    assert D.assert_equal(gc.constant([1, 2]), [1, 2]) is None
    assert D.assert_greater(gc.constant([1, 2]), 0) is None
    assert D.assert_greater(gc.zeros([0]), 1.0) is None            # empty passes
    # TF's words
    with pytest.raises(IAE, match=r"Condition x == y did not hold. Indices of first 1 "
                       r"different values: \[\[1\]\] Corresponding x values: \[2\]"):
        D.assert_equal(gc.constant([1, 2]), [1, 3])
    with pytest.raises(IAE, match=r"hey Condition x < y did not hold. First 2 elements of "
                       r"x: \[1 2\]"):
        D.assert_less(gc.constant([1, 2]), 2, message="hey")
    with pytest.raises(IAE, match="x < y"):                        # NaN fails a comparison
        D.assert_less(gc.constant([1.0, np.nan]), 3.0)


def test_assert_argument_errors():
    with pytest.raises(ValueError, match="incompatible shapes"):    # TF: Incompatible shapes
        D.assert_equal(gc.constant([1, 2]), [1, 2, 3])
    with pytest.raises(TypeError, match="different dtypes"):        # TF: expected a float
        D.assert_equal(gc.constant([1.0, 2.0]), gc.constant([1, 2]))
    with pytest.raises(TypeError, match="fractional"):
        D.assert_equal(gc.constant([1, 2]), 1.5)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
@pytest.mark.parametrize("check, bad", [
    (D.assert_equal, [1.0, 3.0]), (D.assert_less, [1.0, 2.0]), (D.assert_greater, [3.0, 0.5])])
def test_asserts_fail_at_run_time_at_the_user_s_line(backend, check, bad):
    def fn(x):
        check(x, gc.constant([1.0, 2.0]) * 0.0 + gc.constant([1.0, 1.5]), message="mine")
        return x * 2.0
    f = gc.function(fn, backend=backend)
    good = {D.assert_equal: [1.0, 1.5], D.assert_less: [0.0, 1.0],
            D.assert_greater: [2.0, 2.0]}[check]
    np.testing.assert_array_equal(f(f32(good)).numpy(), f32(good) * 2)
    with pytest.raises(IAE, match="mine Condition x") as info:
        f(f32(bad))
    assert f"test_tf_ops_debugging.py:{_line(fn, 'check(x')}" in str(info.value)


def test_an_assert_known_while_tracing_fails_then_as_tf():
    @gc.function
    def fn():
        D.assert_less(gc.constant([1.0, 3.0]), 2.0)
        return 1
    with pytest.raises(IAE, match="x < y did not hold") as info:
        fn()
    assert f"test_tf_ops_debugging.py:{_line(fn.python_function, 'assert_less')}" \
        in str(info.value)


def test_unused_checks_still_run():
    @gc.function
    def fn(x):
        D.check_numerics(x, "unused")        # its result is dropped: it still runs, as TF's
        return x + 1.0
    with pytest.raises(IAE, match="unused : Tensor had NaN"):
        fn(f32([np.nan]))


def test_checks_with_kernels_forced(numba_forced):
    def fn(x):
        D.assert_greater(x * 1.0 + 1.0, 0.0)
        return D.check_numerics(x * 2.0 + 1.0, "m") * 3.0 - 1.0
    forced(numba_forced, fn, f32([8, 14]), f32([1, 2]))
    f = gc.function(fn, backend="auto")
    with pytest.raises(IAE, match="x > y"):
        f(f32([-2.0, 1.0]))
