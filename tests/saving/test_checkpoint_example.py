"""examples/train_mlp.py checkpoints each epoch and, run again, resumes exactly."""
import importlib.util
import io
import os
import pathlib
import re

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def _load():
    spec = importlib.util.spec_from_file_location("train_mlp_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _epoch_lines(text):
    return [line for line in text.splitlines() if re.match(r"\s*epoch \d+/\d+  loss", line)]


def _without_time(line):
    return re.sub(r"\(\d+\.\ds\)", "", line)


def test_train_mlp_resumes_where_it_stopped(tmp_path):
    example = _load()
    straight = io.StringIO()
    acc = example.train(epochs=3, out=straight)

    first, second = io.StringIO(), io.StringIO()
    example.train(epochs=2, out=first, checkpoint_dir=tmp_path)
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == [
        "ckpt-1.index", "ckpt-2.index"]
    resumed_acc = example.train(epochs=3, out=second, checkpoint_dir=tmp_path)
    assert "resumed from" in second.getvalue() and "(epoch 2)" in second.getvalue()
    lines = [_without_time(l) for l in _epoch_lines(first.getvalue() + second.getvalue())]
    expected = [_without_time(l).replace("/3", "/2") if i < 2 else _without_time(l)
                for i, l in enumerate(_epoch_lines(straight.getvalue()))]
    assert lines == expected           # same losses and accuracies, epoch by epoch
    assert resumed_acc == acc
    # a third run has nothing left to do and reports the restored model's accuracy
    third = io.StringIO()
    assert example.train(epochs=3, out=third, checkpoint_dir=tmp_path) == acc
    assert _epoch_lines(third.getvalue()) == []
