"""The trace-time side-effect lint: runtime warnings with the user's file:line, and the same
findings as comments in to_code output."""
import functools
import random
import time
import warnings

import numpy as np
import pytest

import graphc as gc
from graphc.autograph import TraceTimeSideEffectWarning

from .harness import marker_line

HERE = __file__

line_of = functools.partial(marker_line, HERE)


def at(w, marker):
    """The warning points at this file's line marked `# marker`."""
    return w.filename == HERE and w.lineno == line_of(marker)


def lint_warnings(fn, *args):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        gc.function(fn)(*args)
    return [w for w in rec if issubclass(w.category, TraceTimeSideEffectWarning)]


def prints_tensor(x):
    print("value:", x)  # print-line
    return x * 2.0


def test_print_of_tensor_warns_with_line_and_suggests_gc_print(capsys):
    ws = lint_warnings(prints_tensor, gc.constant(1.0))
    assert len(ws) == 1
    msg = str(ws[0].message)
    assert "gc.print" in msg and HERE not in msg     # the warning itself shows the line
    assert at(ws[0], "print-line")
    assert "value:" in capsys.readouterr().out      # it still prints, once, while tracing


def prints_python_value(x):
    print("tracing with", 3)
    return x


def test_print_of_python_values_does_not_warn():
    assert lint_warnings(prints_python_value, gc.constant(1.0)) == []


def appends_in_loop(x, n):
    seen = []
    s = 0.0
    for i in range(n):
        seen.append(x[i])  # append-line
        s = s + x[i]
    return s


def test_append_to_outer_list_in_tensor_loop_is_an_error_not_a_warning():
    # the list cannot grow once per iteration of a graph loop: an error at the line
    with pytest.raises(ValueError) as e:
        lint_warnings(appends_in_loop, gc.constant([1.0, 2.0]), gc.constant(2))
    msg = str(e.value)
    assert f":{line_of('append-line')}" in msg and "TensorArray" in msg


def test_append_in_python_loop_does_not_warn():
    ws = lint_warnings(appends_in_loop, gc.constant([1.0, 2.0]), 2)
    assert ws == []
    assert float(gc.function(appends_in_loop)(gc.constant([1.0, 2.0]), 2)) == 3.0


def numpy_on_tensor(x):
    y = np.square(x)  # numpy-line
    return y


def test_numpy_call_on_tensor_warns_before_failing():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(TypeError):
            gc.function(numpy_on_tensor)(gc.constant(2.0))
    ws = [w for w in rec if issubclass(w.category, TraceTimeSideEffectWarning)]
    assert len(ws) == 1 and at(ws[0], "numpy-line") and "gc." in str(ws[0].message)


def random_and_time(x):
    r = random.random()  # random-line
    t = time.time()  # time-line
    return x + r * 0.0 + (t - t)


def test_random_and_time_calls_warn():
    ws = lint_warnings(random_and_time, gc.constant(1.0))
    assert len(ws) == 2
    assert any(at(w, "random-line") and "gc.random" in str(w.message) for w in ws)
    assert any(at(w, "time-line") and "baked" in str(w.message) for w in ws)


def big_unrolled_loop(x):
    for i in range(200):  # unroll-line
        x = x + 1.0
    return x


def small_unrolled_loop(x):
    for i in range(3):
        x = x + 1.0
    return x


def test_large_python_range_with_tensor_ops_warns_once():
    ws = lint_warnings(big_unrolled_loop, gc.constant(0.0))
    assert len(ws) == 1
    msg = str(ws[0].message)
    assert at(ws[0], "unroll-line") and "gc.range(200)" in msg and "200" in msg
    assert lint_warnings(small_unrolled_loop, gc.constant(0.0)) == []


def test_warnings_are_once_per_line():
    def prints_once(x):
        print(x)
        return x
    f = gc.function(prints_once)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        f(gc.constant(1.0))
        f(gc.constant([1.0, 2.0]))          # a second trace
    assert len([w for w in rec if issubclass(w.category, TraceTimeSideEffectWarning)]) == 1


