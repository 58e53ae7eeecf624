"""What the CUDA backend asks of the kernel generators: one fused group, or one matmul.

Contract between `backend` (plumbing: memory, fallback, control flow) and the generators:

- `lower_group(group)` takes a `kernels.fusion.Group` exactly as `fuse()` yields it (a
  single-op group included) and returns a `GroupKernel`, or None when the group has
  nothing CUDA can run (the backend then runs its ops one by one on the fallback path).
- `GroupKernel(inputs, alloc=None)`: `inputs` is a list of device arrays (numba-cuda
  DeviceNDArray, or the simulator's stand-in; any strides) in `group.inputs` order, 0-d
  included (also accepted as separate arguments); it launches on the default stream and
  returns device arrays for `group.outputs`, shapes and dtypes as the numpy rules give,
  each from `alloc(k, shape, dtype)` for output k (the backend's: a pooled buffer, whose
  old contents it overwrites) or new. It raises the graphc error the numpy rules raise
  for bad shapes.
  `.describe()` is the text `graphc graph --backend cuda` shows (kernel kind, launch
  shape, source).
- `matmul(a, b, alloc=None, **attrs)` with the matmul op's attrs: a device array
  (from `alloc(0, shape, dtype)` when given), numpy's result
  (dtypes other than float32/64 and int32/64, and strided operands, run the numpy rule
  on host copies; bad shapes raise the numpy rule's error).

How: per set of input shapes a plan (domain, broadcast flags: `kernels.planning`,
shared with the CPU target) picks the generator -- `elementwise`
(grid-stride), `reduce.row_source` (one block per row) or `reduce.two_pass_source`
(column and full reductions) -- whose module is compiled once per process under a key
from the spec's canonical text (ops, dtypes, ranks, broadcast flags; no dims). Shapes the
kernel cannot take (a run-time broadcast that changes the domain) and empty domains run
the group's numpy rules on host copies, which also raise the located error for bad shapes.
"""
import threading

import numpy as np

from ..fusion import raises_on_integers
from ..planning import numpy_steps, plan_layout, reduced, run_numpy
from . import codegen, elementwise, launch, reduce
from .gemm import matmul  # noqa: F401 - part of the contract

# a column or full reduction runs as one launch of one block (reduce.one_block_source)
# when that is at most this many serial steps per thread (loads and tree levels; at
# THREADS=256, e.g. a 128x256 column sum and its 128x256 output): a launch costs more
# host time than such a block takes on the device
ONE_BLOCK_STEPS = 256

def lower_group(group):
    """A GroupKernel for `group`, or None: integer pow/floordiv/mod raise in numpy's rule,
    which a kernel cannot report (fusion keeps them out of groups already)."""
    if any(raises_on_integers(op) for op in group.ops):
        return None
    return GroupKernel(group)


