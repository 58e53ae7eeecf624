"""GradientTape semantics, as in TF: watching, variables, persistence, unconnected sources,
nested tapes, stop_gradient, output_gradients; eagerly and inside @gc.function."""
import numpy as np
import pytest

import graphc as gc


def both(fn):
    """Run `fn` eagerly and compiled; both must give the same numbers."""
    eager = fn()
    traced = gc.function(fn)()
    for a, b in zip(eager, traced):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    return eager


def test_watch_and_auto_watched_variables():
    w = gc.Variable([1.0, 2.0])
    frozen = gc.Variable([3.0, 4.0], trainable=False)
    x = gc.constant([0.5, -1.0])

    def fn():
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.reduce_sum(w * x * frozen)
        return tape.gradient(y, [x, w, frozen])
    gx, gw, gf = both(fn)
    np.testing.assert_allclose(gx, [3.0, 8.0])
    np.testing.assert_allclose(gw, [1.5, -4.0])
    assert gf is None                       # non-trainable variables are not auto-watched


def test_watch_accessed_variables_false_and_explicit_watch():
    w = gc.Variable(3.0)
    v = gc.Variable(5.0)

    def fn():
        with gc.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(v)
            y = w * v
        return tape.gradient(y, [w, v])
    gw, gv = both(fn)
    assert gw is None
    assert float(gv) == 3.0
    with gc.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        _ = w * v
    assert tape.watched_variables() == (v,)


def test_unconnected_sources_and_zero_option():
    x, z = gc.constant(2.0), gc.constant(7.0)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * x
    assert tape.gradient(y, z) is None
    assert float(tape.gradient(y, z, unconnected_gradients="zero")) == 0.0
    with pytest.raises(ValueError, match="unconnected_gradients must be 'none' or 'zero'"):
        tape.gradient(y, z, unconnected_gradients="nan")


def test_non_persistent_tape_raises_on_second_gradient():
    x = gc.constant(3.0)

    def fn():
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent=True"):
        fn()
    with pytest.raises(RuntimeError, match="persistent=True"):
        gc.function(fn)()


def test_persistent_tape_gives_several_gradients():
    def fn():
        x = gc.constant(3.0)
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            z = y * x
        return tape.gradient(y, x), tape.gradient(z, x), tape.gradient(z, y)
    gy, gz, gzy = both(fn)
    assert float(gy) == 6.0 and float(gz) == 27.0 and float(gzy) == 3.0


def test_nested_tapes_give_second_derivatives():
    def fn(x):
        with gc.GradientTape() as outer:
            outer.watch(x)
            with gc.GradientTape() as inner:
                inner.watch(x)
                y = gc.sin(x) * x
            dy = inner.gradient(y, x)
        d2y = outer.gradient(dy, x)
        return dy, d2y
    x = np.array([0.3, 1.7])
    for run in (fn, gc.function(fn)):
        dy, d2y = run(gc.constant(x))
        np.testing.assert_allclose(dy, np.cos(x) * x + np.sin(x), rtol=1e-6)
        np.testing.assert_allclose(d2y, -np.sin(x) * x + 2 * np.cos(x), rtol=1e-6)


def test_stop_gradient_and_output_gradients():
    x = gc.constant([1.0, 2.0])

    def fn():
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * gc.stop_gradient(x * x)
            both_ = [x * 2.0, x * x]
        g1 = tape.gradient(y, x)
        g2 = tape.gradient(both_, x, output_gradients=[gc.constant([1.0, 0.0]),
                                                        gc.constant([0.0, 10.0])])
        return g1, g2
    g1, g2 = both(fn)
    np.testing.assert_allclose(g1, [1.0, 4.0])           # d/dx of x * const(x^2)
    np.testing.assert_allclose(g2, [2.0, 40.0])


def test_nested_sources_keep_their_structure():
    a, b = gc.constant(1.0), gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch([a, b])
        y = a * b
    got = tape.gradient(y, {"a": a, "pair": (b, a)})
    assert set(got) == {"a", "pair"} and isinstance(got["pair"], tuple)
    assert float(got["a"]) == 2.0 and float(got["pair"][0]) == 1.0


def test_int_tensors_are_not_watched_and_have_no_gradient():
    i = gc.constant(3)
    with gc.GradientTape() as tape:
        tape.watch(i)
        y = gc.cast(i, gc.float32) * 2.0
    assert tape.gradient(y, i) is None


def test_stop_recording_and_reset():
    x = gc.constant(2.0)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
        z = x * 3.0
    assert tape.gradient(y, x) is None
    assert float(tape.gradient(z, x)) == 3.0
    tape.reset()
    assert tape.gradient(z, x) is None


def test_errors_name_the_problem():
    x = gc.constant(1.0)
    with gc.GradientTape() as tape:
        with pytest.raises(TypeError, match="expected tensors or variables"):
            tape.watch("x")
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match="sources must be tensors or variables"):
        tape.gradient(y, [1.0])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(ValueError, match="2 output_gradients for 1 targets"):
        tape.gradient(y, x, output_gradients=[1.0, 2.0])


