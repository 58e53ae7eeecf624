"""gc.custom_gradient inside control flow (converted `if`/`for`, gc.cond, gc.while_loop:
the gradient rules replay the branch or body, meeting the custom_gradient op there), its
errors, and what a finished trace and a SavedModel keep of it. Expected values are
TensorFlow 2.21's on the same inputs, as literals."""
import os
import textwrap

import numpy as np
import pytest

import graphc as gc


@gc.custom_gradient
def log1pexp(x):
    e = gc.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))      # uses the forward's e (replayed in loops)
    return gc.math.log(1 + e), grad


def loop(x, n):
    with gc.GradientTape() as tape:
        tape.watch(x)
        h = x
        for _ in gc.range(n):                     # a while node: n known at run time
            if gc.reduce_sum(h) > 0:
                h = log1pexp(h) * 0.5
            else:
                h = h * 2.0
    return tape.gradient(h, x)


def explicit(x):
    with gc.GradientTape() as tape:
        tape.watch(x)
        _, h = gc.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, log1pexp(h) * 0.5),
                             [0, x])
        c = gc.cond(gc.reduce_sum(h) > 0, lambda: log1pexp(h * x), lambda: h)
    return tape.gradient(c, x)


def reference_loop(x, n):
    """d/dx of the same loop, by the chain rule in float64."""
    g = 1.0
    for _ in range(n):
        g *= 0.5 / (1 + np.exp(-x))
        x = np.log1p(np.exp(x)) * 0.5
    return g


