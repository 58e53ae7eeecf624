"""gc.autograph.experimental.set_loop_options, as TF's directive: lifted onto the graph loop
whose body it starts (shape_invariants, maximum_iterations), checked as TF checks it, and
of no effect elsewhere. Values marked TF's were computed with TensorFlow 2.21 on the same
programs (tf.range / tf.TensorShape for gc.range / a list)."""
import functools

import numpy as np
import pytest

import graphc as gc
from graphc.autograph import AutoGraphWarning
from graphc.autograph.experimental import set_loop_options

from .harness import marker_line

HERE = __file__
line_of = functools.partial(marker_line, HERE)
BACKENDS = ["numpy", "auto"]


def grow_bounded(n):
    acc = gc.constant([0])
    for i in gc.range(n):  # grow-loop
        gc.autograph.experimental.set_loop_options(
            shape_invariants=[(acc, [None])], maximum_iterations=3)
        acc = gc.concat([acc, [i]], 0)
    return acc


@pytest.mark.parametrize("backend", BACKENDS)
def test_maximum_iterations_bounds_a_for_over_range(backend):
    f = gc.function(grow_bounded, backend=backend)
    np.testing.assert_array_equal(f(gc.constant(10)).numpy(), [0, 0, 1, 2])   # TF's
    np.testing.assert_array_equal(f(gc.constant(2)).numpy(), [0, 0, 1])       # TF's
    assert f.tracing_count == 1
    # eagerly the directive does nothing (TF: only a staged loop uses the options)
    np.testing.assert_array_equal(grow_bounded(gc.constant(5)).numpy(), [0, 0, 1, 2, 3, 4])


@pytest.mark.parametrize("backend", BACKENDS)
def test_maximum_iterations_bounds_a_while(backend):
    @gc.function(backend=backend)
    def f(n):
        acc = gc.constant([0])
        i = 0
        while i < n:
            set_loop_options(shape_invariants=[(acc, (None,))], maximum_iterations=2)
            acc = gc.concat([acc, [i]], 0)
            i += 1
        return acc, i
    acc, i = f(gc.constant(5))
    np.testing.assert_array_equal(acc.numpy(), [0, 0, 1])   # TF's
    assert int(i) == 2                                      # TF's


@pytest.mark.parametrize("maximum, expected", [(2, 1), (None, 10), (0, 0), (-1, 0)])
def test_maximum_iterations_values(maximum, expected):
    @gc.function
    def f(n, m):
        s = 0
        for i in gc.range(n):
            set_loop_options(maximum_iterations=m)
            s += i
        return s
    m = maximum if maximum is None else gc.constant(maximum)
    assert int(f(gc.constant(5), m)) == expected                    # TF's (5 iterations: 10)
    assert int(f(gc.constant(5), maximum)) == expected


def test_maximum_iterations_over_a_tensor_axis():
    @gc.function
    def f(x):
        s = 0.0
        for v in x:
            set_loop_options(maximum_iterations=2)
            s += v
        return s
    assert float(f(gc.constant([1.0, 2.0, 4.0]))) == 3.0     # TF's


