"""gc.map_fn: TF 2.21's tf.map_fn semantics, eagerly and compiled (numpy backend, and
backend="auto" with kernels forced). Expected values are TF 2.21's on the same inputs
(run with /work/tfenv), written as literals."""
import contextlib

import numpy as np
import pytest

import graphc as gc
from graphc.runtime.graph import walk

MODES = ["eager", "numpy", "auto"]


@pytest.fixture(params=MODES)
def run(request):
    """run(fn, *args): fn eagerly, or compiled on the mode's backend (auto: kernels forced;
    `with run.expect():` asserts that compiled code ran)."""
    mode = request.param
    forced = request.getfixturevalue("numba_forced") if mode == "auto" else None

    def call(fn, *args):
        f = fn if mode == "eager" else gc.function(fn, backend=mode)
        return f(*args)
    call.mode = mode
    call.expect = forced.expect if forced else contextlib.nullcontext
    return call


def check(t, value, dtype, shape):
    assert t.dtype == dtype and tuple(t.shape) == shape
    assert t.numpy().tolist() == value


X = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def test_rows_and_row_sums(run):
    x = gc.constant(X)
    with run.expect():      # the loop runs interpreted (TensorArrays); the exp after it fused
        out = run(lambda x: gc.exp(gc.map_fn(lambda r: gc.sin(r) * 2 + 1, x) - 1), x)
    want = np.exp(np.sin(np.float32(X)) * np.float32(2) + np.float32(1) - np.float32(1))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    check(run(lambda x: gc.map_fn(lambda r: r * 2, x), x),
          [[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]], gc.float32, (3, 2))
    check(run(lambda x: gc.map_fn(gc.reduce_sum, x), x), [3.0, 7.0, 11.0], gc.float32, (3,))


@pytest.mark.parametrize("signature", [
    dict(fn_output_signature=gc.float32), dict(dtype=gc.float32),
    dict(fn_output_signature=gc.TensorSpec([], gc.float32)), dict(fn_output_signature="float32")])
def test_output_dtype_from_the_signature(run, signature):
    out = run(lambda x: gc.map_fn(lambda r: gc.cast(r, gc.float32), x, **signature),
              gc.constant([1, 2]))
    check(out, [1.0, 2.0], gc.float32, (2,))                  # TF: [1., 2.] float32


def test_nests_in_and_out(run):
    a, b = gc.constant([1, 2]), gc.constant([3, 4])
    check(run(lambda a, b: gc.map_fn(lambda t: t[0] * t[1], (a, b), fn_output_signature=gc.int32),
              a, b), [3, 8], gc.int32, (2,))
    d = run(lambda a, f: gc.map_fn(lambda d: {"a": d["a"] + 1, "b": d["b"] * 2},
                                   {"a": a, "b": f}), a, gc.constant([1.0, 2.0]))
    check(d["a"], [2, 3], gc.int32, (2,))
    check(d["b"], [2.0, 4.0], gc.float32, (2,))
    p, q = run(lambda x: gc.map_fn(lambda r: (r, r * 2.0), x,
                                   fn_output_signature=(gc.float32, gc.float32)),
               gc.constant([1.0, 2.0]))
    check(p, [1.0, 2.0], gc.float32, (2,))
    check(q, [2.0, 4.0], gc.float32, (2,))


def test_numpy_elems_and_python_results(run):
    check(run(lambda x: gc.map_fn(lambda r: r * 2, x), np.arange(3.0)),
          [0.0, 2.0, 4.0], gc.float64, (3,))                  # TF keeps float64
    x = gc.constant([1.0, 2.0])
    check(run(lambda x: gc.map_fn(lambda r: 1.0, x), x), [1.0, 1.0], gc.float32, (2,))
    check(run(lambda x: gc.map_fn(lambda r: 1, x, fn_output_signature=gc.float32), x),
          [1.0, 1.0], gc.float32, (2,))


def test_variable_elems_are_read(run):
    v = gc.Variable([1.0, 2.0])
    check(run(lambda: gc.map_fn(lambda r: r * 2, v)), [2.0, 4.0], gc.float32, (2,))


# -- zero elements ---------------------------------------------------------------------------

