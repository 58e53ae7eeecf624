"""The numba CPU backend: optimize, fuse, and run fused kernels, lowered loops and numpy rules.

`NumbaBackend.compile(graph)` returns `run(list of inputs) -> list of outputs`, like the
numpy interpreter. Every op that is not fused or lowered runs its numpy rule, so the
backend handles every graph; kernels are compiled lazily, the first time a group runs on
shapes big enough to be worth it.
"""
import os
from functools import partial

from ...runtime.backends import register_backend
from ...runtime.executor import STRAIGHT_MAX_OPS, compile_graph, last_uses, straight_runner
from ...runtime.registry import REGISTRY
from ...runtime.run_errors import located
from . import blas, codegen, loops
from .. import cache, tiers
from ..fusion import fuse
from ..planning import optimized
from .groups import GroupRunner
from .kernel import KERNEL_NAME
from .loops_entry import single_loop_tail

# How numba's OpenMP workers (libgomp) wait between parallel regions. Sleeping at once
# (OMP_WAIT_POLICY=passive) made every region pay a wake-up: an empty prange loop took
# 81 us on the idle 2-core VM (a sleeping vCPU is slow to wake), which cancelled the gain
# of splitting a training step's two big matmuls. Spinning without end (libgomp's default
# 300000 spins) held a busy machine's cores: >= 8 ms per region. 100000 spins (a few ms)
# then sleep: the empty region 8 us idle; with another process hogging a core, its median
# 15 us but one region in ten waits ~3.5 ms -- so regions run only on free cores
# (launch.py: the serial variant when another process is busy, and then nothing spins;
# docs/backends.md "Busy machines" has the figures). Set before the first parallel kernel
# loads libgomp; the user's OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "100000")


class Plan:
    """The compiled form of one graph: steps over a slot array, plus what describe() shows."""

    def __init__(self, graph):
        self.source_graph = graph
        self.graph, self.optimize_error = optimized(graph)
        self.groups = []       # GroupRunner
        self.loops = []        # (op, LoopRunner or None, reason)
        self.steps = []
        index = {}
        for v in self.graph.all_inputs:
            index[id(v)] = len(index)
        self.n_in = len(index)
        consts = {}
        # values some op or the caller reads: a compiled loop returns only those
        self.read = {id(v) for op in self.graph.operations for v in op.inputs}
        self.read.update(id(v) for v in self.graph.outputs)
        parts = list(fuse(self.graph))
        self.blas = _blas_updates(self.graph, parts)     # id(assign op) -> (assign, mm, mul)
        skip = {id(o) for _, mm, mul in self.blas.values() for o in (mm, mul) if o is not None}
        for kind, item in parts:
            if kind == "group" and len(item.ops) > 1:
                runner = GroupRunner(item)
                self.groups.append(runner)
                ins = tuple(index[id(v)] for v in item.inputs)
                outs = tuple(index.setdefault(id(v), len(index)) for v in item.outputs)
                self.steps.append((runner, ins, outs, item.ops[-1], True))
                continue
            for op in (item.ops if kind == "group" else [item]):
                if op.type == "constant" and not op.inputs:
                    # a constant's value is fixed: it sits in the slot array from the start
                    consts[index.setdefault(id(op.outputs[0]), len(index))] = op.attrs["value"]
                    continue
                if id(op) in skip:      # computed by the assign's fused BLAS call
                    continue
                if id(op) in self.blas:
                    fn, ins = blas.update_step(*self.blas[id(op)])
                    self.steps.append((fn, tuple(index[id(v)] for v in ins), (), op, False))
                    continue
                self.steps.append(self._op_step(op, index, consts))
        self.out_idx = tuple(index[id(v)] for v in self.graph.outputs)
        # free each intermediate after its last reader, as the interpreter does: big
        # temporaries go early, and a variable's array read earlier in the step is no longer
        # referenced when an assign_sub comes, so the update happens in place
        dead = last_uses([(None, ins, outs, None) for _, ins, outs, _, _ in self.steps],
                          self.n_in, set(self.out_idx))
        self.steps = [step + (d,) for step, d in zip(self.steps, dead)]
        self.pad = [None] * (len(index) - self.n_in)
        for slot, value in consts.items():
            self.pad[slot - self.n_in] = value

    def runner(self):
        """What later calls run: the plan, or for a plan of numpy rules alone (nothing fused,
        lowered or split) the reference interpreter's runner over the same optimized graph,
        which does the same steps with less per-op overhead (a cached scalar add: the numpy
        backend's speed)."""
        if self.groups or self.blas or any(r is not None for _, r, _ in self.loops) or any(
                isinstance(fn, partial) and fn.func is blas.matmul for fn, *_ in self.steps):
            return self._straight()
        return compile_graph(self.graph)

    def _straight(self):
        """The steps as one generated Python function (executor.straight_runner): a plan
        call costs ~0.2 us instead of ~1.2 us of this class's loop over steps. A compiled
        loop rebinds its step to its own direct entry once its kernel is installed."""
        if len(self.steps) > STRAIGHT_MAX_OPS:
            return self
        consts = {self.n_in + k: v for k, v in enumerate(self.pad) if v is not None}
        unpack = {i for i, step in enumerate(self.steps) if step[4]}      # group results
        run = straight_runner([(fn, ins, outs, op, dead) for fn, ins, outs, op, _, dead
                               in self.steps], self.n_in, self.out_idx, self.graph.name,
                              consts, unpack)
        for i, (fn, *_) in enumerate(self.steps):
            if isinstance(fn, loops.LoopRunner):
                fn.bind(run.__globals__, f"f{i}")
        # a plan that is one compiled loop: callers may inline the kernel call (loops_entry)
        run.tail = single_loop_tail(self.steps, self.n_in, len(self.graph.inputs),
                                    self.out_idx, consts)
        return run

    def _op_step(self, op, index, consts):
        fn = None
        if op.type in ("while", "cond"):
            fixed = {k: consts[index[id(v)]] for k, v in enumerate(op.inputs)
                     if index.get(id(v)) in consts}
            fn = self._lower(op, fixed)
        if op.type == "matmul" and blas.may_split(op):
            fn = partial(blas.matmul, **op.attrs)     # big products split across threads
        if fn is None:
            impl = REGISTRY[op.type].numpy
            fn = partial(impl, **op.attrs) if op.attrs else impl
        ins = tuple(index[id(v)] for v in op.inputs)
        outs = tuple(index.setdefault(id(v), len(index)) for v in op.outputs)
        return fn, ins, outs, op, False

    def _lower(self, op, constants):
        try:
            runner = loops.lower(op, constants, [id(v) in self.read for v in op.outputs])
        except loops.NotLowerable as e:
            self.loops.append((op, None, str(e)))
            return None
        self.loops.append((op, runner, None))
        return runner

    def __call__(self, args):
        env = list(args) + self.pad
        for fn, ins, outs, op, is_group, dead in self.steps:
            try:
                r = fn(*[env[i] for i in ins])
            except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
                # a fused group locates its own errors (at the op of the group that failed)
                err = None if is_group else located(op, e, [env[i] for i in ins])
                if err is None:
                    raise
                raise err from e
            if is_group:
                for o, x in zip(outs, r):
                    env[o] = x
            elif len(outs) == 1:
                env[outs[0]] = r
            elif outs:
                for o, x in zip(outs, r):
                    env[o] = x
            for d in dead:
                env[d] = None
        return [env[i] for i in self.out_idx]