def test_a_while_that_becomes_a_graph_loop_counts_its_python_iterations():
    # beyond TF (it refuses a loop whose test turns into a tensor): the bound counts the
    # iteration run in Python before `x` became a tensor
    @gc.function
    def f(n):
        x, k = 1, 0
        while x < 1000:
            set_loop_options(maximum_iterations=3)
            x = x * n
            k += 1
        return x, k
    x, k = f(gc.constant(2))
    assert (int(x), int(k)) == (8, 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_through_a_growing_loop(backend):
    @gc.function(backend=backend)
    def f(x, n):
        with gc.GradientTape() as tape:
            tape.watch(x)
            acc = gc.reshape(x, [1])
            for _ in gc.range(n):
                set_loop_options(shape_invariants=[(acc, [None])], maximum_iterations=4)
                acc = gc.concat([acc, acc[-1:] * x], 0)
            y = gc.reduce_sum(acc)
        return acc, tape.gradient(y, x)
    acc, g = f(gc.constant(2.0), gc.constant(10))
    np.testing.assert_array_equal(acc.numpy(), [2.0, 4.0, 8.0, 16.0, 32.0])   # TF's
    assert float(g) == sum(k * 2.0 ** (k - 1) for k in range(1, 6)) == 129.0  # TF's


# -- parallel_iterations and swap_memory: no effect, checked as TF checks them -----------

@pytest.mark.parametrize("value", [0, -1, "a", None, gc.constant(3)])
def test_parallel_iterations_must_be_positive(value):
    @gc.function
    def f(n):
        s = 0
        for i in gc.range(n):
            set_loop_options(parallel_iterations=value)  # parallel-line
            s += i
        return s
    with pytest.raises(TypeError, match="parallel_iterations must be a positive integer") as e:
        f(gc.constant(3))                                 # TF: TypeError for each of these
    assert f"{HERE}:{line_of('parallel-line')}" in str(e.value)


@pytest.mark.parametrize("parallel, swap", [(2.5, "x"), (True, None), (32, True), (1, 2.0)])
def test_accepted_parallel_iterations_and_swap_memory_change_nothing(parallel, swap):
    @gc.function
    def f(n):
        s = 0
        for i in gc.range(n):
            set_loop_options(parallel_iterations=parallel, swap_memory=swap)
            s += i
        return s
    assert int(f(gc.constant(3))) == 3                  # TF accepts these, same result


@pytest.mark.parametrize("value", [2.5, "a", gc.constant([2])])
def test_maximum_iterations_must_be_an_integer_scalar(value):
    @gc.function
    def f(n):
        s = 0
        for i in gc.range(n):
            set_loop_options(maximum_iterations=value)
            s += i
        return s
    # TF: TypeError for 2.5 and 'a'; a [1] tensor fails only when its graph runs
    with pytest.raises(TypeError, match="maximum_iterations must be an int"):
        f(gc.constant(5))


# -- where the directive has no effect -----------------------------------------------------

def test_in_a_python_loop_it_has_no_effect():
    @gc.function
    def f():
        acc = gc.constant([0])
        for i in range(3):
            set_loop_options(shape_invariants=[(acc, [None])], maximum_iterations=1)
            acc = gc.concat([acc, [i]], 0)
        return acc
    np.testing.assert_array_equal(f().numpy(), [0, 0, 1, 2])   # TF's


def test_outside_a_loop_it_warns_at_conversion_and_does_nothing():
    def f(x):
        set_loop_options(maximum_iterations=1)  # outside-line
        for i in gc.range(x):
            x += 1
        return x
    with pytest.warns(AutoGraphWarning, match="first statement in the body") as w:
        out = gc.function(f)(gc.constant(1))
    assert int(out) == 2                                       # TF's (after its warning)
    assert (w[0].filename, w[0].lineno) == (HERE, line_of("outside-line"))
    assert "# graphc lint" in gc.autograph.to_code(f)


def test_not_first_in_the_body_warns_and_the_shape_error_says_where_it_goes():
    def f(n):
        acc = gc.constant([0])
        for i in gc.range(n):  # late-loop
            acc = gc.concat([acc, [i]], 0)
            set_loop_options(shape_invariants=[(acc, [None])])
        return acc
    with pytest.warns(AutoGraphWarning, match="first statement"):
        with pytest.raises(ValueError, match="set_loop_options") as e:
            gc.function(f)(gc.constant(3))
    assert f"{HERE}:{line_of('late-loop')}" in str(e.value)


def test_a_user_function_of_the_same_name_is_called():
    calls = []

    def set_loop_options(**kw):
        calls.append(kw)

    @gc.function
    def f(n):
        s = 0
        for i in gc.range(n):
            set_loop_options(maximum_iterations=1)
            s += i
        return s
    assert int(f(gc.constant(4))) == 6
    assert calls == [{"maximum_iterations": 1}]     # traced once, as a Python call



def test_an_unknown_option_is_python_s_type_error():
    def f(n):
        s = 0
        for i in gc.range(n):
            set_loop_options(max_iterations=1)  # unknown-option
            s += i
        return s
    with pytest.warns(AutoGraphWarning, match="unexpected keyword argument") as w:
        with pytest.raises(TypeError, match="max_iterations"):
            gc.function(f)(gc.constant(4))
    assert [x.lineno for x in w if x.category is AutoGraphWarning] == [line_of("unknown-option")]
    with pytest.raises(TypeError, match="max_iterations"):
        f(gc.constant(4))                                        # as eagerly

# -- errors --------------------------------------------------------------------------------

def test_shape_change_without_invariant_names_set_loop_options_and_while_loop():
    @gc.function
    def f(n):
        acc = gc.constant([0])
        for i in gc.range(n):  # no-invariant-loop
            acc = gc.concat([acc, [i]], 0)
        return acc
    with pytest.raises(ValueError) as e:
        f(gc.constant(3))
    msg = str(e.value)
    assert "'acc'" in msg and f"{HERE}:{line_of('no-invariant-loop')}" in msg
    assert "set_loop_options(shape_invariants=[(acc, [None])])" in msg
    assert "gc.while_loop: shape_invariants" in msg


def test_invariant_for_a_variable_the_loop_does_not_carry():
    # TF ignores such an entry silently; graphc says which one
    @gc.function
    def f(n):
        acc = gc.constant([0])
        other = gc.constant([5])
        for i in gc.range(n):  # other-loop
            set_loop_options(shape_invariants=[(other, [None])])
            acc = acc + 1
        return acc
    with pytest.raises(ValueError, match="'other', which is not a variable") as e:
        f(gc.constant(3))
    assert f"{HERE}:{line_of('other-loop')}" in str(e.value)


@pytest.mark.parametrize("invariant", [[None, None], [3], []])
def test_invariant_that_does_not_fit_the_initial_shape(invariant):
    @gc.function
    def f(n):
        acc = gc.constant([0, 1])
        for i in gc.range(n):  # misfit-loop
            set_loop_options(shape_invariants=[(acc, invariant)])
            acc = acc + 1
        return acc
    # TF: "'acc' has shape (2,) before the loop, which does not conform with the shape
    # invariant (None, None)."
    with pytest.raises(ValueError, match="'acc'.* has shape \\[2\\] before the loop, which "
                       "does not conform") as e:
        f(gc.constant(3))
    assert f"{HERE}:{line_of('misfit-loop')}" in str(e.value)


def test_body_outgrowing_its_invariant():
    @gc.function
    def f(n):
        m = gc.zeros([1, 2])
        for _ in gc.range(n):  # outgrow-loop
            set_loop_options(shape_invariants=[(m, [None, 2])])
            m = gc.concat([m, m], 1)
        return m
    with pytest.raises(ValueError, match="'m' has shape \\[None, 2\\] on entry but "
                       "\\[None, 4\\]") as e:
        f(gc.constant(2))
    assert f"{HERE}:{line_of('outgrow-loop')}" in str(e.value)


@pytest.mark.parametrize("make, message", [
    (lambda s: "abc", "a list of \\(variable, shape\\) pairs"),
    (lambda s: [(s,)], "a list of \\(variable, shape\\) pairs"),
    (lambda s: [(s, "abc")], "shape invariant for 's' must be a list or tuple")])
def test_malformed_shape_invariants(make, message):
    @gc.function
    def f(n):
        s = 0
        for i in gc.range(n):
            set_loop_options(shape_invariants=make(s))
            s += i
        return s
    with pytest.raises(TypeError, match="set_loop_options at .*" + message):
        f(gc.constant(3))


# -- to_code -------------------------------------------------------------------------------

def test_to_code_moves_the_options_onto_the_loop():
    src = gc.autograph.to_code(grow_bounded)
    assert "set_loop_options" not in src           # the call left the body, as in TF
    assert "'shape_invariants': [(acc, [None])]" in src
    assert "'maximum_iterations': 3" in src
    assert f"'options_line': {line_of('grow-loop') + 1}" in src