class _Plan:
    """One set of input shapes: the kernel module and how to launch it."""

    def __init__(self, group, shapes, contiguous=True):
        lay = plan_layout(group, shapes)
        self.reason = lay.reason
        self.domain, self.out_shapes = lay.domain, lay.out_shapes
        self.size = lay.size if lay.spec is not None else 0
        self.kind = self.ns = self.source = None
        self.flat = self.columns = self.one_block = False
        self.threads = codegen.THREADS
        self._scratch = threading.local()
        if lay.spec is None or self.size == 0:
            self.reason = self.reason or "an empty domain (the numpy rules give its result)"
            return
        spec = lay.spec
        if not spec.axes:
            self.flat = lay.flat_spec is not None and contiguous    # 1-d views need it
            spec = lay.flat_spec if self.flat else spec
            self.kind, self.source = elementwise.KERNEL, elementwise.source(spec)
        else:
            self.body = codegen.Body(spec)
            nk = int(np.prod([self.domain[a] for a in self.body.K], dtype=np.int64))
            nr = self.size // nk
            self.nk, self.nr = nk, nr
            # long rows and few of them: the two-pass kernels spread a row over blocks
            row = reduce.is_row(spec) and nk * codegen.THREADS * 32 >= nr
            self.kind = reduce.ROW if row else reduce.TWO_PASS
            self.columns = not row and nk >= codegen.THREADS
            self.threads = codegen.row_threads(nr) if row else codegen.THREADS
            self.one_block = not row and reduce.one_block_steps(
                self.body, nk, nr, self.columns) <= ONE_BLOCK_STEPS
            self.source = (reduce.row_source(spec, self.threads) if row else
                           reduce.one_block_source(spec, self.columns) if self.one_block
                           else reduce.two_pass_source(spec, self.columns))
        self.spec = spec
        self.key = codegen.module_key(
            f"{self.kind} columns={self.columns} block={self.threads} "
            f"one_block={self.one_block} {_folded(group)}", spec.canonical())
        self.launchers = {}     # (kernel id, blocks, threads) -> launch.Launcher
        self._one = None        # one_launch()
        self.allocs = None      # (k, shape, dtype) of each output

    def value_shape(self, v):
        """The shape over which the kernel writes group value `v` (a sink)."""
        if not self.spec.axes or self.body.is_full_output(v):
            return tuple(self.domain)
        return reduced(self.domain, self.spec.axes, len(v.type.shape) == len(self.domain))

    @property
    def launches(self):
        """(kernel name, blocks, threads) of each launch shape, in first-launch order."""
        return [(_name(run.kernel), run.blocks, run.threads)
                for run in list(self.launchers.values())]    # a copy: threads add to it

    def scratch(self, j, n_part, n_rb, dtype):
        """Reduction j's partials and results: allocated once per thread and reused by
        its later calls (launches on one stream run in order; another thread's calls
        must not share them)."""
        from .memory import alloc
        bufs = self._bufs()
        if j not in bufs:
            bufs[j] = (alloc(n_part, dtype), alloc(n_rb, dtype))
        return bufs[j]

    def _bufs(self):
        bufs = getattr(self._scratch, "bufs", None)
        if bufs is None:
            bufs = self._scratch.bufs = {}
        return bufs

    def passes(self):
        """The two-pass kinds' launches, made once per thread (their scratch is the
        thread's): (launcher, scratch arrays after the inputs, whether the outputs follow,
        ints) each."""
        got = getattr(self._scratch, "passes", None)
        if got is not None:
            return got
        ns, b, nk, nr = self.module(), self.body, self.nk, self.nr
        n = nk * nr if b.full_outputs() else nk
        if self.one_block:      # small: one launch of one block
            rbs = [self.scratch(j, 1, nk, op.outputs[0].type.dtype.np)[1]
                   for j, op in enumerate(b.reductions)]
            got = [(_launcher(self, ns["one_block"], 1), rbs, True,
                    (*self.domain, nk, nr, n))]
        else:
            target = codegen.max_blocks()
            got, rbs = [], []
            for j, op in enumerate(b.reductions):
                nchunks, chunk = reduce.chunks(nr, nk, b.sequential(op), target,
                                               self.columns)
                part, rb = self.scratch(j, nchunks * nk, nk, op.outputs[0].type.dtype.np)
                per_block = codegen.THREADS if self.columns else 1     # tasks per block
                got.append((_launcher(self, ns[f"partials_{j}"],
                                      codegen.blocks_for(nk * nchunks, per_block)),
                            [*rbs, part, rb, self.counter(j)], False,
                            (*self.domain, nk, nr, nchunks, chunk)))
                rbs.append(rb)
            got.append((_launcher(self, ns["final"], codegen.blocks_for(n)), rbs, True,
                        (*self.domain, nk, nr, n)))
        self._scratch.passes = got
        return got

    def counter(self, j):
        """Reduction j's count of finished blocks (zero between launches: the last block
        resets it), once per thread as `scratch`."""
        from . import device
        bufs = self._bufs()
        key = ("count", j)
        if key not in bufs:
            bufs[key] = device.to_device(np.zeros(1, np.int64))
        return bufs[key]

    def kernel_names(self):
        if self.kind == reduce.TWO_PASS:
            if self.one_block:
                return ["one_block"]
            return [f"partials_{j}" for j in range(len(self.body.reductions))] + ["final"]
        return [self.kind]

    def arg_types(self, group, fn):
        """numba types of kernel `fn`'s arguments as this plan launches it (device arrays
        are C-contiguous; what compiling ahead of a launch, e.g. to PTX, needs)."""
        import inspect
        from numba import types
        from numba.np.numpy_support import from_dtype

        def array(dtype, ndim):
            return types.Array(from_dtype(dtype.np), max(ndim, 1), "C")
        name = fn.py_func.__name__
        red = self.body.reductions if self.kind != elementwise.KERNEL else []
        out = []
        for p in inspect.signature(fn.py_func).parameters:
            if p.startswith("in"):
                k = int(p[2:])
                out.append(array(group.inputs[k].type.dtype, self.spec.in_ranks[k]))
            elif p.startswith("out"):
                k = int(p[3:])
                ndim = 1 if self.flat else len(self.out_shapes[k])
                out.append(array(group.outputs[k].type.dtype, ndim))
            elif p.startswith("rb_"):
                out.append(array(red[int(p[3:])].outputs[0].type.dtype, 1))
            elif p in ("count", "guard"):
                out.append(types.Array(types.int64, 1, "C"))
            elif p.startswith(("old", "new")):
                v = group.updates[int(p[3:])][0]
                out.append(array(v.type.dtype, 1 if self.flat else len(v.type.shape)))
            elif p == "part":
                out.append(array(red[int(name.rsplit("_", 1)[1])].outputs[0].type.dtype, 1))
            else:
                out.append(types.int64)
        return tuple(out)

    def module(self):
        if self.ns is None:
            self.ns = codegen.load(self.key, self.source)
        return self.ns

    def one_launch(self):
        """(launcher, ints, flat) of an elementwise (flat: every array as 1-d, contiguous)
        or row kernel's launch on [*inputs, *outputs]; None for the two-pass kinds."""
        if self._one is not None:
            return self._one
        ns = self.module()
        if self.kind == elementwise.KERNEL:
            dims = (self.size,) if self.flat else self.domain
            self._one = (_launcher(self, ns["elementwise"], codegen.blocks_for(self.size)),
                         (*dims, self.size), self.flat)
        elif self.kind == reduce.ROW:
            self._one = (_launcher(self, ns["row"], codegen.blocks_for(self.nk, 1),
                                   self.threads), (*self.domain, self.nk, self.nr), False)
        return self._one


