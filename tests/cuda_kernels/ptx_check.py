"""Compile every kernel kind the CUDA generators emit to PTX for sm_90 with the real NVVM
(run as a script, WITHOUT NUMBA_ENABLE_CUDASIM: tests/cuda_kernels/test_ptx.py), and
report the libdevice functions the math kernels call. Prints one JSON object."""
import json
import os
import re
import sys
import types

assert not os.environ.get("NUMBA_ENABLE_CUDASIM"), "the real compiler, not the simulator"
sys.path.insert(0, os.path.dirname(__file__))

# Device functions ask the current device for its compute capability while the kernel
# calling them compiles; there is no device here, so answer sm_90 (what we compile for).
import numba.cuda.dispatcher as _dispatcher  # noqa: E402
_dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))

from numba import cuda  # noqa: E402
from numba.cuda.compiler import compile_cuda  # noqa: E402
from numba import types as nt  # noqa: E402

import cuda_kernel_cases as cases  # noqa: E402
import graphc as gc  # noqa: E402
from graphc.kernels.cuda import folding, gemm, lowering  # noqa: E402
from graphc.kernels.fusion import fuse  # noqa: E402
from cuda_kernel_helpers import groups, trace  # noqa: E402

CC = (9, 0)
report = {"kernels": [], "libdevice": {}, "errors": []}


def compile_plan(label, group, shapes, want_kind=None):
    plan = lowering._Plan(group, shapes)
    if want_kind is not None and plan.kind != want_kind:
        report["errors"].append(f"{label}: planned {plan.kind}, expected {want_kind}")
        return
    if plan.kind == "two_pass":     # both forms: one block, and partials + final
        saved = lowering.ONE_BLOCK_STEPS
        try:
            lowering.ONE_BLOCK_STEPS = 0 if plan.one_block else 1 << 60
            _compile(label, group, lowering._Plan(group, shapes))
        finally:
            lowering.ONE_BLOCK_STEPS = saved
    return _compile(label, group, plan)


def _compile(label, group, plan):
    ns = plan.module()
    for name in plan.kernel_names():
        fn = ns[name]
        sig = plan.arg_types(group, fn)
        try:
            cuda.compile_ptx(fn.py_func, sig, cc=CC)
            report["kernels"].append(f"{label}:{plan.kind}:{name}")
        except Exception as e:  # noqa: BLE001 - reported, the test fails on it
            report["errors"].append(f"{label}:{name}: {type(e).__name__}: {e}")
    return plan, ns


def libdevice_calls(label, group, shapes):
    """The __nv_* functions in the kernel's LLVM IR with its device functions (NVVM
    inlines libdevice into the PTX), and the PTX's float division instructions."""
    plan = lowering._Plan(group, shapes)
    fn = plan.module()[plan.kind]
    cres = compile_cuda(fn.py_func, nt.void, plan.arg_types(group, fn), debug=False,
                        lineinfo=False, cc=CC, nvvm_options={"opt": 3})
    ir = "\n".join(str(m) for m in cres.library.modules)
    found = report["libdevice"].setdefault(label, [])
    found += sorted(set(re.findall(r'@"?(__nv_\w+)"?\(', ir)) - set(found))
    ptx = cres.library.get_asm_str(cc=CC)
    report.setdefault("div", {}).setdefault(label, []).extend(
        sorted(set(re.findall(r"\bdiv\.\w+\.f(?:32|64)", ptx))))


def static(group, resize=None):
    return tuple((resize or {}).get(tuple(v.type.shape), tuple(v.type.shape))
                 for v in group.inputs)


def compile_graph(label, graph, want=None, resize=None):
    for n, grp in enumerate(groups(graph)):
        compile_plan(f"{label}/{n}", grp, static(grp, resize),
                     want if grp.axes else "elementwise")


S = [4, 6]
for dt in cases.FLOATS:
    g = trace(cases.float_math, gc.TensorSpec(S, dt), gc.TensorSpec([6], dt))
    compile_graph(f"float_math_{dt.name}", g)
    for grp in groups(g):
        libdevice_calls(dt.name, grp, static(grp))
    compile_graph(f"float_math_{dt.name}_flat",
                  trace(cases.float_math, gc.TensorSpec(S, dt), gc.TensorSpec(S, dt)))
