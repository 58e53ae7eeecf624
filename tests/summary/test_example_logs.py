"""examples/train_mlp.py --logdir: loss per step, accuracy and weight histograms per epoch,
the train step's graph and profile, all readable by TensorBoard's loader."""
import importlib.util
import io
import pathlib

from .events import hist_counts, load, node_names, scalars

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def test_train_mlp_writes_tensorboard_logs(tmp_path):
    spec = importlib.util.spec_from_file_location("train_mlp_logs", EXAMPLE)
    mlp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mlp)
    out = io.StringIO()
    mlp.train(epochs=2, backend="numpy", out=out, logdir=str(tmp_path))
    ea = load(tmp_path)
    loss = scalars(ea, "loss")
    assert [s for s, _ in loss] == list(range(1, 41))           # 20 steps per epoch
    assert loss[-1][1] < loss[0][1]
    acc = scalars(ea, "accuracy")
    assert [s for s, _ in acc] == [1, 2] and 0.5 < acc[-1][1] <= 1.0
    assert "traced 2 time(s)" in out.getvalue()
    w0 = hist_counts(ea, "w0:0")               # the variable's name, as TF's: w0:0
    assert [(s, c) for s, c, _ in w0] == [(1, 16 * 64), (2, 16 * 64)]
    assert any(n.endswith("matmul_0") for n in node_names(ea))
    assert "train_step" in ea.Tags()["run_metadata"]
