"""gc.saved_model.save / load: the object tree, every trace, variables, signatures; loaded
functions on numpy and numba, under a GradientTape, inside another gc.function, and saved
again; a model loaded in a fresh process after its source file is gone."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import graphc as gc
from graphc.saved_model.serialize import SerializeError

X = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], np.float32)


class Dense(gc.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name)
        rng = np.random.default_rng(0)
        self.w = gc.Variable(rng.standard_normal((n_in, n_out)).astype(np.float32))
        self.b = gc.Variable(np.zeros(n_out, np.float32))

    @gc.function
    def __call__(self, x):
        return gc.nn.relu(gc.matmul(x, self.w) + self.b)


class Model(gc.Module):
    def __init__(self):
        super().__init__()
        self.layers = [Dense(3, 4, "d0"), Dense(4, 2, "d1")]
        self.steps = gc.Variable(0, dtype=gc.int64, trainable=False)
        self.table = {"scale": gc.Variable(np.float32(2.0))}

    @gc.function(input_signature=[gc.TensorSpec([None, 3], gc.float32, name="x")])
    def predict(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
        return {"scores": h * self.table["scale"], "label": gc.argmax(h, axis=1)}

    @gc.function
    def count(self, n, twice=False):
        self.steps.assign_add(gc.cast(n, gc.int64) * (2 if twice else 1))
        return self.steps.read_value()


def _saved(tmp_path, backend="auto"):
    m = Model()
    m.count(gc.constant(1))                 # traces: (int32[]) twice=False
    m.count(gc.constant(2), twice=True)     # ... and twice=True
    m.layers[0](gc.constant(X))             # a method of a nested module, traced directly
    path = str(tmp_path / "model")
    gc.saved_model.save(m, path, signatures={"serving_default": m.predict})
    return m, gc.saved_model.load(path, backend=backend), path


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_loaded_functions_compute_what_the_original_does(tmp_path, backend, numba_forced):
    m, loaded, _ = _saved(tmp_path, backend)
    want = m.predict(X)
    if backend == "numba":
        with numba_forced.expect():          # kernels compile from the loaded graph
            got = loaded.predict(X)
    else:
        got = loaded.predict(X)
    np.testing.assert_array_equal(got["scores"].numpy(), want["scores"].numpy())
    np.testing.assert_array_equal(got["label"].numpy(), want["label"].numpy())
    np.testing.assert_array_equal(loaded.layers[0](gc.constant(X)).numpy(),
                                  m.layers[0](gc.constant(X)).numpy())


def test_object_tree_and_variables_come_back(tmp_path):
    m, loaded, _ = _saved(tmp_path)
    assert loaded.name == "model" and [l.name for l in loaded.layers] == ["d0", "d1"]
    np.testing.assert_array_equal(loaded.layers[1].w.numpy(), m.layers[1].w.numpy())
    assert loaded.steps.numpy() == m.steps.numpy() == 5
    assert loaded.table["scale"].numpy() == 2.0
    assert not loaded.steps.trainable
    assert len(loaded.trainable_variables) == len(m.trainable_variables) == 5


def test_loaded_functions_update_the_loaded_variables(tmp_path):
    m, loaded, _ = _saved(tmp_path)
    assert loaded.count(gc.constant(3)).numpy() == 8
    assert loaded.count(n=gc.constant(1), twice=True).numpy() == 10
    assert loaded.steps.numpy() == 10 and m.steps.numpy() == 5   # the original is untouched


def test_a_call_matching_no_trace_lists_the_saved_signatures(tmp_path):
    _, loaded, _ = _saved(tmp_path)
    with pytest.raises(ValueError, match=r"no saved trace.*int32\[\], bool False"):
        loaded.count(gc.constant(1.5))
    with pytest.raises(ValueError, match="no saved trace"):
        loaded.count(gc.constant(1), twice=3)
    with pytest.raises(TypeError, match="input_signature"):
        loaded.predict(np.ones((2, 3), np.int32))


def test_signatures_return_dicts_of_named_outputs(tmp_path):
    m, loaded, _ = _saved(tmp_path)
    serve = loaded.signatures["serving_default"]
    out = serve(x=X)
    assert set(out) == {"scores", "label"}
    np.testing.assert_array_equal(out["scores"].numpy(), m.predict(X)["scores"].numpy())
    np.testing.assert_array_equal(serve(X)["label"].numpy(), out["label"].numpy())  # as TF
    with pytest.raises(TypeError, match="takes 1 inputs.*got 2 positional"):
        serve(X, X)
    with pytest.raises(TypeError, match=r"\['x'\] both by position and by name"):
        serve(X, x=X)
    with pytest.raises(ValueError, match="must be TensorSpec"):
        serve(x=np.ones((2, 4), np.float32))


def test_single_function_signature_outputs_are_numbered(tmp_path):
    m = gc.Module()
    m.f = gc.function(lambda a, b: (a + b, a * b),
                      input_signature=[gc.TensorSpec([2]), gc.TensorSpec([2])])
    gc.saved_model.save(m, str(tmp_path), signatures=m.f)
    out = gc.saved_model.load(str(tmp_path)).signatures["serving_default"](a=[1.0, 2.0],
                                                                          b=[3.0, 4.0])
    assert sorted(out) == ["output_0", "output_1"]
    np.testing.assert_array_equal(out["output_1"].numpy(), [3.0, 8.0])


def test_signature_needs_an_input_signature(tmp_path):
    m = Model()
    with pytest.raises(ValueError, match="input_signature"):
        gc.saved_model.save(m, str(tmp_path), signatures={"c": m.count})


def test_gradient_tape_through_a_loaded_function(tmp_path):
    m, loaded, _ = _saved(tmp_path)

    def grads(model):
        with gc.GradientTape() as tape:
            loss = gc.reduce_sum(model.predict(X)["scores"] ** 2)
        return [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]

    for a, b in zip(grads(loaded), grads(m)):
        np.testing.assert_allclose(a, b, rtol=1e-6)

    @gc.function
    def inside(x):                         # a tape inside another trace
        with gc.GradientTape() as tape:
            loss = gc.reduce_sum(loaded.predict(x)["scores"] ** 2)
        return tape.gradient(loss, loaded.layers[0].w)
    np.testing.assert_allclose(inside(X).numpy(), _grad_w0(m), rtol=1e-6)


def _grad_w0(m):
    with gc.GradientTape() as tape:
        loss = gc.reduce_sum(m.predict(X)["scores"] ** 2)
    return tape.gradient(loss, m.layers[0].w).numpy()


def test_loaded_control_flow_under_a_tape(tmp_path):
    m = gc.Module()
    m.v = gc.Variable(np.float32(1.5))

    @gc.function(input_signature=[gc.TensorSpec([], gc.float32), gc.TensorSpec([], gc.int32)])
    def f(x, n):
        y = x * m.v
        for _ in gc.range(n):
            if y > 2.0:
                y = y * 0.5
            else:
                y = y * y
        return y
    m.f = f
    gc.saved_model.save(m, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path))
    for model in (m, loaded):
        with gc.GradientTape() as tape:
            y = model.f(gc.constant(1.25), gc.constant(3))
        g = tape.gradient(y, model.v)
        if model is m:
            want = (y.numpy(), g.numpy())
    assert (y.numpy(), g.numpy()) == want


def test_a_loaded_model_saves_again(tmp_path):
    m, loaded, _ = _saved(tmp_path)
    loaded.count(gc.constant(1))
    gc.saved_model.save(loaded, str(tmp_path / "again"))
    again = gc.saved_model.load(str(tmp_path / "again"))
    assert again.steps.numpy() == 6
    assert set(again.signatures) == {"serving_default"}
    np.testing.assert_array_equal(again.signatures["serving_default"](x=X)["scores"].numpy(),
                                  m.predict(X)["scores"].numpy())
    assert again.count(gc.constant(2), twice=True).numpy() == 10


def test_captured_globals_and_constants(tmp_path):
    counter = gc.Variable(0.0)               # not in the tree: saved as a captured variable
    table = gc.constant(np.arange(2000, dtype=np.float64))    # a big captured constant

    @gc.function
    def f(i):
        counter.assign_add(1.0)
        return gc.gather(table, i) + gc.cast(counter.read_value(), gc.float64)
    f(gc.constant([1, 1999]))
    m = gc.Module()
    m.f = f
    gc.saved_model.save(m, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path))
    np.testing.assert_array_equal(loaded.f(gc.constant([3, 5])).numpy(), [5.0, 7.0])
    assert counter.numpy() == 1.0


def test_what_cannot_be_saved_is_a_clear_error(tmp_path):
    import io
    m = gc.Module()
    m.f = gc.function(lambda x: gc.print(x, output_stream=io.StringIO()))
    m.f(gc.constant(1.0))
    with pytest.raises(SerializeError, match="output_stream"):
        gc.saved_model.save(m, str(tmp_path / "a"))
    m.g = gc.function(lambda x, obj: x + 1.0)
    del m.f
    m.g(gc.constant(1.0), object())
    with pytest.raises(SerializeError, match="Python object argument"):
        gc.saved_model.save(m, str(tmp_path / "b"))
    with pytest.raises(TypeError, match="gc.Module"):
        gc.saved_model.save(lambda: 0, str(tmp_path / "c"))


def test_load_in_a_fresh_process_after_the_source_is_deleted(tmp_path):
    src = tmp_path / "mymodel.py"
    src.write_text(textwrap.dedent("""
        import numpy as np
        import graphc as gc

        class Net(gc.Module):
            def __init__(self):
                super().__init__()
                self.w = gc.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))

            @gc.function(input_signature=[gc.TensorSpec([None, 3])])
            def __call__(self, x):
                if gc.reduce_sum(x) > 0.0:
                    y = gc.matmul(x, self.w)
                else:
                    y = -gc.matmul(x, self.w)
                return {"y": y}

        if __name__ == "__main__":
            import sys
            net = Net()
            gc.saved_model.save(net, sys.argv[1], signatures=net.__call__)
    """))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    out = str(tmp_path / "exported")
    subprocess.run([sys.executable, str(src), out], check=True, env=env, cwd=str(tmp_path))
    src.unlink()
    code = ("import sys, numpy as np, graphc as gc\n"
            "m = gc.saved_model.load(sys.argv[1])\n"
            "x = np.array([[1, 2, 3], [-4, -5, -6]], np.float32)\n"
            "assert 'mymodel' not in sys.modules\n"
            "print(m(x)['y'].numpy().tolist(), m.signatures['serving_default'](x=-x)['y']"
            ".numpy().tolist())\n")
    res = subprocess.run([sys.executable, "-c", code, out], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    x = np.array([[1, 2, 3], [-4, -5, -6]], np.float32)
    assert res.stdout.strip() == f"{(-(x @ w)).tolist()} {((-x) @ w).tolist()}"


def test_reserved_attribute_names_are_refused_at_save(tmp_path):
    m = gc.Module()
    m.signatures = gc.Variable(1.0)
    with pytest.raises(ValueError, match="'signatures'"):
        gc.saved_model.save(m, str(tmp_path))


def test_runtime_errors_of_loaded_graphs_point_at_the_saved_user_line(tmp_path):
    m = gc.Module()

    @gc.function(input_signature=[gc.TensorSpec([None], gc.float32)])
    def checked(x):
        assert gc.reduce_all(x > 0.0), "x must be positive"
        return gc.sqrt(x)
    m.f = checked
    line = checked.python_function.__code__.co_firstlineno + 2
    gc.saved_model.save(m, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path), backend="numpy")
    np.testing.assert_array_equal(loaded.f([4.0, 9.0]).numpy(), [2.0, 3.0])
    with pytest.raises(gc.errors.InvalidArgumentError,
                       match=rf"x must be positive.*test_saved_model.py:{line}"):
        loaded.f([4.0, -1.0])


def test_loaded_functions_from_several_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    m, loaded, _ = _saved(tmp_path)
    want = m.predict(X)["scores"].numpy()
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: loaded.predict(X)["scores"].numpy(), range(16)))
        counts = list(pool.map(lambda _: loaded.count(gc.constant(1)).numpy(), range(20)))
    for g in got:
        np.testing.assert_array_equal(g, want)
    assert sorted(counts) == list(range(6, 26)) and loaded.steps.numpy() == 25


def test_a_loaded_training_step_continues_like_the_original(tmp_path):
    """A compiled Adam step (slots, iteration count) saved after two steps: the loaded step
    and the original's next steps give the same bits, and leave the original alone."""
    class Trainer(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = gc.Variable(np.array([[0.5, -1.0], [2.0, 0.25]], np.float32))
            self.opt = gc.optimizers.Adam(0.1)

        @gc.function(backend="numpy")        # the same backend as the loaded copy: same bits
        def step(self, x, y):
            with gc.GradientTape() as tape:
                loss = gc.reduce_mean((gc.matmul(x, self.w) - y) ** 2)
            self.opt.apply_gradients([(tape.gradient(loss, self.w), self.w)])
            return loss

    x, y = gc.constant(X[:, :2]), gc.constant(X[:, 1:])
    t = Trainer()
    t.step(x, y)
    t.step(x, y)
    gc.saved_model.save(t, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path), backend="numpy")
    got = [loaded.step(x, y).numpy() for _ in range(3)]
    w_loaded = loaded.w.numpy().copy()
    want = [t.step(x, y).numpy() for _ in range(3)]
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    assert w_loaded.tobytes() == t.w.numpy().tobytes()


