"""The cuda backend's own kernel launches (graphc/kernels/cuda/launch.py) without a GPU:
the parameters it packs are what numba-cuda's `_Kernel._prepare_args` makes of the same
arguments (numba-cuda's real code, real DeviceNDArrays over fake device addresses), any
argument it cannot pack keeps a launcher on numba's path, and the direct launch writes
those parameters into the block it hands the driver, from every thread.
(Runs in the main process: numba-cuda's simulator has no DeviceNDArray.)"""
import ctypes
import threading

import numpy as np
import pytest

pytest.importorskip("numba_cuda")
from numba import cuda  # noqa: E402

if cuda.config.ENABLE_CUDASIM:
    pytest.skip("needs numba-cuda's real driver classes (not the simulator)",
                allow_module_level=True)

from numba.core import types  # noqa: E402
from numba.cuda.cudadrv.devicearray import DeviceNDArray  # noqa: E402
from numba.cuda.dispatcher import _Kernel  # noqa: E402

from graphc.kernels.cuda import launch  # noqa: E402
from test_cuda_blocks import FakeDevice, dev  # noqa: E402,F401 - the fixture


class Overload:
    """What launch.py reads of numba-cuda's compiled kernel, with numba's own packing."""
    _prepare_args = _Kernel._prepare_args
    debug = False
    extensions = []

    def __init__(self, argument_types):
        self.argument_types = tuple(argument_types)
        self._codelibrary = self

    def get_cufunc(self):
        return type("F", (), {"handle": 0xBEEF})()


def typed(arrays, ints, flat):
    return tuple(a._numba_type_ for a in launch.views(arrays, flat)) + (types.int64,) * len(ints)


CASES = [([(3, 4), (3, 4)], False), ([(), (5,)], False), ([(2, 1, 5), ()], True),
         ([(7,), (2, 3)], True), ([(1,), (4, 1, 2)], False)]


@pytest.mark.parametrize("shapes,flat", CASES)
def test_packing_is_numba_cudas_own(dev, shapes, flat):
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.bool_]
    arrays = [dev.array(s, dtypes[i % 5]) for i, s in enumerate(shapes)]
    ints = (3, 0, 123456789012)
    k = Overload(typed(arrays, ints, flat))
    assert launch.pack(arrays, ints, flat) == launch.numba_params(k, arrays, ints, flat)
    assert launch.abi_mismatch(k, arrays, ints, flat) == ""


def test_what_cannot_be_packed_is_named(dev):
    a, b = dev.array((3, 4)), dev.array((4,), np.float64)
    k = Overload(typed([a, b], (1,), False))
    strided = DeviceNDArray((3, 2), (16, 8), np.float32, gpu_data=a.gpu_data)  # a[:, ::2]
    assert "C-contiguous" in launch.abi_mismatch(k, [strided, b], (1,), False)
    k = Overload((types.Array(types.float32, 2, "A"), typed([b], (), False)[0], types.int64))
    assert "C-contiguous" in launch.abi_mismatch(k, [a, b], (1,), False)
    k = Overload(typed([a, b], (), False) + (types.float32,))
    assert "not an int64" in launch.abi_mismatch(k, [a, b], (1.5,), False)
    k = Overload(typed([a, b], (1,), False))
    assert "count" in launch.abi_mismatch(k, [a, b], (1, 2), False)
    k.debug = True
    assert "debug" in launch.abi_mismatch(k, [a, b], (1,), False)


class Kernel:
    """A numba-cuda dispatcher as far as Launcher uses it; its launches are recorded."""

    def __init__(self, overload_types=None):
        self.calls, self.overloads = [], {}
        self.overload_types = overload_types

    def __getitem__(self, config):
        return lambda *args: self.calls.append((config, args))

    def typeof_pyval(self, v):
        return v._numba_type_ if hasattr(v, "_numba_type_") else types.int64

    def remember(self, tys):
        self.overloads[tys] = Overload(self.overload_types or tys)


