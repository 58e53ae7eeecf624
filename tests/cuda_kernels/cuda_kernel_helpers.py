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
    outs = kern(*[cuda.to_device(np.ascontiguousarray(env[id(v)])) for v in group.inputs])
    got = [o.copy_to_host() for o in outs]
    want = [env[id(v)] for v in group.outputs]
    return got, want, kern
