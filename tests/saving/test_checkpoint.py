"""gc.train.Checkpoint: round trips, numbering, status semantics, restore on creation, errors."""
import gc as pygc
import os
import weakref

import numpy as np
import pytest

import graphc as gc


class Dense(gc.Module):
    def __init__(self, n_in, n_out, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = gc.Variable(rng.normal(size=(n_in, n_out)).astype(np.float32))
        self.b = gc.Variable(rng.normal(size=n_out).astype(np.float32))


class Net(gc.Module):
    def __init__(self, seed=0):
        super().__init__()
        self.layers = [Dense(3, 4, seed), Dense(4, 2, seed + 1)]
        self.scale = {"s": gc.Variable(np.float64(seed))}
        self.step = gc.Variable(np.int32(seed), trainable=False)


def _values(module):
    return [v.numpy() for v in module.variables]


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def test_round_trip_into_a_fresh_object_graph(tmp_path):
    net = Net(seed=1)
    path = gc.train.Checkpoint(model=net).save(tmp_path / "ckpt")
    assert path == str(tmp_path / "ckpt") + "-1"
    other = Net(seed=9)
    status = gc.train.Checkpoint(model=other).restore(path)
    status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
    _assert_same(_values(other), _values(net))


def test_save_numbers_state_file_and_counter(tmp_path):
    ckpt = gc.train.Checkpoint(model=Net())
    paths = [ckpt.save(str(tmp_path / "m")) for _ in range(3)]
    assert paths == [str(tmp_path / f"m-{i}") for i in (1, 2, 3)]
    assert int(ckpt.save_counter) == 3
    assert gc.train.latest_checkpoint(tmp_path) == paths[-1]
    # write(): exactly the prefix, no counter, no state file change
    assert ckpt.write(tmp_path / "plain") == str(tmp_path / "plain")
    assert int(ckpt.save_counter) == 3 and gc.train.latest_checkpoint(tmp_path) == paths[-1]
    # the counter is restored with the rest, so numbering goes on after a restart
    again = gc.train.Checkpoint(model=Net())
    again.restore(paths[1])
    assert again.save(str(tmp_path / "m")) == paths[-1]
    assert ckpt.model is ckpt._roots["model"] and again.read is not None


def test_latest_checkpoint_none_cases(tmp_path):
    assert gc.train.latest_checkpoint(tmp_path / "nowhere") is None
    assert gc.train.latest_checkpoint(tmp_path) is None
    path = gc.train.Checkpoint(v=gc.Variable(1.0)).save(tmp_path / "c")
    os.remove(path + ".index")
    with pytest.warns(UserWarning, match="files are gone"):
        assert gc.train.latest_checkpoint(tmp_path) is None


def test_restore_none_and_bad_paths(tmp_path):
    ckpt = gc.train.Checkpoint(v=gc.Variable(1.0))
    status = ckpt.restore(None)          # the start-from-scratch idiom
    status.expect_partial()
    with pytest.raises(AssertionError, match="no checkpoint"):
        status.assert_consumed()
    with pytest.raises(FileNotFoundError, match="latest_checkpoint"):
        ckpt.restore(tmp_path / "missing")
    with pytest.raises(ValueError, match="is a directory"):
        ckpt.restore(tmp_path)
    path = ckpt.save(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="without '.index'"):
        ckpt.restore(path + ".index")


def test_constructor_errors():
    with pytest.raises(TypeError, match="x=int is not trackable"):
        gc.train.Checkpoint(x=3)
    with pytest.raises(ValueError, match="save_counter"):
        gc.train.Checkpoint(save_counter=gc.Variable(1))
    with pytest.raises(AttributeError, match="no root 'nope'"):
        gc.train.Checkpoint().nope


def test_mismatch_names_the_path_and_assigns_nothing(tmp_path):
    path = gc.train.Checkpoint(model=Net(seed=1)).save(tmp_path / "c")
    other = Net(seed=5)
    other.layers[1].w = gc.Variable(np.zeros((4, 3), np.float32))       # other shape
    other.step = gc.Variable(np.int64(0))                               # other dtype
    before = _values(other)
    with pytest.raises(ValueError) as info:
        gc.train.Checkpoint(model=other).restore(path)
    message = str(info.value)
    assert "'model/layers/1/w' is float32[4, 3] here but float32[4, 2]" in message
    assert "'model/step' is int64[] here but int32[]" in message and "Nothing" in message
    _assert_same(_values(other), before)


def test_status_semantics(tmp_path):
    path = gc.train.Checkpoint(model=Net(1)).save(tmp_path / "c")
    # the graph has a variable the checkpoint lacks
    bigger = Net(2)
    bigger.extra = gc.Variable(1.0)
    status = gc.train.Checkpoint(model=bigger).restore(path)
    with pytest.raises(AssertionError, match="'model/extra'"):
        status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="'model/extra'"):
        status.assert_consumed()
    status.assert_nontrivial_match()
    # the checkpoint has values the graph lacks (yet)
    smaller = Net(3)
    del smaller.scale
    status = gc.train.Checkpoint(model=smaller).restore(path)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="'model/scale/s'"):
        status.assert_consumed()
    status.expect_partial()
    # nothing but the counter matched
    unrelated = Net(4)
    status = gc.train.Checkpoint(other=unrelated).restore(path).expect_partial()
    with pytest.raises(AssertionError, match="nothing but the save counter"):
        status.assert_nontrivial_match()


