"""gc.summary scalar/histogram/image/text, eagerly and from compiled functions (numpy and
numba backends), read back with TensorBoard's EventAccumulator."""
import sys
import threading

import numpy as np
import pytest

import graphc as gc
from .events import decode_png, hist_counts, image_sizes, load, scalars, values


def _model(backend):
    @gc.function(backend=backend)
    def step_fn(x, step):
        y = gc.reduce_sum(gc.exp(x * 0.5) + 1.0)
        gc.summary.scalar("loss", y, step=step)
        gc.summary.histogram("x", x * 2.0, step=step, buckets=5)
        gc.summary.image("img", gc.reshape(x, [1, 2, 3, 1]) / 6.0, step=step)
        gc.summary.text("note", "**hi**", step=step)
        return y
    return step_fn


def _expected_loss(x):
    return float(np.sum(np.exp(x * np.float32(0.5)) + np.float32(1.0), dtype=np.float32))


def _check_run(tmp_path, fn, steps):
    xs = [np.arange(6, dtype=np.float32) + s for s in steps]
    writer = gc.summary.create_file_writer(tmp_path)
    with writer.as_default():
        outs = [float(fn(x, np.int64(s))) for x, s in zip(xs, steps)]
    writer.close()
    fn(xs[0], np.int64(99))       # no default writer, the traced-with one closed: writes nothing
    ea = load(tmp_path)
    got = scalars(ea, "loss")
    assert [s for s, _ in got] == steps
    np.testing.assert_allclose([v for _, v in got], [_expected_loss(x) for x in xs], rtol=1e-6)
    np.testing.assert_allclose(outs, [v for _, v in got], rtol=1e-6)
    assert [(s, c, shape) for s, c, shape in hist_counts(ea, "x")] == [
        (s, 6, (5, 3)) for s in steps]
    hist = values(ea, "x")[0][1]
    np.testing.assert_allclose(hist[0, 0], 2.0 * steps[0])
    np.testing.assert_allclose(hist[-1, 1], 2.0 * (steps[0] + 5))
    assert image_sizes(ea, "img") == [(s, 3, 2, 1) for s in steps]
    pixels = decode_png(values(ea, "img")[0][1][2])
    if steps[0] == 0:       # x / 6 for x = 0..5: TF's convert_image_dtype(saturate=True) pixels
        np.testing.assert_array_equal(pixels.ravel(), [0, 42, 85, 127, 170, 212])
    assert [(s, v.item()) for s, v in values(ea, "note")] == [(s, b"**hi**") for s in steps]


def test_compiled_numpy(tmp_path):
    _check_run(tmp_path, _model("numpy"), [0, 1, 2])


def test_compiled_numba_runs_kernels(tmp_path, numba_forced):
    fn = _model("numba")
    with numba_forced.expect(kernels=True):
        _check_run(tmp_path, fn, [3, 4])


def test_eager(tmp_path):
    w = gc.summary.create_file_writer(tmp_path)
    assert gc.summary.scalar("a", 1.0, step=0) is False         # no writer: nothing
    with w.as_default():
        assert gc.summary.scalar("a", gc.constant(2.5), step=gc.constant(7)) is True
        gc.summary.scalar("a", np.float64(3.5), step=np.int64(2 ** 40))
        gc.summary.histogram("h", np.array([1.0, np.nan, 2.0, np.inf]), step=1)
        gc.summary.histogram("h", np.full(4, 3.0), step=2, buckets=3)
        gc.summary.image("rgb", np.zeros((4, 5, 7, 3), np.uint8), step=0, max_outputs=2)
        gc.summary.text("t", b"bytes", step=0)
    w.close()
    ea = load(tmp_path)
    assert scalars(ea, "a") == [(7, 2.5), (2 ** 40, 3.5)]
    (_, h1), (_, h2) = values(ea, "h")
    assert h1[:, 2].sum() == 2                   # NaN and inf have no bucket
    assert h2.tolist() == [[3, 3, 0], [3, 3, 0], [3, 3, 4]]
    assert image_sizes(ea, "rgb") == [(0, 7, 5, 2)]
    assert values(ea, "t")[0][1].item() == b"bytes"


