"""Summary ops survive gc.saved_model save/load: a loaded function writes to the default
writer of its caller (the op stores tag and options, never a writer)."""
import numpy as np

import graphc as gc
from .events import hist_counts, load, scalars


class Model(gc.Module):
    def __init__(self):
        super().__init__()
        self.w = gc.Variable(np.float32(2.0))

    @gc.function(input_signature=[gc.TensorSpec([4], gc.float32), gc.TensorSpec([], gc.int64)])
    def __call__(self, x, step):
        y = x * self.w
        gc.summary.scalar("y_sum", gc.reduce_sum(y), step=step)
        gc.summary.histogram("y", y, step=step, buckets=4)
        gc.summary.text("note", "saved", step=step)
        return y


def test_loaded_function_logs_to_callers_writer(tmp_path):
    gc.saved_model.save(Model(), str(tmp_path / "model"))
    loaded = gc.saved_model.load(str(tmp_path / "model"), backend="numpy")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(loaded(x, np.int64(0)), x * 2)     # no writer: no-op
    w = gc.summary.create_file_writer(tmp_path / "logs")
    with w.as_default():
        for step in (1, 2):
            np.testing.assert_allclose(loaded(x + step, np.int64(step)), (x + step) * 2)
    w.close()
    ea = load(tmp_path / "logs")
    assert scalars(ea, "y_sum") == [(s, float(((x + s) * 2).sum())) for s in (1, 2)]
    assert [(s, c) for s, c, _ in hist_counts(ea, "y")] == [(1, 4), (2, 4)]
    assert "note" in ea.Tags()["tensors"]


def test_writer_default_while_tracing_is_not_saved(tmp_path):
    """A trace made under a writer names it (its fallback writer in this process); the saved
    graph holds no trace of that writer, and the loaded function logs to its caller's."""
    model = Model()
    x = np.arange(4, dtype=np.float32)
    traced_with = gc.summary.create_file_writer(tmp_path / "traced")
    with traced_with.as_default():
        model(x, np.int64(0))
    gc.saved_model.save(model, str(tmp_path / "model"))
    saved = b"".join(p.read_bytes() for p in (tmp_path / "model").rglob("*") if p.is_file())
    assert b'"writer"' not in saved
    loaded = gc.saved_model.load(str(tmp_path / "model"), backend="numpy")
    loaded(x, np.int64(5))                     # no default writer: nothing
    w = gc.summary.create_file_writer(tmp_path / "logs")
    with w.as_default():
        loaded(x, np.int64(6))
    w.close()
    traced_with.close()
    assert scalars(load(tmp_path / "logs"), "y_sum") == [(6, float((x * 2).sum()))]
    assert scalars(load(tmp_path / "traced"), "y_sum") == [(0, float((x * 2).sum()))]
