"""backend="cuda": the numba CPU backend's plan (optimize, fuse, steps over slots), run with
values in device memory.

Each fusion group goes to `lowering.lower_group` (single-op groups too) and runs as its
kernel; matmul goes to `lowering.matmul`; reshape/expand_dims/squeeze of a contiguous array
are device views; variable reads and updates act on the variable's device copy; cond/while
branch on a predicate copied to the host (one sync per branch / per iteration) and run their
bodies as nested plans on the device. Every other op falls back: its inputs are copied to
the host, its numpy rule runs, and its results are copied to the device only when a device
step (or the function's result) needs them. `describe(graph)` says which path each op took
and why; `STATS` counts them.

Slots hold a value on the device, on the host, or both (a copy made once per call).
"""
import threading
from functools import partial

import numpy as np

from ...runtime.backends import register_backend
from ...runtime.executor import last_uses
from ...runtime.registry import REGISTRY
from ...runtime.run_errors import located
from ...runtime.variables import _check_shape
from ..fusion import fuse
from ..planning import optimized
from . import availability

VIEW_OPS = ("reshape", "expand_dims", "squeeze")
VAR_OPS = ("read_variable", "assign_variable", "assign_add_variable", "assign_sub_variable")


class Stats:
    """What ran where, process-wide: `kernels` (group kernels and matmuls launched),
    `fallbacks` (ops run by their numpy rule), `views`, `device_ops` (variable reads and
    updates, control flow on the device)."""

    FIELDS = ("kernels", "fallbacks", "views", "device_ops")

    def __init__(self):
        self._lock = threading.Lock()
        for f in self.FIELDS:
            setattr(self, f, 0)

    def add(self, field):
        with self._lock:
            setattr(self, field, getattr(self, field) + 1)

    def snapshot(self):
        return {f: getattr(self, f) for f in self.FIELDS}


STATS = Stats()


class Record:
    """Where one step runs, why, and how often it ran (shown by describe())."""

    def __init__(self, what, path, why=""):
        self.what, self.path, self.why, self.runs = what, path, why, 0

    def text(self):
        why = self.why() if callable(self.why) else self.why     # a kernel's: its last run
        why = f": {why}" if why else ""
        return f"{self.what}: {self.path}{why} [ran {self.runs}x]"


def _device():
    from . import device
    return device


