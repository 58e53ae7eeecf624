"""Running one fused group: shapes, kernel lookup, kernel-vs-numpy choice, numpy fallback."""
import os
import time
from functools import partial

import numpy as np

from ...runtime.run_errors import is_located, located
from . import adaptive, cores, groups_tier
from .. import cache, tiers
from ..planning import Layout, numpy_steps, plan_layout, run_numpy
from .codegen_parallel import ALL
from .kernel import get_kernel
from .launch import parallel_or_serial
from .output_pool import OutputPool
from ..stats import COUNTS

# From `benchmarks/cpu_bench.py --thresholds` on the 2-core dev machine: a fused kernel
# already beats the numpy rules per call at 256 elements (8 us vs 18 us for a 3-op chain),
# but saves at most ~20 us a call below 16k elements, so its 0.3-1 s compile would need
# tens of thousands of calls to pay off: small groups (tests, scripts) run numpy rules.
MIN_SIZE = 1 << 14
# prange (2 threads) starts to win over one thread at about 64k elements (45 vs 54 us).
PAR_MIN = 1 << 16
# ...but a small group that keeps running (a training step's loss and bias gradients: a
# 15-op softmax cross-entropy on 128x10 costs 117 us in numpy rules, ~5 us fused) repays
# its compile: once its numpy rules have cost this long, or its kernel is already on disk,
# it is treated like a big one (the same budget as loops.LOOP_COMPILE_AFTER).
COMPILE_AFTER = 0.05
# A numpy-tier call timed beside the compile thread counts as the numpy rules' time when it
# was this many times slower than the kernel (measured: a compile thread slowed the user's
# numpy calls 2.1x, docs/backends.md "Tiers"), so the kernel wins anyway.
SEEN_MARGIN = 3.0

def min_size():
    v = os.environ.get("GRAPHC_NUMBA_MIN_SIZE")
    return int(v) if v else MIN_SIZE


def choice_mode():
    """'measure' (default), or 'kernel' / 'numpy' to force one side (tests, debugging)."""
    return os.environ.get("GRAPHC_KERNEL_CHOICE", "measure")


class _Layout(Layout):
    """Layout plus the CPU runner's choices for those shapes."""

    __slots__ = ("ready", "numpy_s", "hot", "go", "calls", "jobs", "tier_numpy")

    def __init__(self):
        super().__init__()
        self.ready = {}     # how_called -> (kernel, parallel?, decision) once decided
        self.calls = {}     # how_called -> the steady-state call for that decision
        self.numpy_s = 0.0  # time spent in numpy rules while below the size threshold
        self.hot = None     # below the threshold: worth a kernel? (None: not asked yet)
        self.go = None      # N-d kernel, decided: the whole call of C-contiguous arrays
        self.jobs = {}      # how_called -> tiers.Job compiling its kernel in the background
        self.tier_numpy = []    # seconds of the numpy-tier calls while the kernel compiled