def _blas_updates(graph, parts):
    """The variable updates that become one gemm call (none if numpy's BLAS is not
    reachable, or if the scaling was fused into a bigger group)."""
    if not blas.available():
        return {}
    found = blas.find_updates(graph)
    in_groups = {id(op) for kind, item in parts if kind == "group" and len(item.ops) > 1
                 for op in item.ops}
    return {k: v for k, v in found.items() if v[2] is None or id(v[2]) not in in_groups}


def compile_plan(graph):
    plan = getattr(graph, "_numba_plan", None)
    if plan is None:
        plan = Plan(graph)
        graph._numba_plan = plan
    return plan


class NumbaBackend:
    """Fused numba CPU kernels, with numpy rules for everything else."""

    name = "numba"

    @staticmethod
    def available():
        try:
            import numba  # noqa: F401
        except ImportError:
            return False
        return True

    @staticmethod
    def compile(graph):
        """Optimizing and fusing wait for the first call: tracing alone pays nothing."""
        def run(args):
            plan = compile_plan(graph)
            holder[0] = plan.runner()
            with tiers.first_call():    # its background compiles start when it returns
                return plan(args)
        holder = [run]
        call = lambda args: holder[0](args)    # noqa: E731
        call.settled = lambda: None if holder[0] is run else holder[0]   # see ConcreteFunction
        return call


register_backend(NumbaBackend)


