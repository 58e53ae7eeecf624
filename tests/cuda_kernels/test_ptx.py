"""Every kernel kind the generators emit compiles to PTX for sm_90 with the real NVVM (no
GPU needed), so code the simulator accepts but the compiler rejects fails here; the math
calls CUDA's libdevice and float division is IEEE-rounded (no fastmath)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
MATH = ("exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "erf", "floor", "ceil",
        "pow", "copysign")


@pytest.fixture(scope="module")
def report():
    pytest.importorskip("numba.cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, os.path.join(HERE, "ptx_check.py")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_kernel_kind_compiles_to_ptx(report):
    assert report["errors"] == []
    kinds = {k.split(":")[1] if ":" in k else "gemm" for k in report["kernels"]}
    assert kinds == {"elementwise", "row", "two_pass", "gemm"}
    names = {k.rsplit(":", 1)[-1] for k in report["kernels"] if ":" in k}
    assert {"elementwise", "row", "partials_0", "partials_1", "final", "one_block"} <= names
    for label in ("softmax", "logsumexp", "layernorm"):
        assert any(k.startswith(f"{label}/0:row:") for k in report["kernels"]), label
        assert any(k.startswith(f"{label}_long_rows/0:two_pass:") for k in report["kernels"])
    for kind in ("sum", "prod", "max", "min", "all", "any"):
        for dt in ("float32", "float64", "int32", "int64"):
            assert any(k.startswith(f"reduce_{kind}_{dt}_1/") and ":row:" in k
                       for k in report["kernels"]), (kind, dt)
    assert len([k for k in report["kernels"] if k.startswith("gemm_")]) == 16
    for label, kind in (("sum_to_shape_float32", "row"), ("sum_to_shape_float64", "two_pass")):
        assert any(k.startswith(f"{label}:{kind}:") for k in report["kernels"]), label


@pytest.mark.parametrize("dtype,suffix", [("float32", "f"), ("float64", "")])
def test_math_calls_libdevice(report, dtype, suffix):
    called = set(report["libdevice"][dtype])
    missing = {f"__nv_{name}{suffix}" for name in MATH} - called
    assert not missing, f"not calling libdevice: {sorted(missing)} (found {sorted(called)})"


@pytest.mark.parametrize("dtype,bits", [("float32", 32), ("float64", 64)])
def test_float_division_is_ieee_rounded(report, dtype, bits):
    assert report["div"][dtype] and set(report["div"][dtype]) == {f"div.rn.f{bits}"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_are_not_contracted_into_fma(report, dtype):
    assert report["fma"][dtype] == ["mul.rn"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_folded_kernels_compile_to_ptx(report, dtype):
    """folding.py's kernels: an update in an elementwise kernel, an epilogue and an update
    in a column reduction (one block, and partials + final), in a row kernel with a
    kept-axes input, and a full mean's divide."""
    got = {k.split("/", 1)[1].split(":", 1)[1] for k in report["kernels"]
           if k.startswith(f"folded_{dtype}/")}
    assert {"elementwise:elementwise", "two_pass:one_block", "two_pass:final",
            "two_pass:partials_0", "row:row"} <= got, got


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_folded_update_keeps_the_product_separate(report, dtype):
    assert report["fold_fma"][dtype] == ["mul.rn"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_scalar_folds_compile_to_ptx(report, dtype):
    """folding.py's merged scalar groups (computed once per thread before the loops) in an
    elementwise update, a column sum's update (one block, and partials + final) and a row
    kernel; 0-d updates by one thread in the elementwise and the row kernel."""
    got = {k.split("/", 1)[1].split(":", 1)[1] for k in report["kernels"]
           if k.startswith(f"scalars_{dtype}/")}
    assert {"elementwise:elementwise", "two_pass:one_block", "two_pass:final",
            "two_pass:partials_0", "row:row"} <= got, got
    mine = [s.split("/", 1)[1] for s in report["scalars"] if s.startswith(f"scalars_{dtype}/")]
    assert sorted(k.split(":")[1] for k in mine) == ["elementwise", "row", "two_pass"], mine
    zero_d = [s.split(":")[1] for s in report["zero_d_updates"]
              if s.startswith(f"scalars_{dtype}/")]
    assert sorted(zero_d) == ["elementwise", "row"], zero_d