class GroupKernel:
    """Callable `(list of device arrays) -> list of device arrays` for one fused group."""

    def __init__(self, group):
        self.group = group
        self.plans = {}
        self.last = None
        self._numpy = None

    def plan(self, inputs):
        """The plan for these device arrays (made on first use)."""
        key = _key(inputs)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = _Plan(self.group, *key)
        return plan

    def __call__(self, *inputs, alloc=None, olds=()):
        """`olds`: with `group.updates` (folding.py), each update's variable value (device,
        C-contiguous, of the update value's shape); their new values follow the results."""
        if alloc is None:
            alloc = _new
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])        # kernel([a, b]) as the backend calls it
        plan = self.last = self.plan(inputs)
        if plan.kind is None:
            assert not olds, "folding.py runs updates unfused where no kernel fits"
            return self.run_numpy(inputs, alloc)
        allocs = plan.allocs
        if allocs is None:
            allocs = plan.allocs = [(k, s, v.type.dtype.np) for k, (s, v) in
                                    enumerate(zip(plan.out_shapes, self.group.outputs))]
        results = [alloc(k, s, d) for k, s, d in allocs]
        if olds:
            news = [_new(0, a.shape, a.dtype) for a in olds]    # a variable's: never pooled
            outs = [*results, *_updates(olds, news)]
        else:
            news, outs = [], results
        one = plan.one_launch()
        if one is not None:
            one[0]([*inputs, *outs], one[1], one[2])
        else:
            for launcher, mid, with_outs, ints in plan.passes():
                launcher([*inputs, *mid, *outs] if with_outs else [*inputs, *mid], ints)
        return results + news if news else results

    def one_launch(self, inputs):
        """For `inputs` of the shapes and contiguity of an earlier call whose plan is one
        launch (elementwise, row): (plan, launcher, ints, flat, [(shape, dtype) per
        output]) -- that call ran `launcher([*inputs, *outputs], ints, flat)`; else None,
        also for a group that writes variable updates (its launch takes them too)."""
        if getattr(self.group, "updates", ()):
            return None
        plan = self.plans.get(_key(inputs))
        one = None if plan is None or plan.kind is None else plan.one_launch()
        if one is None:
            return None
        outs = [(s, v.type.dtype.np) for s, v in zip(plan.out_shapes, self.group.outputs)]
        return (plan, *one, outs)

    def run_numpy(self, inputs, alloc=None):
        """The group's numpy rules on host copies (located errors included), uploaded."""
        from . import device
        if self._numpy is None:
            self._numpy = numpy_steps(self.group)
        host = [device.to_host_array(a) if hasattr(a, "copy_to_host") else np.asarray(a)
                for a in inputs]
        results = run_numpy(self.group, self._numpy, host)
        alloc = alloc or _new
        return [device.to_device(np.array(r, order="C"), _for_output(alloc, k))
                for k, r in enumerate(results)]

    def describe(self):
        """Kernel kind, launch shapes and source of the last call's plan."""
        plan = self.last
        if plan is None:
            return f"{self.group.name}: not run yet"
        if plan.kind is None:
            return f"{self.group.name}: numpy rules on the host ({plan.reason})"
        launches = ", ".join(
            f"{_name(run.kernel)}[{run.blocks}, {run.threads}] "
            f"({run.mode}{': ' + run.why if run.why else ''})"
            for run in list(plan.launchers.values()))
        kind = plan.kind + (" (a thread per column)" if plan.columns else "")
        return (f"{self.group.name}: cuda {kind} kernel over {list(plan.domain)}; "
                f"launches {launches}\n{plan.source}")