def test_eager_tape_sees_inside_compiled_calls():
    """Under an eager tape a compiled function runs its converted Python eagerly, so the
    gradient covers it (values agree with the compiled run)."""
    w = gc.Variable(2.0)

    @gc.function
    def f(x, n):
        return gc.while_loop(lambda i, h: i < n,
                             lambda i, h: (i + 1, gc.cond(h > 0, lambda: h * w,
                                                          lambda: h - 1.0)), [0, x])[1]
    x = gc.constant(3.0)
    compiled = float(f(x, gc.constant(3)))
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = f(x, gc.constant(3)) + x
    assert float(y) == compiled + 3.0
    gx, gw = tape.gradient(y, [x, w])          # y = x w^3 + x
    assert float(gx) == 9.0 and float(gw) == 36.0
    with gc.GradientTape() as tape:            # a paused tape leaves calls compiled
        with tape.stop_recording():
            f(x, gc.constant(2))
    assert f.tracing_count == 1


def test_integer_targets_and_a_source_as_its_own_target():
    x = gc.constant([1.0, 2.0])
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        n = gc.cast(x, gc.int32) * 2
        y = x * 3.0
    assert tape.gradient(n, x) is None
    np.testing.assert_array_equal(tape.gradient([n, y], x), [3.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(x, x), [1.0, 1.0])
    # a Variable target stands for itself (TF: its handle): d v / d v = 1, even unread
    v, w = gc.Variable([2.0, 3.0]), gc.Variable(1.0)
    with gc.GradientTape(persistent=True) as tape:
        v.assign(w * 2.0 + v)
    np.testing.assert_array_equal(tape.gradient(v, v), [1.0, 1.0])
    assert tape.gradient(v, w) is None
    np.testing.assert_array_equal(tape.gradient(v, [v], output_gradients=[gc.constant(
        [5.0, 6.0])])[0], [5.0, 6.0])


def test_jacobian_eager_and_compiled():
    def fn(x, w):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.sin(x) * w            # y_i = sin(x_i) w_i
            z = gc.reduce_sum(x)
        return tape.jacobian(y, [x, w]), z
    x = np.array([0.3, -1.0, 2.0])
    w = gc.Variable([1.0, 2.0, 3.0], dtype=gc.float64)
    for run in (fn, gc.function(fn)):
        (jx, jw), _ = run(gc.constant(x), w)
        np.testing.assert_allclose(jx, np.diag(np.cos(x) * [1.0, 2.0, 3.0]))
        np.testing.assert_allclose(jw, np.diag(np.sin(x)))
    m = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    with gc.GradientTape() as tape:
        tape.watch(m)
        sq = m * m
    assert tape.jacobian(sq, m).shape == (2, 2, 2, 2)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.jacobian(sq, m)


def test_iterating_a_tensor_under_a_tape_records_the_rows():
    """`for row in x` on a concrete tensor: TF's eager iteration slices x with ops the tape
    records; graphc yielded bare rows, so the gradient was None (compiled: the real one)."""
    x = gc.constant(np.arange(6, dtype=np.float32).reshape(3, 2))

    def body(x):
        acc = gc.zeros_like(x[0])
        for row in x:
            acc = acc + row * row
        return gc.reduce_sum(acc)

    @gc.function
    def inside(x):
        with gc.GradientTape() as t:
            t.watch(x)
            z = body(x)
        return t.gradient(z, x)
    for fn in (body, gc.function(body)):       # eagerly, and a function under an eager tape
        with gc.GradientTape() as t:
            t.watch(x)
            z = fn(x)
        g = t.gradient(z, x)
        assert g is not None
        np.testing.assert_allclose(g.numpy(), 2 * x.numpy())
    np.testing.assert_allclose(inside(x).numpy(), 2 * x.numpy())


@pytest.mark.parametrize("compiled", [False, True])
def test_persistent_tape_records_its_own_gradient_inside_its_block(compiled):
    """TF: gradient() of a persistent tape inside its `with` block is recorded by the tape,
    so a second gradient() of that gradient gives the second derivative (TF 2.21: 27, 18)."""
    def body(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x * x
            first = tape.gradient(y, x)
        return first, tape.gradient(first, x)
    run = gc.function(body, backend="numpy") if compiled else body
    first, second = run(gc.constant(3.0))
    assert (float(first), float(second)) == (27.0, 18.0)


def test_watched_variables_in_creation_order():
    """TF lists a tape's watched variables in the order they were created, not read."""
    a, b = gc.Variable(1.0), gc.Variable(2.0)
    with gc.GradientTape() as tape:
        _ = b * a
    assert tape.watched_variables() == (a, b)


@pytest.mark.parametrize("compiled", [False, True])
def test_batch_jacobian_as_tf(compiled):
    """TF's batch_jacobian: per-example Jacobians, [B] + target.shape[1:] + source.shape[1:]
    (the expected values are TF 2.21's, rounded)."""
    def body(x):
        w = gc.reshape(gc.constant(np.arange(12, dtype=np.float32) / 10), [3, 4])
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = gc.reshape(gc.tanh(x @ w), [2, 2, 2])
        return tape.batch_jacobian(y, x)
    run = gc.function(body, backend="numpy") if compiled else body
    jac = run(gc.constant(np.arange(6, dtype=np.float32).reshape(2, 3))).numpy()
    assert jac.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(jac, [
        [[[0.0, 0.02826, 0.05652], [0.00394, 0.01971, 0.03547]],
         [[0.00436, 0.01309, 0.02182], [0.00361, 0.00843, 0.01324]]],
        [[[0.0, 2e-05, 4e-05], [0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]],
        atol=2e-5)
