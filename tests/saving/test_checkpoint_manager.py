"""gc.train.CheckpointManager and the directory's state file."""
import os

import numpy as np
import pytest

import graphc as gc
from graphc.errors import GraphcError
from graphc.train import state


def _files(directory):
    return sorted(os.listdir(directory))


def _stems(directory):
    return sorted({f.split(".")[0] for f in os.listdir(directory) if f != "checkpoint"})


def test_numbering_retention_and_file_deletion(tmp_path):
    v = gc.Variable(np.zeros(3))
    manager = gc.train.CheckpointManager(gc.train.Checkpoint(v=v), tmp_path, max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    for i in range(1, 5):
        v.assign(np.full(3, float(i)))
        assert manager.save() == str(tmp_path / f"ckpt-{i}")
    assert manager.checkpoints == [str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-4")]
    assert manager.latest_checkpoint == str(tmp_path / "ckpt-4")
    assert _stems(tmp_path) == ["ckpt-3", "ckpt-4"]            # dropped ones' files deleted
    assert len(_files(tmp_path)) == 5                          # 2 x (index, data) + state
    assert gc.train.latest_checkpoint(tmp_path) == manager.latest_checkpoint
    fresh = gc.Variable(np.zeros(3))
    gc.train.Checkpoint(v=fresh).restore(manager.latest_checkpoint).assert_consumed()
    np.testing.assert_array_equal(fresh.numpy(), [4.0, 4.0, 4.0])


def test_checkpoint_number_and_rewrites(tmp_path):
    ckpt = gc.train.Checkpoint(v=gc.Variable(1.0))
    manager = gc.train.CheckpointManager(ckpt, tmp_path, checkpoint_name="model",
                                         max_to_keep=3)
    step = gc.Variable(np.int64(100))
    assert manager.save(checkpoint_number=step) == str(tmp_path / "model-100")
    assert manager.save(checkpoint_number=7) == str(tmp_path / "model-7")
    assert manager.save(checkpoint_number=np.int32(100)) == str(tmp_path / "model-100")
    assert manager.checkpoints == [str(tmp_path / "model-7"), str(tmp_path / "model-100")]
    assert int(ckpt.save_counter) == 3          # incremented by every save, as in TF
    with pytest.raises(TypeError, match="must be an integer"):
        manager.save(checkpoint_number=1.5)


def test_state_file_is_reread_on_construction(tmp_path):
    def manager():
        return gc.train.CheckpointManager(gc.train.Checkpoint(v=gc.Variable(0.0)), tmp_path,
                                          max_to_keep=2)
    first = manager()
    saved = [first.save() for _ in range(2)]
    second = manager()                     # a restarted program
    assert second.checkpoints == saved and second.latest_checkpoint == saved[-1]
    second.checkpoint.restore(second.latest_checkpoint)
    assert second.save() == str(tmp_path / "ckpt-3")        # the counter came back too
    assert second.checkpoints == saved[1:] + [str(tmp_path / "ckpt-3")]
    assert _stems(tmp_path) == ["ckpt-2", "ckpt-3"]


def test_max_to_keep_none_keeps_all_and_bad_arguments(tmp_path):
    ckpt = gc.train.Checkpoint(v=gc.Variable(0.0))
    keep_all = gc.train.CheckpointManager(ckpt, tmp_path, max_to_keep=None)
    for _ in range(7):
        keep_all.save()
    assert len(keep_all.checkpoints) == 7 and len(_stems(tmp_path)) == 7
    with pytest.raises(ValueError, match="max_to_keep"):
        gc.train.CheckpointManager(ckpt, tmp_path, max_to_keep=0)
    with pytest.raises(ValueError, match="checkpoint_name"):
        gc.train.CheckpointManager(ckpt, tmp_path, checkpoint_name="a/b")
    with pytest.raises(TypeError, match="expected a gc.train.Checkpoint"):
        gc.train.CheckpointManager(gc.Variable(0.0), tmp_path)


def test_keep_checkpoint_every_n_hours_preserves_files(tmp_path, monkeypatch):
    import types
    import graphc.train.manager as manager_module
    clock = iter(float(3600 * h) for h in range(100))     # each call: one hour later
    monkeypatch.setattr(manager_module, "time", types.SimpleNamespace(time=lambda: next(clock)))
    manager = gc.train.CheckpointManager(gc.train.Checkpoint(v=gc.Variable(0.0)), tmp_path,
                                         max_to_keep=1, keep_checkpoint_every_n_hours=2)
    for _ in range(5):
        manager.save()
    # one checkpoint managed; every second hour's one preserved on disk, the rest deleted
    assert manager.checkpoints == [str(tmp_path / "ckpt-5")]
    assert _stems(tmp_path) == ["ckpt-2", "ckpt-4", "ckpt-5"]


def test_state_file_format_and_paths_outside_the_directory(tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    state.update_state(tmp_path, other / "x-1", [tmp_path / "a-1", other / "x-1"], [1.0, 2.5])
    text = (tmp_path / "checkpoint").read_text()
    assert text.startswith('model_checkpoint_path: "' + str(other / "x-1") + '"\n'
                           'all_model_checkpoint_paths: "a-1"\n')
    got = state.read_state(tmp_path)
    assert got.all_model_checkpoint_paths == [str(tmp_path / "a-1"), str(other / "x-1")]
    assert got.all_model_checkpoint_timestamps == [1.0, 2.5]


@pytest.mark.parametrize("damage", ["truncate", "flip", "pickle", "garbage"])
def test_damaged_state_file_raises_naming_it(tmp_path, damage):
    import pickle
    gc.train.Checkpoint(v=gc.Variable(0.0)).save(tmp_path / "c")
    path = tmp_path / "checkpoint"
    raw = path.read_bytes()
    cases = {"truncate": [raw[:n] for n in range(len(raw) - 1)],
             "flip": [raw[:i] + bytes([raw[i] ^ 4]) + raw[i + 1:] for i in range(len(raw) - 1)],
             "pickle": [pickle.dumps({"model_checkpoint_path": "c-1"})],
             "garbage": [b"\xff\xfe\x00", b'model_checkpoint_path: "c-1"\n']}[damage]
    for bad in cases:
        path.write_bytes(bad)
        with pytest.raises(GraphcError, match="checkpoint state file .*checkpoint is damaged"):
            gc.train.latest_checkpoint(tmp_path)
        with pytest.raises(GraphcError, match=str(path)):
            gc.train.CheckpointManager(gc.train.Checkpoint(), tmp_path)


def test_positional_arguments_in_tf_and_api_order(tmp_path):
    ckpt = gc.train.Checkpoint(v=gc.Variable(1.0))
    tf_order = gc.train.CheckpointManager(ckpt, tmp_path / "a", 1)       # TF: max_to_keep
    api_order = gc.train.CheckpointManager(ckpt, tmp_path / "b", "model", 1)
    for m in (tf_order, api_order):
        m.save()
        m.save()
    assert [os.path.basename(p) for p in tf_order.checkpoints] == ["ckpt-2"]
    assert [os.path.basename(p) for p in api_order.checkpoints] == ["model-4"]


def test_checkpoint_interval_and_restore_or_initialize_as_tf(tmp_path):
    """TF 2.21: with step_counter and checkpoint_interval=3, saves at steps 0..7 give
    ckpt-1, None, None, ckpt-2, None, None, ckpt-3, None; check_interval=False saves once
    the step moved at all."""
    step = gc.Variable(np.int64(0))
    v = gc.Variable(1.0)
    seen = []
    m = gc.train.CheckpointManager(gc.train.Checkpoint(v=v), tmp_path, max_to_keep=5,
                                   step_counter=step, checkpoint_interval=3,
                                   init_fn=lambda: seen.append(True))
    assert m.restore_or_initialize() is None and seen == [True]
    got = []
    for _ in range(8):
        p = m.save()
        got.append(None if p is None else os.path.basename(p))
        step.assign_add(np.int64(1))
    assert got == ["ckpt-1", None, None, "ckpt-2", None, None, "ckpt-3", None]
    assert os.path.basename(m.save(check_interval=False)) == "ckpt-4"
    assert m.save(check_interval=False) is None           # the step has not moved
    v.assign(5.0)
    assert m.restore_or_initialize() == str(tmp_path / "ckpt-4") and float(v) == 1.0
    assert seen == [True]
    with pytest.raises(ValueError, match="needs a step_counter"):
        gc.train.CheckpointManager(gc.train.Checkpoint(v=v), tmp_path, checkpoint_interval=2)