def test_empty_elems(run):
    # TF eager: fn never runs; without a shape in the signature the result is [0]
    z = gc.zeros([0, 3])
    check(run(lambda x: gc.map_fn(lambda r: r * 2, x), z), [], gc.float32, (0,))
    check(run(lambda x: gc.map_fn(gc.reduce_sum, x), z), [], gc.float32, (0,))
    check(run(lambda x: gc.map_fn(gc.reduce_sum, x, fn_output_signature=gc.float32), z),
          [], gc.float32, (0,))
    check(run(lambda x: gc.map_fn(lambda r: r[:2], x,
                                  fn_output_signature=gc.TensorSpec([2], gc.float32)), z),
          [], gc.float32, (0, 2))                             # TF: shape (0, 2)
    check(run(lambda x: gc.map_fn(lambda r: r, x), gc.zeros([0], gc.int32)), [], gc.int32, (0,))


def test_empty_elems_with_a_run_time_first_dimension():
    @gc.function(input_signature=[gc.TensorSpec([None, 3])])
    def f(x):
        return (gc.map_fn(lambda r: r * 2, x),
                gc.map_fn(lambda r: r * 2, x, fn_output_signature=gc.TensorSpec([3])),
                gc.map_fn(gc.reduce_sum, x))
    a, b, c = f(gc.ones([2, 3]))
    assert a.numpy().tolist() == b.numpy().tolist() == [[2.0] * 3] * 2
    assert c.numpy().tolist() == [3.0, 3.0]

    @gc.function(input_signature=[gc.TensorSpec([None, 3])])
    def g(x):
        return (gc.map_fn(lambda r: r * 2, x, fn_output_signature=gc.TensorSpec([3])),
                gc.map_fn(gc.reduce_sum, x))
    b, c = g(gc.zeros([0, 3]))
    assert b.shape == (0, 3) and c.shape == (0,)
    # eagerly [0] (TF's eager map_fn), which a [None, 3] result cannot be: raise, saying how
    with pytest.raises(gc.errors.InvalidArgumentError,
                       match=r"fn_output_signature=gc.TensorSpec\(\[3\], gc.float32\)"):
        f(gc.zeros([0, 3]))
    assert f.tracing_count == 1


# -- errors ------------------------------------------------------------------------------------

def test_bad_elems(run):
    with pytest.raises(ValueError, match="same first dimension.*2.*3"):
        run(lambda a, b: gc.map_fn(lambda t: t[0], (a, b)), gc.constant([1, 2]),
            gc.constant([1, 2, 3]))                           # TF: ValueError
    with pytest.raises(ValueError, match="rank >= 1"):
        run(lambda x: gc.map_fn(lambda t: t, x), gc.constant(3.0))   # TF: ValueError
    with pytest.raises(ValueError, match="holds no tensor"):
        run(lambda: gc.map_fn(lambda t: t, []))
    with pytest.raises(ValueError, match="rank >= 1"):        # a list is a nest: 3 scalars
        run(lambda: gc.map_fn(lambda t: t, [1, 2, 3]))
    with pytest.raises(TypeError, match="callable"):
        run(lambda x: gc.map_fn(3, x), gc.constant([1.0]))


def test_bad_results(run):
    ints, floats = gc.constant([1, 2]), gc.constant([1.0, 2.0])
    # TF: InvalidArgumentError (TensorArray dtype); here a DtypeChangeError naming the fix
    with pytest.raises(gc.errors.DtypeChangeError, match="fn_output_signature"):
        run(lambda x: gc.map_fn(lambda r: gc.cast(r, gc.float32), x), ints)
    with pytest.raises(TypeError, match="bool"):
        run(lambda x: gc.map_fn(lambda r: r > 1, x, fn_output_signature=gc.float32), ints)
    with pytest.raises(ValueError, match="structure"):      # TF: ValueError
        run(lambda x: gc.map_fn(lambda r: (r, r * 2.0), x), floats)
    with pytest.raises(ValueError, match="structure"):
        run(lambda a, b: gc.map_fn(lambda t: t[0] * t[1], (a, b)), ints, ints)
    with pytest.raises(TypeError, match="structure"):       # TF: TypeError (list for tuple)
        run(lambda x: gc.map_fn(lambda r: [r, r], x, fn_output_signature=(gc.float32,) * 2),
            floats)
    with pytest.raises(ValueError, match=r"shape \[\].*\[2\]"):    # TF: ValueError
        run(lambda x: gc.map_fn(lambda r: r, x, fn_output_signature=gc.TensorSpec([2])),
            floats)
    with pytest.raises(ValueError, match="does not match"):  # TF: ValueError / InvalidArgument
        run(lambda x: gc.map_fn(lambda r: gc.range(r), x), ints)


