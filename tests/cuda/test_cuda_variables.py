"""Variables used by a cuda function live on the device; the host copy is written back
lazily when the host reads it, and stays right when cuda and CPU functions alternate."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError


def _step(v, backend):
    @gc.function(backend=backend)
    def step(d):
        before = v.read_value()
        v.assign_add(d)
        v.assign_sub(d * 0.5)
        return before, v.read_value()
    return step


def _update(v, delta, op="assign_add"):
    """A cuda function doing `v.<op>(delta)` and returning the new value."""
    @gc.function(backend="cuda")
    def run():
        getattr(v, op)(delta)
        return v.read_value()
    return run


def test_updates_stay_on_device_until_the_host_reads(cuda_stats):
    v = gc.Variable(np.zeros(3, np.float32))
    step = _step(v, "cuda")
    d = np.ones(3, np.float32)
    step(d)
    with cuda_stats.count():
        before, after = step(d)
        step(d)
    assert cuda_stats.h2d == 2 and cuda_stats.d2h == 0  # `d` (`d * 0.5` is a kernel)
    resident = "_value" not in v.__dict__
    assert resident and cuda_stats.device_ops == 2 * 4   # 2 reads, 2 updates per call
    # a read earlier in the call kept its value (updates make new device arrays)
    np.testing.assert_array_equal(before.numpy(), np.full(3, 0.5, np.float32))
    np.testing.assert_array_equal(after.numpy(), np.full(3, 1.0, np.float32))
    with cuda_stats.count():
        assert v.shape == (3,) and v.dtype is gc.float32     # metadata: no copy
        np.testing.assert_array_equal(v.numpy(), np.full(3, 1.5, np.float32))
        v.numpy()
    assert cuda_stats.d2h == 1          # written back once, on the first host read


def test_cuda_and_numpy_functions_alternate_on_one_variable():
    v = gc.Variable(np.arange(4, dtype=np.float64))
    ref = np.arange(4, dtype=np.float64)
    steps = {b: _step(v, b) for b in ("cuda", "numpy", "numba")}
    for k, backend in enumerate(["cuda", "numpy", "cuda", "cuda", "numba", "cuda"]):
        d = np.full(4, k + 1.0)
        before, after = steps[backend](d)
        np.testing.assert_array_equal(before.numpy(), ref)
        ref = ref + d * 0.5
        np.testing.assert_array_equal(after.numpy(), ref)
        if k == 2:          # eager work in between
            v.assign(v * 2.0)
            ref = ref * 2
    np.testing.assert_array_equal(v.numpy(), ref)


def test_eager_reads_and_writes_between_cuda_calls():
    v = gc.Variable(np.ones((2, 2), np.float32))
    inc = _update(v, np.ones((2, 2), np.float32))
    inc()
    np.testing.assert_array_equal((v + 0.0).numpy(), np.full((2, 2), 2.0))    # eager read
    v.assign_add(np.ones((2, 2), np.float32))                                    # eager write
    np.testing.assert_array_equal(inc().numpy(), np.full((2, 2), 4.0))
    assert float(gc.reduce_sum(v)) == 16.0
    assert repr(v).startswith("<gc.Variable") and len(v) == 2


@pytest.mark.filterwarnings("ignore:overflow encountered")    # the simulator's numpy scalars
def test_integer_variables_wrap_and_bool_variables_use_numpys_rules():
    big = np.iinfo(np.int32)
    v = gc.Variable(np.array([big.max, big.min], np.int32))
    _update(v, np.array([1, -1], np.int32))()
    np.testing.assert_array_equal(v.numpy(), np.array([big.min, big.max], np.int32))
    b = gc.Variable(np.array([True, False]))
    _update(b, np.array([False, True]))()
    np.testing.assert_array_equal(b.numpy(), [True, True])
    sub = _update(b, np.array([True, True]), "assign_sub")
    with pytest.raises(InvalidArgumentError, match=r"boolean subtract.*test_cuda_variables\.py"):
        sub()                       # numpy's rule: bool - bool is an error, at the user line
    b2 = gc.Variable(np.array([True, True]))
    with pytest.raises(InvalidArgumentError, match="boolean subtract"):
        gc.function(lambda: b2.assign_sub(np.array([True, True])), backend="numpy")()


def test_wrong_shape_assign_names_the_variable_and_the_line():
    v = gc.Variable(np.zeros(3))

    @gc.function(backend="cuda", input_signature=[gc.TensorSpec([None], gc.float64)])
    def put(x):
        v.assign(x)
        return v.read_value()
    with pytest.raises(InvalidArgumentError, match=r"assign: variable .* has shape \[3\].*"
                       r"test_cuda_variables\.py:\d+"):
        put(np.zeros(4))       # traced for shape [None]: the check runs
    np.testing.assert_array_equal(put(np.arange(3.0)).numpy(), np.arange(3.0))


def test_checkpoint_save_reads_the_device_value(tmp_path):
    v = gc.Variable(np.zeros(2, np.float32))
    _update(v, np.ones(2, np.float32))()
    ckpt = gc.train.Checkpoint(v=v)
    path = ckpt.save(str(tmp_path / "ck"))
    v.assign(np.zeros(2, np.float32))
    ckpt.restore(path)
    np.testing.assert_array_equal(v.numpy(), np.ones(2, np.float32))
    out = gc.function(lambda: v.read_value() * 3.0, backend="cuda")()
    np.testing.assert_array_equal(out.numpy(), np.full(2, 3.0, np.float32))
