"""Tracing a function, fusing its graph and running one group's CUDA kernel on the inputs
the numpy interpreter gives that group, beside the numpy rules' results for it."""
import numpy as np

import graphc as gc
from graphc.kernels.fusion import fuse
from graphc.runtime.passes import optimize
from graphc.runtime.registry import REGISTRY


def trace(fn, *specs):
    f = gc.function(fn, input_signature=list(specs), backend="numpy")
    return optimize(f.get_concrete_function().graph)


def groups(graph):
    return [item for kind, item in fuse(graph) if kind == "group"]


def values(graph, args):
    """id(Value) -> numpy value for every value of `graph` on `args` (numpy rules)."""
    env = {id(v): np.asarray(a) for v, a in zip(graph.inputs, args)}
    for v, src in graph.captures:
        env[id(v)] = np.asarray(src._np if hasattr(src, "_np") else src)
    for op in graph.operations:
        rule = REGISTRY[op.type].numpy
        out = rule(*[env[id(v)] for v in op.inputs], **op.attrs)
        outs = out if len(op.outputs) > 1 else [out]
        for v, o in zip(op.outputs, outs):
            env[id(v)] = np.asarray(o)
    return env


def run_group(group, env):
    """(CUDA kernel's outputs on the host, the numpy rules' outputs, the GroupKernel)."""
    from numba import cuda
    from graphc.kernels.cuda.lowering import lower_group
    kern = lower_group(group)
    assert kern is not None, f"{group.name} was not lowered"
    outs = kern(*[cuda.to_device(np.array(env[id(v)], order="C")) for v in group.inputs])
    got = [o.copy_to_host() for o in outs]
    want = [env[id(v)] for v in group.outputs]
    return got, want, kern


def assert_same(got, want, rtol=0.0, atol=0.0, ulps=0):
    """Same shape and dtype; equal up to rtol/atol (or `ulps` units in the last place of
    numpy's value, for libdevice's math on a GPU, with infinities and zeros exact) with NaN
    where numpy has NaN, and the sign of every zero kept (0: bit-for-bit equal values)."""
    assert got.shape == want.shape and got.dtype == want.dtype, \
        (got.shape, got.dtype, want.shape, want.dtype)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    if ulps:
        special = ~np.isfinite(want) | (want == 0)
        np.testing.assert_array_equal(got[special], want[special])
        w = want[~special].astype(np.float64)
        step = np.spacing(np.abs(want[~special])).astype(np.float64)
        worst = np.abs(got[~special].astype(np.float64) - w) / step
        assert (worst <= ulps).all(), f"{worst.max():.1f} ulp from numpy (bound {ulps})"
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    zero = want == 0
    assert (np.signbit(got[zero]) == np.signbit(want[zero])).all(), "sign of zero"


def check(fn, specs, args, rtol=0.0, atol=0.0, kinds=None, numpy_ok=False, ulps=0):
    """Trace `fn`, run every fused group's kernel on the inputs numpy gives it, compare
    with the numpy rules' outputs; returns the GroupKernels (for describe()). Every group
    must have run a CUDA kernel (not the numpy rules) unless `numpy_ok`."""
    graph = trace(fn, *specs)
    env = values(graph, args)
    kernels = []
    for grp in groups(graph):
        got, want, kern = run_group(grp, env)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol, ulps)
        assert numpy_ok or kern.last.kind is not None, kern.describe()
        kernels.append(kern)
    if kinds is not None:
        assert sorted(k.last.kind for k in kernels) == sorted(kinds)
    return kernels
