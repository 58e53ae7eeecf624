"""The cuda plan's fast path for a plan that is one kernel step (one fused group: `x + y`,
a softmax): a call uploads its host inputs into pooled buffers, launches the group's kernel
and returns its results, with no Env, CallMemory or step loop (backend.Plan.run).

It does what the general path would do for the same call, step for step: the same uploads
(from the plan's pool, back to it once the kernel is launched; dropped on an error), the
same new arrays for the results (they escape: never pooled), the same counts in STATS and
in the step's Record, the same located error. An input it does not know (an array of
another library, anything the general path would reject) goes to the general path.
"""
import numpy as np

from ...runtime.run_errors import located
from .env import stand_ins
from .memory import limit
from .records import STATS

HOST = (np.ndarray, np.generic, bool, int, float)     # what Env.device uploads


def single_kernel(plan):
    """A SingleKernel for top-level `plan` when it is one kernel step whose outputs are
    exactly the plan's results (none pooled, no input returned as is); else None."""
    if plan.nested or plan.has_checks or len(plan.steps) != 1:
        return None
    fn, needs, ins, outs, op, rec, _ = plan.steps[0]
    kernel = getattr(fn, "kernel", None)
    if (needs != "device" or kernel is None or set(outs) != set(plan.out_idx)
            or len(set(ins)) != len(ins) or set(ins) & set(outs)):
        return None
    return SingleKernel(plan, kernel, ins, outs, op, rec)


class SingleKernel:
    """`single(args)`: the plan's results for `args` (leaves + captures), as Plan.run."""

    def __init__(self, plan, kernel, ins, outs, op, rec):
        self.plan, self.kernel, self.op, self.rec = plan, kernel, op, rec
        self.ins = ins
        self.picks = [outs.index(o) for o in plan.out_idx]
        if self.picks == list(range(len(outs))):
            self.picks = None       # the kernel's results as they are
        self.args_only = all(i < plan.n_in for i in ins)
        self.all_args = list(ins) == list(range(plan.n_in))     # args are the inputs
        self.calls = 0          # calls it took (tests: the path is taken)
        self.one = None         # the kernel's last one-launch plan (GroupKernel.one_launch)
        self.launches = 0       # calls that launched it straight from `one`
        dev = plan.dev
        self.device_types = dev.DEVICE_TYPES
        self.known = dev.DEVICE_TYPES + HOST        # what it takes (else the general path)
        pool, new = plan.pool, dev.alloc
        self.new = new
        self.take = lambda k, shape, dtype: pool.take(shape, dtype)
        self.alloc = lambda k, shape, dtype: new(shape, dtype)

    def __call__(self, args):
        limit()                     # a bad GRAPHC_CUDA_POOL_BYTES fails here (as Plan.run)
        one, uploads = self.one, None
        inputs = None
        if one is not None and self.args_only:
            inputs = args if self.all_args else [args[i] for i in self.ins]
        if inputs is not None:      # device arrays of the shapes of the call before?
            device_types = self.device_types
            for a, shape in zip(inputs, one[5]):
                if type(a) not in device_types or a.shape != shape or \
                        not a.is_c_contiguous():
                    inputs = None
                    break
        if inputs is None:          # host values, constants, other shapes
            n_in, known = self.plan.n_in, self.known
            if not all(isinstance(args[i], known) for i in self.ins if i < n_in):
                return self.plan.run(args, None)    # a foreign array, or an error there
        try:
            if inputs is None:
                inputs, uploads = self._inputs(args)
                one = _fits(inputs, self.one)
            STATS.add("kernels")
            r = self._call(inputs) if one is None else self._again(inputs, one)
        except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
            seen = inputs if inputs is not None else [
                args[i] if i < self.plan.n_in else self.plan.consts[i] for i in self.ins]
            err = located(self.op, e, stand_ins(seen, self.plan.dev.is_device))
            if err is None:
                raise
            raise err from e
        if uploads:             # their last reader is launched: back to the pool
            give = self.plan.pool.give
            for d in uploads:
                give(d)
        self.rec.runs += 1
        self.calls += 1
        return r if self.picks is None else [r[k] for k in self.picks]

    def _inputs(self, args):
        """(device inputs, the ones uploaded here), as Env.device makes them."""
        plan = self.plan
        inputs, uploads = [], []
        for i in self.ins:
            if i >= plan.n_in:      # not an argument: a constant (no other step makes one)
                inputs.append(plan.const_device(i))
                continue
            a = args[i]
            if not isinstance(a, self.device_types):
                a = plan.dev.to_device(a, self.take)
                uploads.append(a)
            inputs.append(a)
        return inputs, uploads

    def _again(self, inputs, one):
        """The kernel's results for `inputs` of the shapes `one` was made for: its one
        launch straight (no plan lookup)."""
        plan, launcher, ints, flat, outs, _ = one
        new = self.new
        results = [new(s, d) for s, d in outs]
        self.kernel.last = plan             # what describe() shows
        launcher([*inputs, *results], ints, flat)
        self.launches += 1
        return results

    def _call(self, inputs):
        """The kernel's own call; when its plan for these inputs is one launch, `one`
        keeps it for the next call."""
        results = self.kernel(inputs, alloc=self.alloc)
        one = getattr(self.kernel, "one_launch", None)
        # only a plan for C-contiguous inputs: the calls `one` takes are checked for that
        contiguous = all(a.is_c_contiguous() for a in inputs)
        one = one(inputs) if one is not None and contiguous else None
        self.one = None if one is None else (*one, [tuple(a.shape) for a in inputs])
        return results


def _fits(inputs, one):
    """`one` when `inputs` have the shapes it was made for and are C-contiguous."""
    if one is None:
        return None
    for a, shape in zip(inputs, one[5]):
        if a.shape != shape or not a.is_c_contiguous():
            return None
    return one