def test_signatures_inside_a_trace_and_under_a_tape(tmp_path):
    m, loaded, _ = _saved(tmp_path)
    serve = loaded.signatures["serving_default"]

    @gc.function
    def doubled(x):
        return serve(x=x)["scores"] * 2.0
    np.testing.assert_array_equal(doubled(gc.constant(X)).numpy(),
                                  m.predict(X)["scores"].numpy() * 2.0)
    with gc.GradientTape() as tape:
        loss = gc.reduce_sum(serve(x=X)["scores"] ** 2)
    np.testing.assert_allclose(tape.gradient(loss, loaded.layers[0].w).numpy(), _grad_w0(m),
                               rtol=1e-6)


def test_signatures_left_out_export_the_one_function_with_an_input_signature(tmp_path):
    """tf.saved_model.save: with `signatures` omitted, the object's single tf.function with an
    input_signature is exported as "serving_default"; with two or more, none is."""
    m = Model()                       # predict has an input_signature, count has none
    gc.saved_model.save(m, str(tmp_path / "one"))
    loaded = gc.saved_model.load(str(tmp_path / "one"))
    assert list(loaded.signatures) == ["serving_default"]
    out = loaded.signatures["serving_default"](x=X)
    np.testing.assert_array_equal(out["scores"].numpy(), m.predict(X)["scores"].numpy())

    m2 = gc.Module()
    m2.f = gc.function(lambda a: a + 1.0, input_signature=[gc.TensorSpec([2])])
    m2.g = gc.function(lambda a: a * 2.0, input_signature=[gc.TensorSpec([2])])
    gc.saved_model.save(m2, str(tmp_path / "two"))
    assert list(gc.saved_model.load(str(tmp_path / "two")).signatures) == []

    m3 = gc.Module()
    m3.layer = Model()                # only the root's own functions are candidates
    gc.saved_model.save(m3, str(tmp_path / "nested"))
    assert list(gc.saved_model.load(str(tmp_path / "nested")).signatures) == []