def test_status_keeps_the_restored_objects_alive(tmp_path, young_heap):
    """As TF's status, it holds the objects it restored into: asserting on a status whose
    Checkpoint and variables were temporaries still sees the unmatched variable."""
    path = gc.train.Checkpoint(a=gc.Variable(1.0)).save(tmp_path / "c")
    b = gc.Variable(5.0)
    b_ref = weakref.ref(b)
    status = gc.train.Checkpoint(a=gc.Variable(0.0), b=b).restore(path)
    del b
    pygc.collect()
    with pytest.raises(AssertionError, match="'b'"):
        status.assert_consumed()
    del status
    pygc.collect()
    assert b_ref() is None          # held by the status only
    with pytest.raises(AssertionError, match="'b'"):
        gc.train.Checkpoint(a=gc.Variable(0.0), b=gc.Variable(5.0)).restore(
            path).assert_existing_objects_matched()


def test_restore_on_creation_by_attribute(tmp_path):
    net = Net(1)
    path = gc.train.Checkpoint(model=net).save(tmp_path / "c")
    later = Net(2)
    del later.layers, later.scale
    status = gc.train.Checkpoint(model=later).restore(path)
    later.scale = {"s": gc.Variable(np.float64(-1))}         # a dict attached later
    assert later.scale["s"].numpy() == net.scale["s"].numpy()
    later.layers = [Dense(3, 4, 7), Dense(4, 2, 8)]          # a list of modules later
    status.assert_consumed()
    _assert_same(_values(later), _values(net))


def test_restore_on_creation_inside_a_compiled_call(tmp_path):
    class Lazy(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @gc.function
        def __call__(self, x):
            if self.w is None:
                self.w = gc.Variable(np.zeros((2, 2), np.float32))
            return x @ self.w

    saved = Lazy()
    saved(np.eye(2, dtype=np.float32))
    saved.w.assign(np.array([[1, 2], [3, 4]], np.float32))
    path = gc.train.Checkpoint(m=saved).save(tmp_path / "c")
    fresh = Lazy()
    status = gc.train.Checkpoint(m=fresh).restore(path)
    out = fresh(np.eye(2, dtype=np.float32))      # creates w: restored before it runs
    np.testing.assert_array_equal(out.numpy(), [[1, 2], [3, 4]])
    status.assert_consumed()


def test_checkpoint_object_may_be_dropped_before_creation(tmp_path, young_heap):
    path = gc.train.Checkpoint(model=Net(1)).save(tmp_path / "c")
    later = Net(2)
    del later.step
    gc.train.Checkpoint(model=later).restore(path)       # status and checkpoint dropped
    pygc.collect()
    later.step = gc.Variable(np.int32(0), trainable=False)
    assert int(later.step) == 1


def test_deferred_mismatch_raises_at_creation(tmp_path):
    path = gc.train.Checkpoint(model=Net(1)).save(tmp_path / "c")
    later = Net(2)
    del later.step
    gc.train.Checkpoint(model=later).restore(path)
    with pytest.raises(ValueError, match="'model/step' is float32\\[2\\] here but int32"):
        later.step = gc.Variable(np.zeros(2, np.float32))
    np.testing.assert_array_equal(later.step.numpy(), [0, 0])


def test_a_newer_restore_supersedes_pending_values(tmp_path):
    p1 = gc.train.Checkpoint(model=Net(1)).save(tmp_path / "a")
    p2 = gc.train.Checkpoint(model=Net(2)).save(tmp_path / "b")
    later = Net(3)
    del later.step
    ckpt = gc.train.Checkpoint(model=later)
    ckpt.restore(p1)
    ckpt.restore(p2)
    later.step = gc.Variable(np.int32(0))
    assert int(later.step) == 2


def test_unused_values_warn_unless_expect_partial(tmp_path, young_heap):
    path = gc.train.Checkpoint(model=Net(1)).save(tmp_path / "c")
    for partial in (False, True):
        later = Net(2)
        del later.step
        status = gc.train.Checkpoint(model=later).restore(path)
        if partial:
            status.expect_partial()
        with pytest.warns(gc.train.UnusedCheckpointValuesWarning) as record:
            import warnings
            warnings.warn(gc.train.UnusedCheckpointValuesWarning("marker"))
            del later, status
            pygc.collect()
        messages = [str(w.message) for w in record]
        assert any("'model/step'" in m for m in messages) is not partial


def test_save_and_restore_inside_a_trace_are_errors(tmp_path):
    ckpt = gc.train.Checkpoint(v=gc.Variable(1.0))

    @gc.function
    def f(x):
        ckpt.save(str(tmp_path / "c"))
        return x

    with pytest.raises(RuntimeError, match="call it outside"):
        f(1.0)
    assert not os.listdir(tmp_path)


def test_saves_from_several_threads_get_distinct_numbers(tmp_path):
    import threading
    v = gc.Variable(np.arange(1000.0))
    ckpt = gc.train.Checkpoint(v=v)
    paths, errors = [], []

    def work():
        try:
            for _ in range(5):
                paths.append(ckpt.save(str(tmp_path / "t")))
                v.assign_add(np.ones(1000))
        except Exception as e:      # noqa: BLE001  (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(paths) == sorted(str(tmp_path / f"t-{i}") for i in range(1, 21))
    assert gc.train.latest_checkpoint(tmp_path) == str(tmp_path / "t-20")
    for path in paths:              # each one whole: one value repeated, as assigned
        back = gc.Variable(np.zeros(1000))
        gc.train.Checkpoint(v=back).restore(path)
        values = back.numpy() - np.arange(1000.0)
        assert (values == values[0]).all()