@pytest.mark.parametrize("fn,marker,needle", [
    (prints_tensor, "print-line", "gc.print"),
    (numpy_on_tensor, "numpy-line", "np.square"),
    (random_and_time, "random-line", "gc.random"),
    (big_unrolled_loop, "unroll-line", "gc.range(200)"),
])
def test_lint_findings_appear_as_comments_in_to_code(fn, marker, needle):
    src = gc.autograph.to_code(fn)
    comments = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("# graphc lint")]
    assert any(f"(line {line_of(marker)})" in c and needle in c for c in comments), src
    compile(src, "<to_code>", "exec")


class Holder:
    def __init__(self):
        self.last = None


_HOLDER = Holder()


def stores_attribute_in_branch(x):
    if x > 0:  # store-if
        _HOLDER.last = x
    return x


def stores_attribute_python_branch(x, flag):
    if flag:
        _HOLDER.last = x
    return x


def test_attribute_first_given_a_tensor_in_one_tensor_branch_is_an_error_at_the_if():
    # None before the `if`, a tensor in one branch: no graph value can be both
    _HOLDER.last = None
    with pytest.raises(ValueError) as e:
        lint_warnings(stores_attribute_in_branch, gc.constant(1.0))
    msg = str(e.value)
    assert "_HOLDER.last" in msg and f":{line_of('store-if')}" in msg
    assert _HOLDER.last is None          # nothing leaked from the failed trace


def test_attribute_assigned_in_tensor_branch_is_carried_without_warning():
    _HOLDER.last = gc.constant(-5.0)
    try:
        f = gc.function(lambda x: (stores_attribute_in_branch(x), _HOLDER.last)[1])
        assert lint_warnings(stores_attribute_python_branch, gc.constant(1.0), True) == []
        _HOLDER.last = gc.constant(-5.0)
        assert float(f(gc.constant(2.0))) == 2.0
        assert float(f(gc.constant(-3.0))) == -5.0
    finally:
        _HOLDER.last = None
    src = gc.autograph.to_code(stores_attribute_in_branch)
    assert "graphc lint" not in src and "_HOLDER.last" in src


def prints_formatted_tensor(x):
    print(f"x = {x}")  # fstring-line
    return x


def test_print_of_a_formatted_tensor_warns():
    ws = lint_warnings(prints_formatted_tensor, gc.constant(1.0))
    assert len(ws) == 1 and at(ws[0], "fstring-line")


class LazyDense:
    """TF's lazy-build idiom with numpy initial values: a Variable's initial value is
    computed once by design, so the np.random / random calls in its arguments are not
    flagged; np.random elsewhere still is."""
    def __init__(self):
        self.w = self.b = None

    @gc.function
    def __call__(self, x):
        if self.w is None:
            self.w = gc.Variable(np.random.default_rng(0).normal(size=(3,)).astype(np.float32))
            self.b = gc.Variable(initial_value=np.float32(random.Random(1).random()) * 0.0)
        noise = np.random.default_rng(2).normal()  # noise-line
        return gc.reduce_sum(self.w * x) + self.b + noise * 0.0


def test_np_random_in_a_variable_constructor_does_not_warn_elsewhere_it_does():
    layer = LazyDense()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = layer(gc.constant(np.ones(3, np.float32)))
    ws = [w for w in rec if issubclass(w.category, TraceTimeSideEffectWarning)]
    assert len(ws) == 1 and at(ws[0], "noise-line") and "np.random" in str(ws[0].message)
    want = np.random.default_rng(0).normal(size=(3,)).astype(np.float32).sum()
    np.testing.assert_allclose(float(got), want, rtol=1e-6)


def test_variable_initial_values_carry_no_lint_comment_in_to_code():
    src = gc.autograph.to_code(LazyDense.__call__.python_function)
    comments = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("# graphc lint")]
    assert len(comments) == 1 and f"(line {line_of('noise-line')})" in comments[0], src
    assert src.count("call_initial_value(") >= 3, src   # default_rng, normal, astype, ...