for dt in cases.FLOATS:     # products stay separate instructions: no fma after them
    g = trace(cases.multiply_add, *[gc.TensorSpec([8], dt)] * 3)
    (grp,) = groups(g)
    plan = lowering._Plan(grp, static(grp))
    fn = plan.module()[plan.kind]
    ptx, _ = cuda.compile_ptx(fn.py_func, plan.arg_types(grp, fn), cc=CC)
    report.setdefault("fma", {})[dt.name] = sorted(set(re.findall(
        r"\b(fma\.\w+|mul\.rn)\.f(?:32|64)", ptx)))
for dt in cases.INTS:
    compile_graph(f"int_math_{dt.name}",
                  trace(cases.int_math, gc.TensorSpec(S, dt), gc.TensorSpec([], dt)))
compile_graph("bool_logic", trace(cases.bool_logic, gc.TensorSpec(S, cases.B),
                                  gc.TensorSpec(S, cases.B)))

# every reduction kind and dtype as a row kernel; the two-pass kernels (the same
# accumulate and tree lines) per kind for one float and one integer dtype
for kind in cases.KINDS:
    for dt in cases.FLOATS + cases.INTS:
        todo = [(1, "row")] + ([(0, "two_pass")] if dt in (cases.F32, cases.I64) else [])
        todo += [([0, 1], "two_pass")] if dt == cases.F64 and kind in ("sum", "max") else []
        for axis, want in todo:
            fn = cases.reductions(kind, dt, axis)
            compile_graph(fn.__name__, trace(fn, gc.TensorSpec([8, 16], dt)), want)

for name, fn, specs in (
        ("softmax", cases.softmax, [gc.TensorSpec([8, 16], cases.F32)]),
        ("logsumexp", cases.logsumexp, [gc.TensorSpec([8, 16], cases.F64)]),
        ("layernorm", cases.layernorm, [gc.TensorSpec([8, 16], cases.F32),
                                        gc.TensorSpec([16], cases.F32),
                                        gc.TensorSpec([16], cases.F32)])):
    g = trace(fn, *specs)
    compile_graph(name, g, "row")
    compile_graph(name + "_long_rows", g, "two_pass",
                  resize={(8, 16): (1, 1 << 20), (16,): (1 << 20,)})

# folded kernels (folding.py): epilogues after reductions and variable updates, in every
# form, and scalar groups merged into them with 0-d updates by one thread; a folded float
# update keeps its product a separate instruction (no fma: checked where no pow is inlined,
# whose libdevice code uses fma itself)
for dt in cases.FLOATS + cases.INTS:
    for fn, specs in (cases.folded(dt), cases.scalar_folded(dt)):
        g = trace(fn, *specs)
        for n, (kind, item) in enumerate(folding.fold(g, fuse(g))):
            grp = item.group if kind == "update" else item
            if kind == "op":
                continue
            label = f"{fn.__name__}/{n}"
            plan, ns = compile_plan(label, grp, static(grp)) or (None, None)
            if plan is not None and getattr(grp, "scalar_values", ()):
                report.setdefault("scalars", []).append(f"{label}:{plan.kind}")
            if plan is not None and any(not v.type.shape and id(v) not in grp.values
                                        for v, _ in getattr(grp, "updates", ())):
                report.setdefault("zero_d_updates", []).append(f"{label}:{plan.kind}")
            if kind == "update" and plan is not None and plan.kind == "elementwise" and \
                    dt in cases.FLOATS and fn.__name__.startswith("folded"):
                ptx, _ = cuda.compile_ptx(ns["elementwise"].py_func,
                                          plan.arg_types(grp, ns["elementwise"]), cc=CC)
                report.setdefault("fold_fma", {})[dt.name] = sorted(set(re.findall(
                    r"\b(fma\.\w+|mul\.rn)\.f(?:32|64)", ptx)))

# sum_to_shape's reductions at run-time shapes (shaped.py: one keepdims reduce_sum group of
# unknown dims), as a row and as a column sum
from graphc.kernels.cuda import shaped  # noqa: E402
for dt, axes, want in (("float32", (1,), "row"), ("float64", (0,), "two_pass")):
    grp = shaped._sum_kernel(dt, 2, axes).group
    compile_plan(f"sum_to_shape_{dt}", grp, ((8, 16),), want)

for dt in ("float32", "float64", "int32", "int64"):
    for ta in (False, True):
        for tb in (False, True):
            fn = gemm.module(dt, ta, tb)["gemm"]
            try:
                cuda.compile_ptx(fn.py_func, gemm.arg_types(dt), cc=CC)
                report["kernels"].append(f"gemm_{dt}_{ta}_{tb}")
            except Exception as e:  # noqa: BLE001
                report["errors"].append(f"gemm_{dt}_{ta}_{tb}: {type(e).__name__}: {e}")
print(json.dumps(report))
