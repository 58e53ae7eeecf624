"""backend="cuda" resolves through the lazy backend table; without the package, the driver
or a device it is a ValueError naming what is missing and the fix."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cuda import availability
from graphc.runtime.backends import get_backend


def test_cuda_resolves_here():
    b = get_backend("cuda")
    assert b.name == "cuda" and b.available()
    f = gc.function(lambda x: x + 1.0, backend="cuda")
    out = f(np.ones(3, np.float32))
    assert out.is_on_device
    np.testing.assert_array_equal(out.numpy(), np.full(3, 2, np.float32))


def test_auto_stays_on_the_cpu():
    assert get_backend("auto").name == "numba"


@pytest.mark.parametrize("probe, words", [
    ("package", ["numba-cuda", "not installed", "pip install 'graphc[cuda]'"]),
    ("driver", ["no NVIDIA CUDA driver", "libcuda missing", "nvidia-smi",
                "NUMBA_ENABLE_CUDASIM=1"]),
    ("device", ["no CUDA device", "CUDA_VISIBLE_DEVICES", "NUMBA_ENABLE_CUDASIM=1"]),
    ("compiler", ["cannot compile kernels", "row_stack", "numpy", "pip install 'numpy<2.5'"]),
])
def test_each_missing_piece_is_a_value_error_with_the_fix(monkeypatch, probe, words):
    monkeypatch.setattr(availability, "has_package", lambda: probe != "package")
    monkeypatch.setattr(availability, "simulator_on", lambda: False)
    monkeypatch.setattr(availability, "driver_error",
                        lambda: "libcuda missing" if probe == "driver" else None)
    monkeypatch.setattr(availability, "device_count", lambda: 0 if probe == "device" else 1)
    monkeypatch.setattr(availability, "compiler_error", lambda: (
        "AttributeError: module 'numpy' has no attribute 'row_stack'"
        if probe == "compiler" else None))
    with pytest.raises(ValueError) as e:
        get_backend("cuda")
    for w in words:
        assert w in str(e.value)
    f = gc.function(lambda x: x * 2.0, backend="cuda")     # the name is accepted ...
    with pytest.raises(ValueError, match="backend 'cuda'"):
        f(np.ones(2, np.float32))                          # ... and the call says why not
    assert not availability.real_gpu()


def test_a_real_device_with_everything_present_is_available(monkeypatch):
    monkeypatch.setattr(availability, "simulator_on", lambda: False)
    monkeypatch.setattr(availability, "driver_error", lambda: None)
    monkeypatch.setattr(availability, "device_count", lambda: 1)
    monkeypatch.setattr(availability, "compiler_error", lambda: None)
    assert availability.missing() is None and availability.real_gpu()


@pytest.mark.skipif(not availability.simulator_on(), reason="runs on a real GPU")
def test_simulator_is_not_a_real_gpu():
    assert availability.simulator_on() and not availability.real_gpu()


def test_unknown_backend_names_still_fail():
    with pytest.raises(ValueError, match="unknown backend"):
        gc.function(lambda x: x, backend="cudaa")