@pytest.mark.parametrize("backend", ["eager", "numpy", "auto"])
def test_in_converted_loops_branches_and_while_loop_cond(backend, request):
    f = (lambda fn: fn) if backend == "eager" else (lambda fn: gc.function(fn, backend=backend))
    # auto: kernels forced (conftest's numba_forced), asserting that compiled code ran
    counted = request.getfixturevalue("numba_forced").expect() if backend == "auto" \
        else _nothing()
    with counted:
        got = [float(f(loop)(gc.constant(3.0), gc.constant(n))) for n in (0, 1, 3)]
        both = float(f(explicit)(gc.constant(3.0)))
    # TF: 1.0, 0.47628707, 0.06871833 for n = 0, 1, 3; 0.6994933 for `explicit`
    np.testing.assert_allclose(got, [1.0, 0.47628707, 0.06871833], rtol=1e-6)
    np.testing.assert_allclose(got, [reference_loop(3.0, n) for n in (0, 1, 3)], rtol=1e-6)
    np.testing.assert_allclose(both, 0.6994933, rtol=1e-6)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_grad_fn_is_called_when_the_gradient_is_built_at_trace_time():
    calls = []

    @gc.custom_gradient
    def f(x):
        def grad(dy):
            calls.append("grad")
            return dy * 3.0
        return x * x, grad

    @gc.function
    def step(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
            calls.append("forward done")
        return tape.gradient(y, x)
    assert [float(step(gc.constant(v))) for v in (1.0, 2.0)] == [3.0, 3.0]
    assert calls == ["forward done", "grad"] and step.tracing_count == 1


def test_recompute_grad_in_a_loop_replays_its_inputs():
    w = gc.Variable([0.3, -0.2])
    block = gc.recompute_grad(lambda x: gc.tanh(x * w) * x)

    def run(fn):
        def f(x, n):
            with gc.GradientTape() as tape:
                tape.watch(x)
                h = x
                for _ in gc.range(n):
                    h = fn(h) + x
                r = gc.reduce_sum(h ** 2)
            return tape.gradient(r, [x, w])
        return f
    x, n = gc.constant([1.0, 2.0]), gc.constant(3)
    plain = run(lambda h: gc.tanh(h * w) * h)(x, n)
    for got in (run(block)(x, n), gc.function(run(block))(x, n)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(plain), rtol=1e-6)


def test_autograph_converts_f_itself(tmp_path):
    # AutoGraph needs source: f's `if` on a tensor becomes a cond inside the custom function
    path = tmp_path / "cg_source.py"
    path.write_text(textwrap.dedent("""
        import graphc as gc

        @gc.custom_gradient
        def leaky(x):
            if gc.reduce_sum(x) > 0:
                y = x * 2.0
            else:
                y = x * 0.5
            return y, lambda dy: dy * 10.0

        def f(x):
            with gc.GradientTape() as tape:
                tape.watch(x)
                y = leaky(x)
            return y, tape.gradient(y, x)
    """))
    import importlib.util
    spec = importlib.util.spec_from_file_location("cg_source", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    f = gc.function(mod.f)
    for x, y in ((1.0, 2.0), (-1.0, -0.5)):
        assert [float(v) for v in f(gc.constant(x))] == [y, 10.0]


# -- errors ----------------------------------------------------------------------------------

@gc.custom_gradient
def too_few(x, y):
    return x * y, lambda u: u


@gc.custom_gradient
def wrong_shape(x):
    return x * 2.0, lambda u: gc.ones([3])


@gc.custom_gradient
def wrong_dtype(x):
    return x * 2.0, lambda u: gc.cast(u, gc.float64)


def _grad_of(fn, *args):
    def g(*xs):
        with gc.GradientTape() as tape:
            tape.watch(xs[0])
            y = fn(*xs)
        return tape.gradient(y, xs[0])    # the line the error names
    return g


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("fn, args, kind, message", [
    (too_few, (1.0, 2.0), ValueError,
     "custom_gradient function expected to return 2 gradients, but returned 1 instead"),
    (wrong_shape, ([1.0, 2.0],), ValueError, "gradient of shape \\[3\\] for its argument 0, "
     "of shape \\[2\\]"),
    (wrong_dtype, (1.0,), TypeError, "float64 gradient for its argument 0, which is float32"),
])
def test_bad_grad_fn_results_name_f_grad_fn_and_the_lines(compiled, fn, args, kind, message):
    g = _grad_of(fn)
    g = gc.function(g) if compiled else g
    with pytest.raises(kind, match=message) as info:
        g(*[gc.constant(a) for a in args])
    text = str(info.value)
    assert f"'{fn.__name__}' called at {__file__}" in text
    assert f"gradient computed at {__file__}" in text and "in g)" in text


def test_f_must_return_a_result_and_a_grad_fn():
    @gc.custom_gradient
    def no_grad_fn(x):
        return x * 2.0
    with pytest.raises(TypeError, match="'no_grad_fn' must return \\(result, grad_fn\\)"):
        no_grad_fn(gc.constant(1.0))


def test_wrong_number_of_variable_gradients():
    v = gc.Variable(2.0)

    @gc.custom_gradient
    def f(x):
        return x * v, lambda u, variables=None: (u * v, [])
    with pytest.raises(ValueError, match="returned 0 variable gradients but 'f' uses 1"):
        _grad_of(f)(gc.constant(1.0))


# -- finished traces and saving -----------------------------------------------------------------

def test_a_trace_keeps_only_identities_that_passes_remove():
    cf = gc.function(lambda x: log1pexp(x)).get_concrete_function(gc.constant(1.0))
    types = [op.type for op in cf.graph.operations]
    assert "custom_gradient" not in types and types.count("custom_gradient_output") == 1
    from graphc.runtime.passes import optimize
    assert "custom_gradient_output" not in [op.type for op in optimize(cf.graph).operations]


class Model(gc.Module):
    def __init__(self):
        super().__init__()
        self.w = gc.Variable([1.0, 2.0])

    @gc.function(input_signature=[gc.TensorSpec([2], gc.float32)])
    def __call__(self, x):
        @gc.custom_gradient
        def f(x):
            return log1pexp(x * self.w), lambda u, variables=None: (u, [u])
        return f(x)


def test_saved_forward_is_exact_and_its_gradient_raises(tmp_path):
    m = Model()
    x = gc.constant([1.0, 100.0])
    before = m(x).numpy()
    gc.saved_model.save(m, os.fspath(tmp_path))
    loaded = gc.saved_model.load(os.fspath(tmp_path))
    np.testing.assert_array_equal(loaded(x).numpy(), before)
    np.testing.assert_allclose(before, [np.log1p(np.e), np.inf], rtol=1e-6)
    with gc.GradientTape() as tape:       # replayed op by op: must not differentiate f's ops
        tape.watch(x)
        y = loaded(x)
    with pytest.raises(LookupError, match="custom_gradient function 'f'"):
        tape.gradient(y, x)
    with gc.GradientTape() as tape:       # the original function: its Python runs again
        tape.watch(x)
        y = m(x)
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 1.0]