def _folded(group):
    """What folding.py added to a group, for the module key (the canonical text has
    neither): update kinds and which inputs are indexed by the kept axes."""
    kept = getattr(group, "kept_inputs", ())
    at = {id(op.outputs[0]): n for n, op in enumerate(group.ops)}
    at.update((id(v), f"in{k}") for k, v in enumerate(group.inputs))   # 0-d by an input
    return (f"updates={[(at[id(v)], kind) for v, kind in getattr(group, 'updates', ())]} "
            f"kept={[k for k, v in enumerate(group.inputs) if id(v) in kept]}")


def _updates(olds, news):
    """The update arrays as the kernels take them: old and new per update, the guard."""
    if not olds:
        return []
    from . import checks
    return [a for pair in zip(olds, news) for a in pair] + [checks.guard()]


def _key(inputs):
    """The plan key of `inputs`: their shapes, and whether all are C-contiguous."""
    return tuple(tuple(a.shape) for a in inputs), all(a.is_c_contiguous() for a in inputs)


def _new(k, shape, dtype):
    from .memory import alloc
    return alloc(shape, dtype)


def _for_output(alloc, k):
    """`alloc` as device.to_device asks for a buffer (as output 0), for output k."""
    return lambda _, shape, dtype: alloc(k, shape, dtype)


def _launcher(plan, kernel, blocks, threads=codegen.THREADS):
    key = (id(kernel), blocks, threads)
    launcher = plan.launchers.get(key)
    if launcher is None:
        launcher = plan.launchers[key] = launch.Launcher(kernel, blocks, threads)
    return launcher


def _name(kernel):
    return kernel.py_func.__name__ if hasattr(kernel, "py_func") else str(kernel)
