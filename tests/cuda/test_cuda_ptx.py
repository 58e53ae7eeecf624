"""The plumbing's own kernels (variable updates, device checks, run-time-shape broadcasts and
fills) compile to PTX for sm_90 with the real NVVM, in a process without the simulator (no
GPU needed): code the simulator accepts but the real compiler rejects fails here."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba_cuda")

SCRIPT = """
from numba import cuda, types
from graphc.kernels.cuda import checks, shaped, updates
done = []
i64 = types.Array(types.int64, 1, "C")
for name, fn in updates.KERNEL_SOURCES.items():
    for t in (types.int32, types.int64, types.float32, types.float64, types.uint8):
        arr = types.Array(t, 1, "C")
        ptx, _ = cuda.compile_ptx(fn, (arr, arr, arr, i64), cc=(9, 0))
        assert ".target sm_90" in ptx and ".visible .entry" in ptx, ptx[:400]
        done.append(f"{name}:{t}")
for t in (types.int32, types.int64):        # graphc's integer dtypes
    arr = types.Array(t, 1, "C")
    ptx, _ = cuda.compile_ptx(checks.KERNEL_SOURCES["check_ids"],
                              (arr, arr, i64, i64, i64, types.int64, types.int64), cc=(9, 0))
    assert ".target sm_90" in ptx and "atom.global" in ptx and "membar.sys" in ptx, ptx[:400]
    done.append(f"check_ids:{t}")
for t in (types.int32, types.int64, types.float32, types.float64, types.boolean):
    arr = types.Array(t, 1, "C")
    for name, ints in (("broadcast", 7), ("fill", 0)):     # run-time shapes (shaped.py)
        ptx, _ = cuda.compile_ptx(shaped.KERNEL_SOURCES[name], (arr, arr) + (types.int64,) * ints,
                                  cc=(9, 0))
        assert ".target sm_90" in ptx and ".visible .entry" in ptx, ptx[:400]
        done.append(f"{name}:{t}")
print(len(done))
"""


def test_update_kernels_compile_to_ptx_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       env=env, cwd=root, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "27"