def test_first_dimensions_known_only_at_run_time_are_checked():
    @gc.function(input_signature=[gc.TensorSpec([None, 3]), gc.TensorSpec([None])])
    def f(x, y):
        return gc.map_fn(lambda t: t[0] * t[1], (x, y), fn_output_signature=gc.float32)
    assert f(gc.ones([2, 3]), gc.ones([2])).numpy().tolist() == [[1.0] * 3] * 2
    # TF's tf.function reads 2 of y's 3 elements silently; eagerly it raises
    with pytest.raises(gc.errors.InvalidArgumentError,
                       match=r"same first dimension, but elems\[1\] differs from elems\[0\]"):
        f(gc.ones([2, 3]), gc.ones([3]))

    @gc.function(input_signature=[gc.TensorSpec([None]), gc.TensorSpec([2])])
    def g(x, y):
        return gc.map_fn(lambda t: t[0] * t[1], (x, y), fn_output_signature=gc.float32)
    assert g(gc.ones([2]), gc.ones([2])).numpy().tolist() == [1.0, 1.0]
    with pytest.raises(gc.errors.InvalidArgumentError, match=r"elems\[0\] differs from elems\[1\]"):
        g(gc.ones([3]), gc.ones([2]))


# -- tracing ---------------------------------------------------------------------------------

def _op_types(cf):
    return [op.type for op in walk(cf.graph)]


def test_one_while_loop_traced_once_for_every_length():
    seen = []

    @gc.function(input_signature=[gc.TensorSpec([None, 2])])
    def f(x):
        return gc.map_fn(lambda r: seen.append(1) or gc.tanh(r) * 2.0, x)
    for n in (1, 5, 40):
        x = np.linspace(-1, 1, 2 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_allclose(f(x).numpy(), np.tanh(x) * 2, rtol=1e-6)
    assert f.tracing_count == 1 and len(seen) == 1      # fn traced once: a loop, not unrolled
    types = _op_types(f.concrete_functions()[0])
    assert types.count("while") == 1 and types.count("tanh") == 1


def test_static_length_is_not_unrolled():
    f = gc.function(lambda x: gc.map_fn(gc.exp, x))
    f(gc.ones([3])), f(gc.ones([50]))
    short, long = (_op_types(cf) for cf in f.concrete_functions())
    assert short == long and short.count("while") == 1


def module_level_fn(x):
    if x > 2.0:          # a tensor condition: AutoGraph converts fn (as TF's map_fn does)
        return x * 10.0
    return x


def test_fn_is_converted_in_converted_code():
    @gc.function
    def f(x):
        return gc.map_fn(module_level_fn, x)
    assert f(gc.constant([1.0, 3.0])).numpy().tolist() == [1.0, 30.0]     # TF: [1., 30.]
    assert gc.map_fn(module_level_fn, gc.constant([1.0, 3.0])).numpy().tolist() == [1.0, 30.0]

    @gc.function(autograph=False)
    def g(x):
        return gc.map_fn(module_level_fn, x)
    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError):         # as TF
        g(gc.constant([1.0, 3.0]))


def test_nested_map_fn_and_in_a_converted_loop(run):
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    out = run(lambda x: gc.map_fn(lambda r: gc.map_fn(lambda e: e * e, r), x), x)
    assert out.numpy().tolist() == [[1.0, 4.0], [9.0, 16.0]]

    def rows(x):
        acc = gc.zeros([2])
        for r in x:
            acc += gc.map_fn(lambda e: e * 2.0, r)
        return acc
    assert run(rows, x).numpy().tolist() == [8.0, 12.0]