class GroupRunner:
    """Callable `(*input arrays) -> tuple of output arrays` for one fused group."""

    def __init__(self, group):
        self.group = group
        self.numpy_steps = numpy_steps(group)
        self.layouts = {}
        self.decisions = {}   # (key, shape class) -> dict(choice=..., kernel_s=..., numpy_s=...)
        self.watches = {}     # (key, shape class) -> adaptive.Watch of a measured decision
        self.used = {}        # key -> Kernel, the kernels this group actually ran
        self.fallbacks = []   # reasons the kernel was not used
        self.min_size = min_size()
        self.outputs = OutputPool()

    # -- numpy path ----------------------------------------------------------------------
    def run_numpy(self, arrays):
        return run_numpy(self.group, self.numpy_steps, arrays)

    # -- shapes --------------------------------------------------------------------------
    def layout(self, shapes):
        lay = self.layouts.get(shapes)
        if lay is None:
            lay = self.layouts[shapes] = plan_layout(self.group, shapes, _Layout())
            if lay.reason and lay.reason not in self.fallbacks:
                self.fallbacks.append(lay.reason)
        return lay

    def __call__(self, *arrays):
        try:
            return self._call(arrays)
        except Exception as e:  # noqa: BLE001 - located at the op of the group that fails
            if is_located(e):
                raise
            self.run_numpy([np.asarray(a) for a in arrays])   # the reference error, located
            raise located(self.group.ops[-1], e) from e       # only the kernel failed

    def _call(self, arrays):
        arrays = [a if type(a) is np.ndarray else np.asarray(a) for a in arrays]
        lay = self.layout(tuple(a.shape for a in arrays))
        if lay.go is not None:
            return lay.go(arrays)
        return self._dispatch(lay, arrays)

    def _dispatch(self, lay, arrays):
        if lay.spec is None:
            return self.run_numpy(arrays)
        if lay.size < self.min_size and not lay.hot:
            if lay.hot is None:
                lay.hot = any(s is not None and cache.has_module(cache.kernel_key(s.canonical()))
                              for s in (lay.spec, lay.flat_spec))
            if not lay.hot:
                t0 = time.perf_counter()
                out = self.run_numpy(arrays)
                lay.numpy_s += time.perf_counter() - t0
                lay.hot = lay.numpy_s >= COMPILE_AFTER
                return out
        how = how_called(lay, arrays)
        go = lay.calls.get(how)
        if go is None:
            if how not in lay.ready and tiers.mode() == "background":
                tier = groups_tier.compiled(self, lay, how, arrays)
                if tier is False:       # the numpy tier, while the kernel compiles
                    t0 = adaptive.clock()
                    out = self.run_numpy(arrays)
                    lay.tier_numpy.append(adaptive.clock() - t0)
                    return out
                if tier is not True:    # its serial variant, while the prange one compiles
                    return self._run_kernel(tier, arrays, lay, how, False)
            go = self._steady(lay, how, arrays)
        return go(arrays)

    def _steady(self, lay, how, arrays):
        """The call for these shapes and memory layouts (`how`) from now on, until a
        re-measure."""
        ready = lay.ready.get(how)
        if ready is None:
            ready = self._prepare(lay, how, arrays)
        kern, par, decision = ready
        if kern is None or decision["choice"] == "numpy":
            go = self.run_numpy
        else:
            go = self._direct(kern, lay, how, par) if not is_flat(how) else partial(
                self._run_kernel, kern, lay=lay, how=how, par=par)
        watch = self.watches.get((kern.key, _klass(lay, how))) if kern is not None else None
        if watch is not None and watch.decision is decision:
            go = self._sampled(go, watch, lay, how)
        lay.calls[how] = go
        if how == ND:      # every later call with these shapes: no more decisions, but
            lay.go = _when_contiguous(go, partial(self._dispatch, lay))   # a strided one
        return go

    def _sampled(self, go, watch, lay, how):
        """`go`, timed on one call in adaptive.SAMPLE_EVERY (the choice expires, adaptive.py)."""
        every = adaptive.SAMPLE_EVERY

        def call(arrays):
            watch.tick += 1
            if watch.tick % every:
                return go(arrays)
            t0 = adaptive.clock()
            out = go(arrays)
            if watch.expired(adaptive.clock() - t0, cores.free_cores()) and \
                    watch.busy.acquire(blocking=False):
                try:
                    self._remeasure(lay, how, arrays)
                finally:
                    watch.busy.release()
            return out
        return call

    def _remeasure(self, lay, how, arrays):
        """Measure every variant again on these inputs; later calls use the new choice.
        Background tier: a variant not compiled yet compiles on the compile thread first
        (the old choice runs meanwhile; a later sampled call measures)."""
        kern, _, old = lay.ready[how]
        spec = lay.flat_spec if is_flat(how) else lay.spec
        par_ok = lay.size >= PAR_MIN and len(spec.axes) < spec.rank
        free = cores.free_cores()
        variants = measured_variants(par_ok, free)
        if tiers.mode() == "background":
            variants = groups_tier.compiled_variants(self, kern, lay, how, arrays, variants)
            if not variants:
                return
        decision = self._decide(kern, _klass(lay, how), arrays, lay, how, par_ok, stored=False,
                                free=free, variants=variants)
        lay.ready[how] = (kern, decision.get("variant") == "parallel", decision)
        lay.calls.pop(how, None)
        lay.go = None

    def _direct(self, kern, lay, how, par):
        """The steady-state call for one layout: allocate outputs, run the kernel."""
        if kern.fast is not None or how != ND:
            return partial(self._run_kernel, kern, lay=lay, how=how, par=par)
        outs = [(s, v.type.dtype.np) for s, v in zip(lay.out_shapes, self.group.outputs)]
        if par:
            fn, dims = parallel_or_serial(kern.parallel_call, kern.serial_call), lay.domain
        else:
            fn, dims = kern.serial, lay.domain + (0, ALL)    # the whole outer range
        alloc = self.outputs.allocator(outs)

        def go(arrays):
            res = alloc()
            COUNTS._kernel_calls += 1
            fn(*arrays, *res, *dims)
            return res
        return go

    def _prepare(self, lay, how, arrays):
        """Kernel, prange or not, and the kernel-vs-numpy decision for one layout."""
        spec = lay.flat_spec if is_flat(how) else lay.spec
        kern = get_kernel(spec, self.group.name)
        if kern.error:
            self._note(kern.error)
            lay.ready[how] = ready = (None, False, {"choice": "numpy"})
            return ready
        self.used[kern.key] = kern
        par_ok = lay.size >= PAR_MIN and len(spec.axes) < spec.rank
        klass = _klass(lay, how)
        decision = self.decisions.get((kern.key, klass))
        if decision is None:
            decision = self._decide(kern, klass, arrays, lay, how, par_ok)
        lay.ready[how] = ready = (kern, decision.get("variant") == "parallel", decision)
        return ready

    def _note(self, reason):
        if reason not in self.fallbacks:
            self.fallbacks.append(reason)

    def _run_kernel(self, kern, arrays, lay, how, par):
        """One call of `kern` the way `how` says (how_called)."""
        g = self.group
        if is_copied(how):
            arrays = self._contiguous(arrays)
        if is_flat(how):
            order = "F" if how == FLAT_F else "C"
            ins = [a.reshape(-1, order=order) if a.ndim else a for a in arrays]   # views
            outs = self.outputs.take([((lay.size,), v.type.dtype.np) for v in g.outputs])
            kern.run(par, (*ins, *outs, lay.size))
            return [o.reshape(s, order=order) for o, s in zip(outs, lay.out_shapes)]
        outs = self.outputs.take([(s, v.type.dtype.np)
                                  for s, v in zip(lay.out_shapes, g.outputs)])
        kern.run(par, (*arrays, *outs, *lay.domain))
        return outs

    def _contiguous(self, arrays):
        """C-contiguous copies of the arrays that are not: a strided read keeps the
        kernel's loop scalar (the trig chain on a sliced array: ~20x slower per element
        than on a copy), and the kernel needs no overload per memory layout."""
        out = []
        for a in arrays:
            if not a.flags.c_contiguous:
                (buf,) = self.outputs.take([(a.shape, a.dtype)])
                np.copyto(buf, a)
                a = buf
            out.append(a)
        return out

    def _decide(self, kern, klass, arrays, lay, how, par_ok, stored=True, free=None,
                variants=None):
        """Time the kernel (one thread, and prange when big enough and cores are free)
        against the numpy rules on these very inputs and keep the fastest; persisted beside
        the cache with the conditions it was measured under, and watched (adaptive.py).
        `variants`: those to measure, when the caller has checked they are compiled."""
        mode = choice_mode()
        free = cores.free_cores() if free is None else free
        saved = cache.get_choice(kern.key, klass) if mode == "measure" and stored else None
        if saved is not None and adaptive.trusted(saved, free):
            decision = dict(saved, source="disk")
            return self._decided(kern, klass, decision)
        variants = variants or measured_variants(par_ok, free, mode)
        times, first = {}, None
        for variant in variants:
            run = partial(self._run_kernel, kern, arrays, lay, how, variant == "parallel")
            try:
                t0 = adaptive.clock()
                run()                                           # compiles or loads
                first = first or adaptive.clock() - t0
            except Exception as e:  # noqa: BLE001 - a kernel that cannot compile falls back
                kern.error = f"kernel failed to compile/run: {type(e).__name__}: {e}"
                if kern.status == "hit":
                    cache.drop_compiled(cache._module_path(kern.key))
                self._note(kern.error)
                decision = {"choice": "numpy", "reason": kern.error}
                self.decisions[(kern.key, klass)] = decision
                return decision
            if mode == "measure":
                times[variant] = adaptive.median_time(run)
        variant = min(times, key=times.get) if times else variants[-1]
        decision = {"choice": "kernel", "variant": variant, "first_call_s": first}
        if mode == "measure":
            tn = self._numpy_time(lay, times[variant], arrays)
            decision.update({f"{v}_s": t for v, t in times.items()}, kernel_s=times[variant],
                            numpy_s=tn, choice="kernel" if times[variant] <= tn else "numpy",
                            **adaptive.conditions(free))
            cache.put_choice(kern.key, klass, decision)
        elif mode == "numpy":
            decision = {"choice": "numpy", "reason": "GRAPHC_KERNEL_CHOICE=numpy"}
        decision["source"] = "measured" if mode == "measure" else "forced"
        return self._decided(kern, klass, decision)

    def _numpy_time(self, lay, kernel_s, arrays):
        """The numpy rules' time on these inputs: measured, unless the numpy-tier calls that
        ran while the kernel compiled were already SEEN_MARGIN times slower than the kernel
        (they ran beside the compile thread, so they are an upper bound: the kernel wins
        anyway, and the chain's 10M-element decision skips ~0.6 s of numpy runs). Used by
        the first decision only: a re-measure wants fresh facts."""
        seen = min(lay.tier_numpy, default=None)
        lay.tier_numpy = []
        if seen is not None and kernel_s * SEEN_MARGIN <= seen:
            return seen
        return adaptive.median_time(lambda: self.run_numpy(arrays))

    def _decided(self, kern, klass, decision):
        self.decisions[(kern.key, klass)] = decision
        if "numpy_s" in decision:      # measured: watched for drift from now on
            old = self.watches.get((kern.key, klass))
            self.watches[(kern.key, klass)] = (old.successor(decision) if old is not None
                                               else adaptive.Watch(decision))
        return decision


