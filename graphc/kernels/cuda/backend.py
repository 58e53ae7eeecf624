"""backend="cuda": the numba CPU backend's plan (optimize, fuse, steps over slots), run with
values in device memory.

Each fusion group goes to `lowering.lower_group` (single-op groups too) and runs as its
kernel; matmul goes to `lowering.matmul`; reshape/expand_dims/squeeze of a contiguous array
are device views (their shape found at run time under None dims); broadcast_to and
sum_to_shape of run-time shapes run on the device (shaped.py); variable reads and updates act on the variable's device copy; cond/while
branch on a predicate copied to the host (one sync per branch / per iteration) and run their
bodies as nested plans on the device. Every other op falls back: its inputs are copied to
the host, its numpy rule runs, and its results are copied to the device only when a device
step (or the function's result) needs them. `describe(graph)` (records.py) says which
path each op took and why; `STATS` counts them.

Slots (env.py) hold a value on the device, on the host, or both (a copy made once per call).
Intermediate device buffers come from the plan's pool and go back at their last use; the
results are new arrays (memory.py).
The control-flow and variable steps live in control.py.
"""
import threading
from functools import partial

from ...runtime.backends import register_backend
from ...runtime.executor import last_uses
from ...runtime.registry import REGISTRY
from ...runtime.run_errors import located
from ..fusion import fuse
from ..planning import optimized
from . import availability, folding
from .env import Env, stand_ins
from .host_shapes import HostShapes
from .memory import CallMemory, Pool, limit
from .records import STATS, Record, cpu_loop_why, describe, kernel_text  # noqa: F401 - describe
from .single import single_kernel

