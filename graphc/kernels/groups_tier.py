"""The background tier of a fused group (see tiers.py): which kernel variants to compile,
their numba types, the compile thread's job, and the switch between calls."""
from functools import partial

from . import cache, groups, tiers
from .launch import PARALLEL

_COMPILING = {}   # kernel key -> (first Job or None, Job): compiling in the background


def compiled(runner, lay, flat, arrays):
    """Background tier: True once this layout's kernel has compiled (or failed: then
    its numpy decision is recorded), False while it compiles, or the kernel whose
    prange variant (compiled first) may run while the serial one compiles for the
    measured choice. Starts the compile on the first ask. A kernel on disk loads in the
    calling thread, as in sync mode: a second process starts on compiled code."""
    job = lay.jobs.get(flat)
    if job is None:
        spec = lay.flat_spec if flat else lay.spec
        key = cache.kernel_key(spec.canonical())
        with groups._KERNELS_LOCK:
            first, job = _COMPILING.get(key, (None, None))  # another layout asked first
            if job is None or job.state == "failed":
                if key in groups._KERNELS or cache.has_module(key):
                    return True
                variants = variants_needed(key, lay, spec)
                sig = signature(runner.group, lay, flat, arrays)
                what = f"kernel for {runner.group.name}"
                first = None
                if variants[1:]:
                    first = tiers.submit(what, partial(
                        compile_kernel, spec, runner.group.name, variants[:1], sig))
                job = tiers.submit(what, partial(
                    compile_kernel, spec, runner.group.name, variants[1:] or variants,
                    sig), later=first is not None)
                _COMPILING[key] = (first, job)
        lay.jobs[flat] = job
        if first is not None:
            lay.jobs[(flat, "first")] = first
    if job.state == "pending":
        first = lay.jobs.get((flat, "first"))
        if first is not None and first.state == "ready" and not first.result.error:
            return first.result
        return False
    if job.state == "failed" and flat not in lay.ready:
        spec = lay.flat_spec if flat else lay.spec
        kern = groups._KERNELS.get(cache.kernel_key(spec.canonical()))
        error = f"kernel failed to compile (in the background): {job.error}"
        if kern is not None:
            kern.error = error
            if kern.status == "hit":
                cache.drop_compiled(cache._module_path(kern.key))
        runner._note(error)
        lay.ready[flat] = (None, False, {"choice": "numpy", "reason": error})
    return True


def variants_needed(key, lay, spec):
    """The variants the first decision will run (parallel? flags), likeliest first: a
    choice already measured needs only its own; measuring needs serial and prange."""
    par_ok = lay.size >= groups.PAR_MIN and len(spec.axes) < spec.rank
    mode = groups.choice_mode()
    saved = cache.get_choice(key, "x".join(map(str, lay.domain))) \
        if mode == "measure" else None
    if saved is not None:
        return [] if saved["choice"] == "numpy" else [saved.get("variant") == "parallel"]
    if mode != "measure":
        return [par_ok]
    return [True, False] if par_ok else [False]     # prange first: the likelier winner


def signature(group, lay, flat, arrays):
    """What the numba types of `GroupRunner._run_kernel`'s call are made of, for the
    compile thread (numba.typeof here would import numpy.ma into the first call: 0.13 s)."""
    if flat:
        ins = [a.reshape(-1) if a.ndim else a for a in arrays]
        outs = [(v.type.dtype.np, 1) for v in group.outputs]
        dims = 1
    else:
        ins = arrays
        outs = [(v.type.dtype.np, len(s)) for s, v in zip(lay.out_shapes, group.outputs)]
        dims = len(lay.domain)
    return ([(a.dtype, a.ndim, _layout(a), not a.flags.writeable) for a in ins]
            + [(dt, nd, "C", False) for dt, nd in outs], dims)


def _layout(a):
    return "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"


def numba_types(signature):
    import numba
    arrays, dims = signature
    return (tuple(numba.types.Array(numba.from_dtype(dt), nd, layout, readonly=ro)
                  for dt, nd, layout, ro in arrays) + (numba.types.int64,) * dims)


def compile_kernel(spec, label, variants, sig):
    """The compile thread's job: load the module and compile only the variants the first
    decision runs (the whole-range trig of a fast kernel compiles when a call needs it)."""
    kern = groups.get_kernel(spec, label)
    if kern.error:
        return kern             # _prepare notes it and keeps the numpy rules
    sig = numba_types(sig)
    for par in variants:
        fn = kern.fast[par] if kern.fast is not None else (
            kern.parallel if par else kern.serial)
        if par:
            from numba.np.ufunc.parallel import _launch_threads
            with PARALLEL:      # starting the thread pool must not race a parallel region
                _launch_threads()
        fn.compile(sig)
    return kern