class FakeDriver:
    """cuLaunchKernel as ctypes calls it: reads the parameters through the pointer block."""

    def __init__(self, codes=()):
        self.launches, self.codes = [], list(codes)
        self.fn = self.launch

    def launch(self, handle, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        n = len(params)
        vals = [ctypes.c_int64.from_address(params[i]).value for i in range(n)]
        self.launches.append((handle, (gx, gy, gz), (bx, by, bz), shmem, stream, vals))
        return self.codes.pop(0) if self.codes else 0

    def error(self, rc):
        return f"cuLaunchKernel failed: FAKE ({rc})"


@pytest.fixture
def driver(monkeypatch):
    d = FakeDriver()
    monkeypatch.setattr(launch, "_DRIVER", [d])
    monkeypatch.setenv("GRAPHC_CUDA_LAUNCH", "direct")
    return d


def test_first_launch_is_numbas_then_direct_with_its_parameters(dev, driver):
    arrays, ints = [dev.array(()), dev.array((2, 3), np.float64)], (6, 2)
    k = Kernel()
    k.remember(typed(arrays, ints, True))
    run = launch.Launcher(k, 4, 256)
    run(arrays, ints, True)
    assert len(k.calls) == 1 and driver.launches == []
    (cfg, args) = k.calls[0]
    assert cfg == (4, 256) and [a.shape for a in args[:2]] == [(1,), (6,)] and args[2:] == ints
    assert run.mode == "direct" and run.why == ""
    out = [dev.array((2, 3), np.float64)]
    run(arrays[:1] + out, ints, True)
    assert len(k.calls) == 1, "the second launch went through numba-cuda"
    handle, grid, block, shmem, stream, vals = driver.launches[0]
    assert (handle, grid, block, shmem, stream) == (0xBEEF, (4, 1, 1), (256, 1, 1), 0, None)
    overload = k.overloads[typed(arrays, ints, True)]
    assert vals == launch.numba_params(overload, arrays[:1] + out, ints, True)


def test_a_launcher_numba_would_launch_differently_stays_on_numba(dev, driver):
    arrays = [dev.array((3,))]
    k = Kernel(overload_types=(types.Array(types.float32, 1, "A"), types.int64))
    k.remember(typed(arrays, (3,), False))
    run = launch.Launcher(k, 1, 32)
    run(arrays, (3,))
    run(arrays, (3,))
    assert run.mode == "numba" and "C-contiguous" in run.why
    assert len(k.calls) == 2 and driver.launches == []


def test_no_overload_or_numba_mode_keeps_numbas_path(dev, driver, monkeypatch):
    arrays = [dev.array((3,))]
    run = launch.Launcher(Kernel(), 1, 32)        # nothing compiled under those types
    run(arrays, (3,))
    assert run.mode == "numba" and "no overload" in run.why
    monkeypatch.setenv("GRAPHC_CUDA_LAUNCH", "numba")
    k = Kernel()
    k.remember(typed(arrays, (3,), False))
    run = launch.Launcher(k, 1, 32)
    run(arrays, (3,))
    run(arrays, (3,))
    assert run.mode == "numba" and len(k.calls) == 2 and driver.launches == []


def test_bad_mode_is_refused(monkeypatch):
    monkeypatch.setenv("GRAPHC_CUDA_LAUNCH", "fast")
    with pytest.raises(ValueError, match="GRAPHC_CUDA_LAUNCH='fast'.*direct, core, numba"):
        launch.mode()


def _direct(dev, driver):
    arrays = [dev.array((5,)), dev.array((5,))]
    k = Kernel()
    k.remember(typed(arrays, (5,), False))
    run = launch.Launcher(k, 1, 32)
    run(arrays, (5,))
    return run, arrays


def test_driver_errors_raise_and_an_unbound_thread_binds_then_retries(dev, driver,
                                                                      monkeypatch):
    run, arrays = _direct(dev, driver)
    bound = []
    import numba.cuda.cudadrv.devices as devices
    monkeypatch.setattr(devices, "get_context", lambda: bound.append(1))
    driver.codes = [launch.CUDA_ERROR_INVALID_CONTEXT, 0]
    run(arrays, (5,))
    assert bound == [1] and len(driver.launches) == 2
    driver.codes = [700]
    with pytest.raises(RuntimeError, match=r"cuLaunchKernel failed: FAKE \(700\)"):
        run(arrays, (5,))


def test_threads_each_launch_their_own_parameters(dev, driver):
    run, _ = _direct(dev, driver)
    per = [[dev.array((5,)), dev.array((5,))] for _ in range(8)]
    want = {tuple(launch.pack(a, (5,), False)) for a in per}
    barrier = threading.Barrier(8)

    def work(a):
        barrier.wait()
        for _ in range(50):
            run(a, (5,))
    ts = [threading.Thread(target=work, args=(a,)) for a in per]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    got = [tuple(v[-1]) for v in driver.launches]
    assert len(got) == 400 and set(got) == want


def test_other_dtypes_or_ranks_than_the_overloads_go_through_numba(dev, driver):
    run, arrays = _direct(dev, driver)
    run(arrays, (5,))
    assert len(driver.launches) == 1 and len(run.kernel.calls) == 1
    doubles = [dev.array((5,), np.float64), dev.array((5,), np.float64)]
    run(doubles, (5,))                           # same launch shape, another overload
    assert len(driver.launches) == 1 and len(run.kernel.calls) == 2
    run([dev.array((5, 1)), dev.array((5,))], (5,))      # another rank
    assert len(driver.launches) == 1 and len(run.kernel.calls) == 3
    run(arrays, (5,))
    assert len(driver.launches) == 2