VIEW_OPS = ("reshape", "expand_dims", "squeeze")
VAR_OPS = ("read_variable", "assign_variable", "assign_add_variable", "assign_sub_variable")
CHECK_OPS = ("check_class_ids",)   # result = first input once the check passes
# read only their first input's shape (a dynamic-shape graph's shape vectors, run-time
# shape checks): no copy of it to the host
SHAPE_OPS = ("shape", "check_shape")
# run-time shapes (None dims), data on the device: shaped.py
SHAPED_OPS = ("broadcast_to", "sum_to_shape")


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
        self.has_checks = False     # device checks: the results carry their launch number
        self.dev = _device()
        from . import checks
        self.checks = checks
        index = {}
        for v in self.graph.all_inputs:
            index[id(v)] = len(index)
        self.n_in = len(index)
        self.consts, self.const_dev = {}, {}
        self._const_lock = threading.Lock()
        self.shapes = HostShapes(self.graph)       # run-time shape arithmetic: host_shapes.py
        for kind, item in folding.fold(self.graph, fuse(self.graph)):
            if kind == "update":    # a group and the variable updates its kernel writes
                fn, ins, outs, rec = item.step(self, index)
                self._add(fn, "mixed", ins, outs, item.group.ops[-1], rec)
                continue
            ops = item.ops if kind == "group" else [item]
            if self.shapes.takes(ops):
                for op in ops:
                    self._host_shape_step(op, index)
                continue
            kernel = None
            if kind == "group" and not _is_constant_only(ops):
                kernel = lowering.lower_group(item)
            if kernel is not None:
                rec = Record(f"{item.name} [{', '.join(op.name for op in ops)}]", "kernel",
                             partial(kernel_text, kernel))
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
        self.shapes.settle(index, self.out_idx)
        # inputs die at their last use too: one uploaded from the host is a pooled buffer
        dead = last_uses([(None, s[2], s[3], None) for s in self.steps], 0,
                         set(self.out_idx))
        self.steps = [s + (d,) for s, d in zip(self.steps, dead)]
        self.n_slots = len(index)
        self.escapes = frozenset() if nested else frozenset(self.out_idx)
        self.pool = Pool()      # nested plans use their top-level call's
        self.single = single_kernel(self)      # one kernel step: its fast path (single.py)

    @staticmethod
    def rule(op):
        """`op`'s numpy rule with its attrs."""
        impl = REGISTRY[op.type].numpy
        return partial(impl, **op.attrs) if op.attrs else impl

    def _add(self, fn, needs, ins, outs, op, rec):
        self.steps.append((fn, needs, ins, outs, op, rec))
        self.records.append(rec)

    def _op_step(self, op, index, group_why):
        ins = tuple(index[id(v)] for v in op.inputs)
        outs = tuple(index.setdefault(id(v), len(index)) for v in op.outputs)
        what = f"{op.type} '{op.name}'"
        rule = self.rule(op)
        if op.type == "matmul":
            rec = Record(what, "kernel", "lowering.matmul (not run yet; falls back if the "
                         "lowering has no kernel for it)")
            self._add(self._matmul_step(op, rule, rec), "mixed", ins, outs, op, rec)
        elif op.type in VIEW_OPS:
            rec = Record(what, "device view", "no copy when the input is contiguous" + (
                "" if _static(op.outputs[0]) else "; its shape found at run time"))
            self._add(self._view_step(op, rule, rec), "mixed", ins, outs, op, rec)
        elif op.type in SHAPED_OPS:
            from . import shaped
            if op.type == "broadcast_to":
                rec = Record(what, "kernel", "shaped.broadcast (not run yet)")
                step = shaped.broadcast_step(self, op, rec)
            else:
                rec = Record(what, "device", "its input itself when there is nothing to "
                             "sum, else a reduction kernel (shapes read on the host)")
                step = shaped.sum_to_shape_step(self, op, rec)
            self._add(step, "mixed", ins, outs, op, rec)
        elif op.type in SHAPE_OPS:
            if op.type == "shape":
                self.shapes.add_shape(op)
            rec = Record(what, "host", "reads only its input's shape (no copy of its data)")
            self._add(self._shape_step(op, rule, rec), "mixed", ins, outs, op, rec)
        elif op.type in CHECK_OPS:
            rec = Record(what, "device", "checked by a kernel, nothing waits: a bad id "
                         "raises at the next copy to the host (checks.py); its result is "
                         "the input, left on the device")
            self.has_checks = True
            self._add(self._check_step(op, rule, rec), "mixed", ins, outs, op, rec)
        elif op.type in VAR_OPS:
            from .control import VARIABLE_STEPS
            rec = Record(what, "device", "the variable's device copy")
            self._add(partial(VARIABLE_STEPS[op.type], self, op, rec), "mixed", ins, outs,
                      op, rec)
        elif op.type in ("cond", "while"):
            from .control import control_step, cpu_loop_step, scalar_loop
            runner, not_cpu = (None, "") if self.nested else scalar_loop(op)
            if runner is not None:
                rec = Record(what, "cpu loop kernel", partial(cpu_loop_why, runner))
                self._add(cpu_loop_step(runner), "mixed", ins, outs, op, rec)
                return
            rec = Record(what, "device", "predicate copied to the host to branch "
                         + ("(once)" if op.type == "cond" else "(each iteration)")
                         + "; bodies run as nested device plans" + not_cpu)
            self._add(control_step(self, op, rec), "mixed", ins, outs, op, rec)
        else:
            why = _fallback_reason(op, group_why)
            self._add(rule, "host", ins, outs, op, Record(what, "fallback", why))

    def _host_shape_step(self, op, index):
        ins = tuple(index[id(v)] for v in op.inputs)
        outs = tuple(index.setdefault(id(v), len(index)) for v in op.outputs)
        rec = Record(f"{op.type} '{op.name}'", "host", "run-time shape arithmetic: its "
                     "numpy rule on host shape vectors (no copy; a kernel reading its "
                     "result gets one upload per value, kept)")
        rule = self.rule(op)

        def run(env, ins, outs):
            STATS.add("host_ops")       # an error is located as any mixed step's (run)
            env.put_all(outs, rule(*[env.host(i) for i in ins]))
        self._add(run, "mixed", ins, outs, op, rec)

    # -- step kinds ("mixed" steps get the Env and fetch their inputs themselves) --------
    def _kernel_step(self, kernel, group):
        def run(inputs, alloc):
            STATS.add("kernels")
            return kernel(inputs, alloc=alloc)
        run.kernel = kernel         # single.py calls it itself
        return run

    def _matmul_step(self, op, rule, rec):
        from . import lowering

        def run(env, ins, outs):
            a, b = env.device(ins[0]), env.device(ins[1])
            try:
                r = lowering.matmul(a, b, alloc=env.allocator(outs), **op.attrs)
            except NotImplementedError as e:
                rec.path, rec.why = "fallback", f"lowering.matmul: {e}"
                return self._fallback(env, rule, ins, outs, op)
            rec.path, rec.why = "kernel", "lowering.matmul"
            STATS.add("kernels")
            env.put(outs[0], r)
        return run

    def _check_step(self, op, rule, rec):
        check_id = self.checks.new_check_id()

        def run(env, ins, outs):
            d = env.dev_value(ins[0])
            if d is None or not d.is_c_contiguous():    # on the host: no sync to check it
                rec.why = ("last run: its input was on the host, checked there" if d is None
                           else "last run: its input was not contiguous (a host copy)")
                self._fallback(env, rule, ins, outs, op)     # raises at the user's line
                if d is not None:
                    env.put(outs[0], d)     # not the host copy: no upload for the next step
                return
            self.checks.launch(check_id, op, d, env.device(ins[1]), env.shapes(ins))
            STATS.add("device_ops")
            env.put(outs[0], d)
        return run

    def _view_step(self, op, rule, rec):
        shape = op.outputs[0].type.shape if _static(op.outputs[0]) else None
        is_device = self.dev.is_device

        def run(env, ins, outs):
            d = env.dev_value(ins[0])
            s = shape
            if s is None and d is not None:     # None dims: the rule on a stand-in of d
                # (no memory) gives the shape (a -1 resolved) or raises the rule's error
                rest = [env.host(i) for i in ins[1:]]       # a small shape vector
                s = rule(stand_ins([d], is_device)[0], *rest).shape
            v = self.dev.view(d, s) if d is not None else None
            if v is None:       # on the host, or not contiguous: the rule, on the host
                rec.why = ("last run: its input was on the host" if d is None else
                           "last run: its input was not contiguous")
                return self._fallback(env, rule, ins, outs, op)
            STATS.add("views")
            env.put_view(outs[0], v, d)
        return run

    def _shape_step(self, op, rule, rec):
        is_device = self.dev.is_device

        def run(env, ins, outs):
            x = env.any(ins[0])
            rest = [env.host(i) for i in ins[1:]]          # small shape vectors
            if not is_device(x):
                return self._fallback(env, rule, ins, outs, op)
            # x's shape and dtype, no memory; an error is located as any mixed step's (run)
            r = rule(stand_ins([x], is_device)[0], *rest)
            STATS.add("device_ops")
            env.put(outs[0], r if op.type == "shape" else x)    # check_shape: x itself
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

    def __call__(self, args, mem=None):
        """The results: device arrays (a top-level plan), or wherever they are (a nested
        plan called with its caller's `mem`: each result holds a reference in `mem` that
        the caller drops once it has put it in its own slots)."""
        if mem is None and self.single is not None:
            return self.single(args)
        return self.run(args, mem)

    def run(self, args, mem):
        """__call__ through the steps (the general path)."""
        top = mem is None
        if top:
            limit()                         # a bad GRAPHC_CUDA_POOL_BYTES fails here
            mem = CallMemory(self.pool)     # an error drops it: nothing goes back
        env = Env(self, args, mem)
        launched = self.checks.mark()
        for fn, needs, ins, outs, op, rec, dead in self.steps:
            rec.runs += 1
            if needs == "host":
                self._fallback(env, fn, ins, outs, op)
            elif needs == "device":
                try:
                    r = fn([env.device(i) for i in ins], env.allocator(outs))
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
            results = [env.any(i) for i in self.out_idx]
        else:
            results = [env.device(i) for i in self.out_idx]
        if top:                 # the results leave the call; every other buffer goes back
            checks = self.checks
            if self.has_checks and checks.mark() > launched:     # this call's checks
                checks.tag([x for x in results if all(x is not a for a in args)],
                           checks.mark())
            for x in results:
                mem.escape(x)
            mem.finish()
        else:                   # each result holds a reference for the caller
            for x in results:
                mem.ref(x)
            env.drop_all()
        return results


def _is_constant_only(ops):
    return all(op.type == "constant" and not op.inputs for op in ops)


def _static(value):
    shape = getattr(value.type, "shape", None)
    return shape is not None and None not in shape


def _fallback_reason(op, group_why):
    if group_why:
        return group_why
    return f"no CUDA path for {op.type}: its numpy rule runs on the host copy"


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
        # after the first call ConcreteFunction calls the plan (or its fast path) directly
        run.settled = lambda: _settled(graph)
        return run


def _settled(graph):
    plan = getattr(graph, "_cuda_plan", None)
    return None if plan is None else plan.single or plan


register_backend(CudaBackend)