class Plan:
    """The compiled form of one graph for the device. `nested` plans (cond/while bodies)
    are not optimized again and return their results wherever they are; the top-level
    plan returns every result as a device array."""

    def __init__(self, graph, nested=False):
        from . import lowering
        self.source_graph = graph
        self.nested = nested
        self.graph, self.optimize_error = (graph, None) if nested else optimized(graph)
        self.steps, self.records = [], []
        self.dev = _device()
        index = {}
        for v in self.graph.all_inputs:
            index[id(v)] = len(index)
        self.n_in = len(index)
        self.consts, self.const_dev = {}, {}
        self._const_lock = threading.Lock()
        for kind, item in fuse(self.graph):
            ops = item.ops if kind == "group" else [item]
            kernel = None
            if kind == "group" and not _is_constant_only(ops):
                kernel = lowering.lower_group(item)
            if kernel is not None:
                rec = Record(f"{item.name} [{', '.join(op.name for op in ops)}]", "kernel",
                             partial(_describe, kernel))
                ins = tuple(index[id(v)] for v in item.inputs)
                outs = tuple(index.setdefault(id(v), len(index)) for v in item.outputs)
                self._add(self._kernel_step(kernel, item), "device", ins, outs, ops[-1], rec)
                continue
            why = ""
            if kind == "group":
                why = f"{item.name} has no CUDA lowering (lower_group returned None)"
            for op in ops:
                if op.type == "constant" and not op.inputs:
                    self.consts[index.setdefault(id(op.outputs[0]), len(index))] = \
                        op.attrs["value"]
                    continue
                self._op_step(op, index, why)
        self.out_idx = tuple(index[id(v)] for v in self.graph.outputs)
        dead = last_uses([(None, s[2], s[3], None) for s in self.steps], self.n_in,
                         set(self.out_idx))
        self.steps = [s + (d,) for s, d in zip(self.steps, dead)]
        self.n_slots = len(index)

    def _add(self, fn, needs, ins, outs, op, rec):
        self.steps.append((fn, needs, ins, outs, op, rec))
        self.records.append(rec)

    def _op_step(self, op, index, group_why):
        ins = tuple(index[id(v)] for v in op.inputs)
        outs = tuple(index.setdefault(id(v), len(index)) for v in op.outputs)
        what = f"{op.type} '{op.name}'"
        impl = REGISTRY[op.type].numpy
        rule = partial(impl, **op.attrs) if op.attrs else impl
        if op.type == "matmul":
            rec = Record(what, "kernel", "lowering.matmul (not run yet; falls back if the "
                         "lowering has no kernel for it)")
            self._add(self._matmul_step(op, rule, rec), "mixed", ins, outs, op, rec)
        elif op.type in VIEW_OPS and _static(op.outputs[0]):
            rec = Record(what, "device view", "no copy when the input is contiguous")
            self._add(self._view_step(op, rule, rec), "mixed", ins, outs, op, rec)
        elif op.type in VAR_OPS:
            rec = Record(what, "device", "the variable's device copy")
            self._add(partial(_VARIABLE_STEPS[op.type], self, op, rec), "mixed", ins, outs,
                      op, rec)
        elif op.type in ("cond", "while"):
            from .control import control_step
            rec = Record(what, "device", "predicate copied to the host to branch "
                         + ("(once)" if op.type == "cond" else "(each iteration)")
                         + "; bodies run as nested device plans")
            self._add(control_step(self, op, rec), "mixed", ins, outs, op, rec)
        else:
            why = _fallback_reason(op, group_why)
            self._add(rule, "host", ins, outs, op, Record(what, "fallback", why))

    # -- step kinds ("mixed" steps get the Env and fetch their inputs themselves) --------
    def _kernel_step(self, kernel, group):
        def run(*inputs):
            STATS.add("kernels")
            return kernel(list(inputs))
        return run

    def _matmul_step(self, op, rule, rec):
        from . import lowering

        def run(env, ins, outs):
            a, b = env.device(ins[0]), env.device(ins[1])
            try:
                r = lowering.matmul(a, b, **op.attrs)
            except NotImplementedError as e:
                rec.path, rec.why = "fallback", f"lowering.matmul: {e}"
                return self._fallback(env, rule, ins, outs, op)
            rec.path, rec.why = "kernel", "lowering.matmul"
            STATS.add("kernels")
            env.put(outs[0], r)
        return run

    def _view_step(self, op, rule, rec):
        shape = op.outputs[0].type.shape

        def run(env, ins, outs):
            d = env.dev_value(ins[0])
            v = self.dev.view(d, shape) if d is not None else None
            if v is None:       # on the host, or not contiguous: the rule, on the host
                rec.why = ("last run: its input was on the host" if d is None else
                           "last run: its input was not contiguous")
                return self._fallback(env, rule, ins, outs, op)
            STATS.add("views")
            env.put(outs[0], v)
        return run

    def _fallback(self, env, rule, ins, outs, op):
        values = [env.host(i) for i in ins]
        try:
            r = rule(*values)
        except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
            err = located(op, e, values)
            if err is None:
                raise
            raise err from e
        STATS.add("fallbacks")
        env.put_all(outs, r)

    # -- running ---------------------------------------------------------------------------
    def const_device(self, slot):
        d = self.const_dev.get(slot)
        if d is None:
            with self._const_lock:      # uploaded once per plan, whichever thread is first
                d = self.const_dev.get(slot)
                if d is None:
                    d = self.const_dev[slot] = self.dev.to_device(self.consts[slot])
        return d

    def __call__(self, args):
        env = Env(self, args)
        for fn, needs, ins, outs, op, rec, dead in self.steps:
            rec.runs += 1
            if needs == "host":
                self._fallback(env, fn, ins, outs, op)
            elif needs == "device":
                try:
                    r = fn(*[env.device(i) for i in ins])
                except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
                    err = located(op, e, env.shapes(ins))
                    if err is None:
                        raise
                    raise err from e
                for o, x in zip(outs, r):
                    env.put(o, x)
            else:
                try:
                    fn(env, ins, outs)
                except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
                    err = located(op, e, env.shapes(ins))
                    if err is None:
                        raise
                    raise err from e
            for d in dead:
                env.drop(d)
        if self.nested:
            return [env.any(i) for i in self.out_idx]
        return [env.device(i) for i in self.out_idx]


class Env:
    """One call's slots: `d` the device values, `h` the host values (either may be missing
    until a step needs it; each copy is made once per call)."""

    __slots__ = ("plan", "d", "h")

    def __init__(self, plan, args):
        dev = plan.dev
        self.plan = plan
        n = plan.n_slots
        self.d, self.h = [None] * n, [None] * n
        for i, a in enumerate(args):
            if dev.is_device(a):
                self.d[i] = a
            elif hasattr(a, "__cuda_array_interface__"):
                self.d[i] = dev.from_foreign(a)
            else:
                self.h[i] = a
        for slot, value in plan.consts.items():
            self.h[slot] = value
            self.d[slot] = plan.const_dev.get(slot)

    def device(self, i):
        d = self.d[i]
        if d is None:
            if i in self.plan.consts:
                d = self.plan.const_device(i)
            else:
                h = self.h[i]
                if not isinstance(h, (np.ndarray, np.generic, bool, int, float)):
                    raise TypeError(f"a {type(h).__name__} cannot be copied to the device")
                d = self.plan.dev.to_device(h)
            self.d[i] = d
        return d

    def host(self, i):
        h = self.h[i]
        if h is None and self.d[i] is not None:
            h = self.h[i] = self.plan.dev.to_host(self.d[i])
        return h

    def dev_value(self, i):
        return self.d[i]

    def shapes(self, ins):
        """Slots `ins` for an error message: host values as they are, device arrays as
        zero-memory stand-ins of their run-time shape and dtype (no copy)."""
        return [self.h[i] if self.d[i] is None else
                np.broadcast_to(np.zeros((), self.d[i].dtype), self.d[i].shape) for i in ins]

    def any(self, i):
        d = self.d[i]
        return self.h[i] if d is None else d

    def put(self, i, x):
        if self.plan.dev.is_device(x):
            self.d[i], self.h[i] = x, None
        else:
            self.h[i], self.d[i] = x, None

    def put_all(self, outs, r):
        if len(outs) == 1:
            self.put(outs[0], r)
        elif outs:       # extra results are ignored, as the interpreter does
            for o, x in zip(outs, r):
                self.put(o, x)

    def drop(self, i):
        self.d[i] = self.h[i] = None