def measured_variants(par_ok, free, mode=None):
    """The variants a decision runs: in 'measure' mode serial, and prange when big enough
    and cores are free (one free core would run it serially anyway); else the one forced."""
    variants = ["serial", "parallel"] if par_ok else ["serial"]
    if (mode or choice_mode()) != "measure":
        return variants[-1:]
    return variants if free > 1 else ["serial"]


def _klass(lay, how):
    """The shape class a choice is recorded under: a call that copies its inputs first
    costs more than one that does not, and a transposed copy more than a sliced one
    (numpy's copy of a transposed 1024x1024 float32 array: ~5 ms; of a ::2 slice: 0.25)."""
    shape = "x".join(map(str, lay.domain))
    return shape + "/" + how if is_copied(how) else shape


# How a call's arrays reach the kernel: a flat group (every input the whole domain or a
# scalar) runs its one-axis kernel over the arrays' memory when they are all C- or all
# F-contiguous (the outputs then take the inputs' order, as numpy's ufuncs give them), and
# on C-contiguous copies of those that are not otherwise; any other group on its N-d kernel,
# with copies of the inputs that are not C-contiguous. A copying call's name ends with each
# input's layout (C, F or A: strided), so each mix has its own measured choice.
FLAT, FLAT_F, FLAT_COPY, ND, ND_COPY = "flat", "flat-F", "flat-copied", "nd", "nd-copied"


def is_flat(how):
    return how.startswith("flat")


def is_copied(how):
    return how.startswith((FLAT_COPY, ND_COPY))


def how_called(lay, arrays):
    flat = lay.flat_spec is not None
    if _c_contiguous(arrays):
        return FLAT if flat else ND
    if flat and all(a.flags.f_contiguous for a in arrays):
        return FLAT_F
    layouts = "".join("C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
                      for a in arrays)
    return (FLAT_COPY if flat else ND_COPY) + ":" + layouts


def _c_contiguous(arrays):
    for a in arrays:        # a loop, not all(genexpr): 0.31 vs 0.82 us for three arrays
        if not a.flags.c_contiguous:
            return False
    return True


def _when_contiguous(go, other):
    """`go` for calls whose arrays are all C-contiguous, `other` for the rest."""
    def call(arrays):
        return go(arrays) if _c_contiguous(arrays) else other(arrays)
    return call