def test_step_as_variable_and_default_step(tmp_path):
    step = gc.Variable(np.int64(0))

    @gc.function(backend="numpy")
    def train(x):
        gc.summary.scalar("v", x, step=step)
        step.assign_add(np.int64(1))
        gc.summary.scalar("after", x, step=step)      # read where it stands: after the add
        gc.summary.scalar("default", x)                # the default step set below
        return x

    gc.summary.set_step(step)
    w = gc.summary.create_file_writer(tmp_path)
    try:
        with w.as_default():
            for i in range(3):
                train(gc.constant(float(i)))
    finally:
        gc.summary.set_step(None)
    w.close()
    ea = load(tmp_path)
    assert scalars(ea, "v") == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert scalars(ea, "after") == [(1, 0.0), (2, 1.0), (3, 2.0)]
    assert scalars(ea, "default") == [(1, 0.0), (2, 1.0), (3, 2.0)]


def test_summary_in_while_loop_on_numba(tmp_path, numba_forced):
    """The loop holding a summary is interpreted (the numba backend lowers only loops free
    of effects); the fused group before it runs as a kernel."""
    @gc.function(backend="numba")
    def loop(x, n):
        x = gc.exp(x * 0.0) * 1.0
        i = gc.constant(np.int64(0))
        while i < n:
            x = x * 2.0 + 1.0
            gc.summary.scalar("loop", gc.reduce_sum(x), step=i)
            i += 1
        return x

    w = gc.summary.create_file_writer(tmp_path)
    x = np.ones(8, np.float32)
    with w.as_default(), numba_forced.expect(kernels=True):
        out = loop(x, np.int64(4))
    w.close()
    from graphc.kernels.cpu.backend import describe
    assert "interpreted" in describe(loop.get_concrete_function(x, np.int64(4)).graph)
    ref, want = np.exp(x * np.float32(0.0)) * np.float32(1.0), []
    for i in range(4):
        ref = ref * np.float32(2.0) + np.float32(1.0)
        want.append((i, float(ref.sum())))
    np.testing.assert_allclose(out, ref)
    assert scalars(load(tmp_path), "loop") == want


def test_default_writer_is_per_thread(tmp_path):
    a, b = gc.summary.create_file_writer(tmp_path / "a"), gc.summary.create_file_writer(
        tmp_path / "b")

    @gc.function(backend="numpy")
    def log(x):
        gc.summary.scalar("x", x, step=0)
        return x

    seen = []

    def other():
        seen.append(gc.summary.scalar("other", 1.0, step=0))   # no writer in this thread
        with b.as_default():
            log(gc.constant(2.0))

    with a.as_default():
        log(gc.constant(1.0))
        t = threading.Thread(target=other)
        t.start()
        t.join()
    a.close()
    b.close()
    assert seen == [False]
    assert scalars(load(tmp_path / "a"), "x") == [(0, 1.0)]
    assert scalars(load(tmp_path / "b"), "x") == [(0, 2.0)]


def test_errors(tmp_path):
    w = gc.summary.create_file_writer(tmp_path)
    with w.as_default():
        with pytest.raises(ValueError, match=r"data must be a scalar, got float32\[3\]"):
            gc.summary.scalar("s", np.zeros(3, np.float32), step=0)
        with pytest.raises(ValueError, match=r"\[N, H, W, C\] with C = 1, 3 or 4"):
            gc.summary.image("i", np.zeros((2, 2, 2), np.float32), step=0)
        with pytest.raises(TypeError, match="must be a Python str"):
            gc.summary.text("t", gc.constant(1.0), step=0)
        with pytest.raises(ValueError, match="buckets must be >= 1"):
            gc.summary.histogram("h", np.zeros(3), step=0, buckets=0)
        with pytest.raises(ValueError, match="no step; pass step="):
            gc.summary.scalar("s", 1.0)
        with pytest.raises(ValueError, match="step must be an integer scalar"):
            gc.summary.scalar("s", 1.0, step=1.5)

        @gc.function(backend="numpy")
        def bad(x):
            gc.summary.scalar("s", gc.reduce_sum(x), step=0)
            gc.summary.scalar("s", x, step=0)
        with pytest.raises(ValueError,
                           match=r"data must be a scalar.*while tracing .*test_summary"):
            bad(np.zeros(2, np.float32))
    w.close()
    with pytest.raises(ValueError, match="is closed"):
        with w.as_default():
            gc.summary.scalar("s", 1.0, step=0)


def test_compiled_function_without_step_fails_only_when_writing(tmp_path):
    @gc.function(backend="numpy")
    def f(x):
        gc.summary.scalar("s", x)
        return x + 1.0

    assert float(f(gc.constant(1.0))) == 2.0      # no writer: the summary does nothing
    w = gc.summary.create_file_writer(tmp_path)
    with w.as_default():
        with pytest.raises(gc.errors.InvalidArgumentError, match="no step.*test_summary_ops"):
            f(gc.constant(1.0))
    w.close()