# -- variables on the device ---------------------------------------------------------------

def _read_step(plan, op, rec, env, ins, outs):
    STATS.add("device_ops")
    env.put(outs[0], plan.dev.variable_on_device(env.host(ins[0])))


def _assign_step(plan, op, rec, env, ins, outs):
    var = env.host(ins[0])
    value = env.device(ins[1])
    _check_shape("assign", var, value)
    STATS.add("device_ops")
    # a copy: the value may be a caller's array that it changes later
    plan.dev.set_variable(var, plan.dev.device_copy(value))


def _update_step(plan, op, rec, env, ins, outs):
    from . import updates
    var = env.host(ins[0])
    name = "add" if op.type == "assign_add_variable" else "subtract"
    if not updates.runs_on_device(var.dtype.np):
        rec.why = f"{var.dtype.name} variables update on the host (numpy's rules)"
        return plan._fallback(env, REGISTRY[op.type].numpy, ins, outs, op)
    value = env.device(ins[1])
    _check_shape(op.type.replace("_variable", ""), var, value)
    current = plan.dev.variable_on_device(var)
    STATS.add("device_ops")
    plan.dev.set_variable(var, updates.combine(current, value, name))


_VARIABLE_STEPS = {"read_variable": _read_step, "assign_variable": _assign_step,
                   "assign_add_variable": _update_step, "assign_sub_variable": _update_step}


# -- helpers -------------------------------------------------------------------------------

def _is_constant_only(ops):
    return all(op.type == "constant" and not op.inputs for op in ops)


def _static(value):
    shape = getattr(value.type, "shape", None)
    return shape is not None and None not in shape


def _fallback_reason(op, group_why):
    if group_why:
        return group_why
    if op.type in VIEW_OPS:
        return "its result shape is not known when tracing (a view needs it)"
    return f"no CUDA path for {op.type}: its numpy rule runs on the host copy"


def _describe(kernel):
    d = getattr(kernel, "describe", None)
    return d() if callable(d) else type(kernel).__name__


def compile_plan(graph, nested=False):
    plan = getattr(graph, "_cuda_plan", None)
    if plan is None:
        plan = Plan(graph, nested)
        graph._cuda_plan = plan
    return plan


class CudaBackend:
    """Lowered CUDA kernels on numba-cuda, with the numpy rules for everything else."""

    name = "cuda"
    device_values = True      # ConcreteFunction feeds device arrays, wraps device results

    @staticmethod
    def unavailable_reason():
        return availability.missing()

    @staticmethod
    def available():
        return availability.missing() is None

    @staticmethod
    def compile(graph):
        _device()           # installs the host-copy hooks of Tensor and Variable

        def run(args):
            return compile_plan(graph)(args)
        return run


register_backend(CudaBackend)


def describe(graph):
    """Which path each op or group of `graph` takes on the device, and why."""
    why = availability.missing()
    if why is not None:
        raise ValueError(why)
    plan = compile_plan(graph)
    where = "numba-cuda simulator" if plan.dev.SIMULATED else "GPU"
    lines = [f"cuda backend plan for graph {graph.name} ({where})"]
    if plan.optimize_error:
        lines.append(f"  optimizer skipped: {plan.optimize_error}")
    lines.extend(_plan_lines(plan, "  "))
    lines.append(f"  constants: {len(plan.consts)} (uploaded once per plan, on first use)")
    t = plan.dev.TRANSFERS
    lines.append(f"  host<->device copies this process: {t.h2d} to device, {t.d2h} to host")
    return "\n".join(lines)


def _plan_lines(plan, pad):
    lines = []
    for fn, needs, ins, outs, op, rec, dead in plan.steps:
        lines.append(pad + rec.text())
        for sub_name, sub in getattr(fn, "nested_plans", lambda: [])():
            lines.append(f"{pad}  {sub_name}:")
            lines.extend(_plan_lines(sub, pad + "    "))
    return lines