def describe(graph):
    """Human-readable account of how the numba backend runs `graph`.

    Lists the fusion groups with their ops, each kernel's source (the kernels used so far,
    or a preview for the traced shapes), the kernel-vs-numpy choices, cache hits/misses and
    every fallback with its reason.
    """
    plan = compile_plan(graph)
    lines = [f"numba backend plan for graph {graph.name}"]
    if plan.optimize_error:
        lines.append(f"  optimizer skipped: {plan.optimize_error}")
    if not plan.groups:
        lines.append("  no fused groups (every op runs its numpy rule)")
    for runner in plan.groups:
        g = runner.group
        red = f", reduced axes {list(g.axes)}" if g.axes else ""
        lines.append(f"  {g.name}: {len(g.ops)} ops over domain "
                     f"{_dims(g.domain)}{red}: {', '.join(op.name for op in g.ops)}")
        lines.append(f"    inputs: {', '.join('%' + v.name for v in g.inputs)}; outputs: "
                     f"{', '.join('%' + v.name for v in g.outputs)}")
        lines.append(f"    tier: {_group_tier(runner)}")
        for (key, klass), d in runner.decisions.items():
            extra = ""
            if "kernel_s" in d:
                times = ", ".join(f"{v} {d[v + '_s'] * 1e6:.1f} us"
                                  for v in ("serial", "parallel", "numpy") if v + "_s" in d)
                extra = f" ({times})"
            what = d["choice"] + (f" ({d['variant']})" if d["choice"] == "kernel" and
                                  "variant" in d else "")
            cond = (f", {d['free']} of {d['affinity']} cores free" if "free" in d and
                    "affinity" in d else "")
            lines.append(f"    choice for {klass}: {what}{extra} [{d.get('source', '')}{cond}]")
        for reason in runner.fallbacks:
            lines.append(f"    fallback: {reason}")
        kernels = list(runner.used.values())
        if kernels:
            for k in kernels:
                redo = ""
                if k.fast is not None and k.checked:
                    redo = (f"; fast trig, arguments checked per chunk: {k.slow_chunks} "
                            "chunk(s) with arguments from 2**17 (float32) / 2**47 (float64) "
                            "took whole-range trig")
                elif k.fast is not None:
                    redo = (f"; fast trig, redone with whole-range trig on {k.redone} call(s) "
                            "whose arguments reached 2**17 (float32) / 2**47 (float64)")
                lines.append(f"    kernel {k.key[:12]} (cache {k.status}{redo}):")
                lines.extend("      " + ln for ln in k.source.splitlines())
        else:
            spec, src = _preview(runner)
            key = cache.kernel_key(spec.canonical())
            on_disk = "in the disk cache" if cache.has_module(key) else "not in the disk cache"
            lines.append(f"    kernel {key[:12]} not run yet ({on_disk}; used once the group "
                         f"sees {_min_size_text()} elements or more):")
            if None not in g.domain:
                klass = "x".join(map(str, g.domain))
                saved = cache.get_choice(key, klass)
                lines.append(f"    choice for {klass}: " + (
                    f"{saved['choice']} (measured in an earlier run)" if saved else
                    "measured on the first call (kernel vs numpy, the faster is kept)"))
            lines.extend("      " + ln for ln in src.splitlines())
    for op, runner, reason in plan.loops:
        if runner is None:
            lines.append(f"  {op.type} '{op.name}': interpreted, because {reason}")
        else:
            if runner.job is not None and runner.job.state == "pending":
                state = "tier: interpreted while it compiles in the background"
            elif runner.status is None:
                state = ("not compiled yet: it is interpreted until that has cost "
                         f"{loops.LOOP_COMPILE_AFTER * 1e3:.0f} ms, then compiled; "
                         + ("in the disk cache" if cache.has_module(runner.key)
                            else "not in the disk cache"))
            else:
                state = f"tier: compiled; cache {runner.status}"
            if runner.error:
                state += f"; fell back to the interpreter: {runner.error}"
            lines.append(f"  {op.type} '{op.name}': lowered to one native function ({state})")
            lines.extend("      " + ln for ln in runner.source.splitlines())
    for assign, mm, mul in plan.blas.values():
        scaled = f" and multiply '{mul.name}'" if mul is not None else ""
        lines.append(f"  {assign.type} '{assign.name}': fused with matmul '{mm.name}'{scaled} "
                     "into one in-place BLAS gemm call (C = alpha*A@B + C)")
    from . import blas_choice
    lines.extend(f"  big product (this process) {line}" for line in blas_choice.summary())
    lines.append(f"  kernel cache {cache.cache_dir()}: {cache.STATS['hits']} hits, "
                 f"{cache.STATS['misses']} misses, {cache.STATS['rebuilt']} rebuilt")
    return "\n".join(lines)


def _group_tier(runner):
    """Which code runs the group now: numpy rules or its compiled kernel, and why."""
    jobs = [j for lay in runner.layouts.values() for j in lay.jobs.values()]
    choices = [d["choice"] for d in runner.decisions.values()]
    if "kernel" in choices:
        return "compiled kernel" + (" (numpy rules for some shapes, measured faster)"
                                    if "numpy" in choices else "")
    if any(j.state == "pending" for j in jobs):
        return "numpy rules while its kernel compiles in the background (switches when ready)"
    if any(j.state == "failed" for j in jobs):
        return "numpy rules: its kernel failed to compile (see the fallback below)"
    if choices:
        return "numpy rules (measured faster than its kernel, or forced)"
    when = ("compiles in the background meanwhile" if tiers.mode() == "background"
            else "compiles before that call (GRAPHC_COMPILE=sync)")
    return f"numpy rules until the group is big or hot enough for its kernel, which {when}"


def _dims(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _min_size_text():
    from .groups import min_size
    return str(min_size())


def _preview(runner):
    g = runner.group
    flags = tuple(tuple(d == 1 and (g.domain[g.rank - len(v.type.shape) + j] != 1)
                        for j, d in enumerate(v.type.shape)) for v in g.inputs)
    spec = codegen.KernelSpec(g, flags, g.rank, [len(v.type.shape) for v in g.inputs],
                              g.axes or ())
    return spec, codegen.generate(spec, KERNEL_NAME)
