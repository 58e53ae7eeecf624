"""The device steps that are not kernels.

cond / while: the predicate is copied to the host to branch (one sync per
cond, one per loop iteration: the price of data-dependent control flow on a GPU), and the
branch, condition and body graphs run as nested device plans, so loop variables stay on
the device between iterations. Nested plans run with their caller's CallMemory, so one
iteration's buffers are the next one's (memory.py).

A top-level cond whose inputs and outputs are all scalars, and a top-level while whose
loop state is all scalars (it may read tensors of up to CPU_LOOP_INPUT_BYTES in all, e.g. a
loop over x[i]), run on the CPU tier instead: the numba CPU backend's loop kernel
(kernels/cpu/loops.lower) on host copies of its inputs -- a copy per input instead of a
sync per iteration.

Variables: reads and updates act on the variable's device copy (`device.variable_on_device`).
"""
import numpy as np

from ...runtime.registry import REGISTRY
from ...runtime.types import TensorType
from ...runtime.variables import _check_shape
from . import backend as _b


def control_step(plan, op, rec):
    graphs = ([("true branch", op.attrs["true_branch"]), ("false branch", op.attrs["false_branch"])]
              if op.type == "cond" else [("loop condition", op.attrs["cond"]),
                                         ("loop body", op.attrs["body"])])

    def nested():
        return [(name, _b.compile_plan(g, nested=True)) for name, g in graphs]

    def run_cond(env, ins, outs):
        pred = env.host(ins[0])         # the sync
        branch = op.attrs["true_branch"] if pred else op.attrs["false_branch"]
        _b.STATS.add("device_ops")
        results = _b.compile_plan(branch, nested=True)([env.any(i) for i in ins[1:]], env.mem)
        env.put_all(outs, _single(results))
        _release(env.mem, results)      # now held by this plan's slots

    def run_while(env, ins, outs):
        n, mem = op.attrs["n_vars"], env.mem
        cond = _b.compile_plan(op.attrs["cond"], nested=True)
        body = _b.compile_plan(op.attrs["body"], nested=True)
        values = [env.any(i) for i in ins]
        loop_vars, caps = values[:n], values[n:]
        owned = False                   # loop_vars hold references once a body made them
        _b.STATS.add("device_ops")
        while True:
            pred = cond(loop_vars + caps, mem)
            go = _truth(plan, pred[0])
            _release(mem, pred)
            if not go:
                break
            new = body(loop_vars + caps, mem)
            if owned:
                _release(mem, loop_vars)    # the last iteration's buffers go back
            loop_vars, owned = new, True
        env.put_all(outs, _single(loop_vars))
        if owned:
            _release(mem, loop_vars)

    run = run_cond if op.type == "cond" else run_while
    run.nested_plans = nested
    return run


# What a scalar-state while may read besides its state, copied to the host once per call:
# a sync per iteration costs more than copying this much (~0.1 ms) after a few iterations
CPU_LOOP_INPUT_BYTES = 1 << 20


def _scalar(v):
    return isinstance(v.type, TensorType) and v.type.shape == ()


def _cpu_tier_inputs(op):
    """True when `op`'s inputs suit the CPU tier: all scalars, or for a while, scalar loop
    variables and tensors of static shape up to CPU_LOOP_INPUT_BYTES in all."""
    ins = list(op.inputs)
    if all(_scalar(v) for v in ins):
        return True
    if op.type != "while" or not all(_scalar(v) for v in ins[:op.attrs["n_vars"]]):
        return False
    total = 0
    for v in ins[op.attrs["n_vars"]:]:
        if not isinstance(v.type, TensorType) or None in v.type.shape:
            return False
        total += int(np.prod(v.type.shape, dtype=np.int64)) * v.type.dtype.np.itemsize
    return total <= CPU_LOOP_INPUT_BYTES


def scalar_loop(op):
    """(a kernels.cpu LoopRunner for `op`, "") when its outputs (its state) are all scalars,
    its inputs suit the CPU tier and the CPU loop kernel takes it; else (None, why not, for
    describe(), or "")."""
    if not all(_scalar(v) for v in op.outputs) or not _cpu_tier_inputs(op):
        return None, ""
    from ..cpu import loops
    try:
        return loops.lower(op), ""
    except loops.NotLowerable as e:
        return None, f" (scalar state, but the CPU loop kernel cannot run it: {e})"


def cpu_loop_step(runner):
    def run(env, ins, outs):
        values = [env.host(i) for i in ins]
        r = runner(*[v if isinstance(v, (np.ndarray, np.generic)) else np.asarray(v)
                     for v in values])
        _b.STATS.add("cpu_loops")
        env.put_all(outs, r)
    return run


def _release(mem, values):
    for x in values:
        mem.unref(x)


def _single(out):
    return out[0] if len(out) == 1 else tuple(out)


def _truth(plan, pred):
    if plan.dev.is_device(pred):
        pred = plan.dev.to_host(pred)      # the per-iteration sync
    return bool(pred)


# -- variables on the device ---------------------------------------------------------------

def _read_step(plan, op, rec, env, ins, outs):
    _b.STATS.add("device_ops")
    env.put(outs[0], plan.dev.variable_on_device(env.host(ins[0])))


def _assign_step(plan, op, rec, env, ins, outs):
    update_variable(plan, op, env.host(ins[0]), env.device(ins[1]))


def _update_step(plan, op, rec, env, ins, outs):
    from . import updates
    var = env.host(ins[0])
    if not updates.runs_on_device(var.dtype.np):
        rec.why = f"{var.dtype.name} variables update on the host (numpy's rules)"
        return plan._fallback(env, REGISTRY[op.type].numpy, ins, outs, op)
    update_variable(plan, op, var, env.device(ins[1]))


def update_variable(plan, op, var, value):
    """`op` (assign, assign_add or assign_sub; for the latter two a dtype updates.py runs)
    of device array `value` into `var`'s device copy."""
    from . import checks, updates
    _check_shape(op.type.replace("_variable", ""), var, value)
    _b.STATS.add("device_ops")
    if op.type != "assign_variable":
        name = "add" if op.type == "assign_add_variable" else "subtract"
        new = updates.combine(plan.dev.variable_on_device(var), value, name)
    elif checks.pending() and updates.runs_on_device(var.dtype.np) and \
            value.is_c_contiguous():
        # a check may have failed unseen: the kernel keeps the old value if so
        new = updates.combine(plan.dev.variable_on_device(var), value, "assign")
    else:   # a copy: the value may be a caller's array that it changes later
        new = plan.dev.device_copy(value)
    plan.dev.set_variable(var, new)


VARIABLE_STEPS = {"read_variable": _read_step, "assign_variable": _assign_step,
                  "assign_add_variable": _update_step, "assign_sub_variable": _update_step}