def test_missing_tensorboard_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    with pytest.raises(ImportError, match=r"graphc\[tensorboard\]"):
        gc.summary.create_file_writer(tmp_path)


def test_summary_ops_kept_by_passes():
    from graphc.runtime.passes import optimize

    @gc.function(backend="numpy")
    def f(x):
        y = x * 1.0 + 0.0                # folded away by the algebraic passes
        gc.summary.scalar("unused_result", gc.reduce_sum(y), step=0)
        return x

    g = optimize(f.get_concrete_function(gc.TensorSpec([3], gc.float32)).graph)
    assert [op.type for op in g.operations].count("summary_scalar") == 1


def test_set_as_default_until_closed(tmp_path):
    w = gc.summary.create_file_writer(tmp_path)
    w.set_as_default()
    assert gc.summary.scalar("a", 1.0, step=3) is True
    gc.summary.flush()
    assert scalars(load(tmp_path), "a") == [(3, 1.0)]      # flushed: readable while open
    w.close()
    assert gc.summary.scalar("a", 2.0, step=4) is False    # closed: no default any more
    assert scalars(load(tmp_path), "a") == [(3, 1.0)]


def test_image_pixels_as_tf_converts_floats(tmp_path):
    """Floats become uint8 as TF's convert_image_dtype(saturate=True): trunc(x * 255.5),
    clipped, NaN as 0 (the expected pixels are what TF 2.21 gives)."""
    x = np.array([0, 0.001, 0.002, 0.5, 0.998, 0.999, 1.0, 1.5, -0.5, np.nan, np.inf, -np.inf,
                  0.3, 0.7], np.float32).reshape(1, 2, 7, 1)
    w = gc.summary.create_file_writer(tmp_path)
    with w.as_default():
        gc.summary.image("f32", x, step=0)
        gc.summary.image("f64", x.astype(np.float64), step=0)
        gc.summary.image("u8", np.arange(14, dtype=np.uint8).reshape(1, 2, 7, 1) * 18, step=0)
    w.close()
    ea = load(tmp_path)
    tf_pixels = [0, 0, 0, 127, 254, 255, 255, 255, 0, 0, 255, 0, 76, 178]
    for tag in ("f32", "f64"):
        np.testing.assert_array_equal(decode_png(values(ea, tag)[0][1][2]).ravel(), tf_pixels)
    np.testing.assert_array_equal(decode_png(values(ea, "u8")[0][1][2]).ravel(),
                                  np.arange(14) * 18)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_writer_made_default_inside_the_function(tmp_path, backend):
    """`with writer.as_default():` in the compiled body logs on every call, as TF's graph
    captures the writer (the block itself runs only while tracing)."""
    w = gc.summary.create_file_writer(tmp_path)
    step = gc.Variable(np.int64(0))

    @gc.function(backend=backend)
    def f(x):
        with w.as_default():
            gc.summary.scalar("x", x, step=step)
            gc.summary.histogram("h", gc.stack([x, x * 2.0]), step=step, buckets=2)
        step.assign_add(np.int64(1))
        return x

    for i in range(3):
        f(gc.constant(float(i)))
    w.close()
    ea = load(tmp_path)
    assert scalars(ea, "x") == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert [s for s, _, _ in hist_counts(ea, "h")] == [0, 1, 2]


def test_writer_default_while_tracing_is_the_fallback(tmp_path):
    """As in TF: a function traced while a writer was default writes there when called with
    no default writer; the caller's default writer wins when there is one; once the traced
    writer is closed such a call writes nothing (TF returns False there)."""
    a = gc.summary.create_file_writer(tmp_path / "a")
    b = gc.summary.create_file_writer(tmp_path / "b")

    @gc.function(backend="numpy")
    def f(x, s):
        gc.summary.scalar("y", x, step=s)
        return x

    with a.as_default():
        f(gc.constant(1.0), np.int64(1))
    f(gc.constant(2.0), np.int64(2))           # no default writer: the traced-with one
    with b.as_default():
        f(gc.constant(3.0), np.int64(3))
    a.close()
    f(gc.constant(4.0), np.int64(4))           # traced-with writer closed: nothing
    b.close()
    assert scalars(load(tmp_path / "a"), "y") == [(1, 1.0), (2, 2.0)]
    assert scalars(load(tmp_path / "b"), "y") == [(3, 3.0)]

    @gc.function(backend="numpy")
    def g(x):
        gc.summary.scalar("z", x, step=0)
        return x
    g(gc.constant(1.0))                        # traced with no writer: never writes
    c = gc.summary.create_file_writer(tmp_path / "c")
    c.close()
    assert "z" not in load(tmp_path / "c").Tags()["tensors"]
