"""Tensor and Variable get their `__getattr__` (lazy host copies of device values) only in a
process that enables device values (graphc.kernels.cuda.device does on import): CPython
does not specialize attribute loads on a class that has one. Each check runs in a fresh
process, so that nothing this test process imported decides it."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(script):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_no_hook_without_device_values():
    _run(r"""
import numpy as np, graphc as gc
from graphc.runtime.tensor import Tensor
from graphc.runtime.variables import Variable
v = gc.Variable(np.ones(4, np.float32))
for backend in ("numpy", "numba", "auto"):
    f = gc.function(lambda x: x * 2.0 + v, backend=backend)
    for _ in range(3):
        np.testing.assert_array_equal(f(np.ones(4, np.float32)).numpy(), np.full(4, 3.0))
v.assign_add(np.ones(4, np.float32))
np.testing.assert_array_equal((gc.constant(1.0) + v).numpy(), np.full(4, 3.0))
assert "__getattr__" not in vars(Tensor) and "__getattr__" not in vars(Variable)
""")


def test_enabled_hooks_copy_device_values_to_the_host_once():
    """A stand-in device (a wrapper of a host array) in place of numba-cuda's."""
    _run(r"""
import numpy as np, graphc as gc
from graphc.runtime import tensor, variables
from graphc.runtime.tensor import Tensor

class Dev:
    def __init__(self, host):
        self.host, self.shape, self.dtype = host, host.shape, host.dtype

copies = []
def to_host(dev):
    copies.append(dev)
    return dev.host.copy()

def sync(var):
    var._value = var._dev.host.copy()
    var._dev = None

tensor.enable_device_values(to_host)
variables.enable_device_values(sync)
t = Tensor._on_device(Dev(np.arange(3, dtype=np.float32)))
assert t.is_on_device and t.shape == (3,) and not copies        # metadata: no copy
np.testing.assert_array_equal(t.numpy(), [0, 1, 2])
np.testing.assert_array_equal((t + 1.0).numpy(), [1, 2, 3])
assert len(copies) == 1                                           # copied once, kept
v = gc.Variable(np.zeros(3, np.float32))
assert v._dev is None
v._dev = Dev(np.full(3, 7, np.float32))
del v.__dict__["_value"]
np.testing.assert_array_equal(v.numpy(), [7, 7, 7])               # synced back on read
assert v._dev is None
""")
