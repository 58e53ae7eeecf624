"""The background tier of a fused group (see tiers.py): which kernel variants to compile,
their numba types, the compile thread's job, and the switch between calls."""
from functools import partial

from . import adaptive, cores, groups, kernel

from .. import cache, tiers
from .codegen_parallel import ADDRESS_TYPE, RANGE_TYPES
from .launch import PARALLEL

_COMPILING = {}   # kernel key -> (first Job or None, Job): compiling in the background


def compiled(runner, lay, how, arrays):
    """Background tier: True once this layout's kernel has compiled (or failed: then
    its numpy decision is recorded), False while it compiles, or the kernel whose
    serial variant (compiled first) may run while the prange one compiles for the
    measured choice. Starts the compile on the first ask. A kernel on disk loads in the
    calling thread, as in sync mode: a second process starts on compiled code."""
    job = lay.jobs.get(how)
    spec = lay.flat_spec if groups.is_flat(how) else lay.spec
    if job is None:
        key = cache.kernel_key(spec.canonical())
        loaded = kernel._KERNELS.get(key)
        with kernel._KERNELS_LOCK:
            first, job = _COMPILING.get(key, (None, None))  # another layout asked first
            if job is None or job.state == "failed":
                if loaded is not None or cache.has_module(key):
                    job = None
                else:
                    variants = variants_needed(key, lay, spec, how)
                    sig = signature(runner.group, lay, how, arrays)
                    what = f"kernel for {runner.group.name}"
                    first = None
                    if variants[1:]:
                        first = tiers.submit(what, partial(
                            compile_kernel, spec, runner.group.name, variants[:1], sig))
                    job = tiers.submit(what, partial(
                        compile_kernel, spec, runner.group.name, variants[1:] or variants,
                        sig), later=first is not None)
                    _COMPILING[key] = (first, job)
        if job is None:     # loaded already (for other shapes), or on disk: loads here
            if loaded is not None and not loaded.error:
                return _has_needed(runner, loaded, lay, how, arrays, spec)
            return True
        lay.jobs[how] = job
        if first is not None:
            lay.jobs[(how, "first")] = first
    if job.state == "pending":
        first = lay.jobs.get((how, "first"))
        if first is not None and first.state == "ready" and not first.result.error:
            return first.result
        return False
    if job.state == "ready" and not job.result.error:
        return _has_needed(runner, job.result, lay, how, arrays, spec)
    if job.state == "failed" and how not in lay.ready:
        kern = kernel._KERNELS.get(cache.kernel_key(spec.canonical()))
        error = f"kernel failed to compile (in the background): {job.error}"
        if kern is not None:
            kern.error = error
            if kern.status == "hit":
                cache.drop_compiled(cache._module_path(kern.key))
        runner._note(error)
        lay.ready[how] = (None, False, {"choice": "numpy", "reason": error})
    return True


def _has_needed(runner, kern, lay, how, arrays, spec):
    """True once the variants the layout's first decision needs now are compiled for this
    call (cores freed since the compile was asked for: prange too); else False while the
    missing ones compile in the background."""
    need = ["parallel" if p else "serial" for p in variants_needed(kern.key, lay, spec, how)]
    return compiled_variants(runner, kern, lay, how, arrays, need) is not None


def compiled_variants(runner, kern, lay, how, arrays, variants):
    """Of `variants` ('serial', 'parallel'), those compiled for this call's types; None
    while the missing ones compile on the compile thread (asked for once per set: a set
    compiled under other types runs anyway, numba compiling it on the call). A failed
    compile drops its variants (noted in the group's fallbacks)."""
    sig = signature(runner.group, lay, how, arrays)
    types = numba_types(sig)
    missing = [v for v in variants if not _compiled(kern, v == "parallel", types)]
    if not missing:
        return variants
    job = lay.jobs.get((how, "more", tuple(missing)))
    if job is None:
        job = tiers.submit(f"kernel for {runner.group.name} ({', '.join(missing)})", partial(
            compile_kernel, kern.spec, runner.group.name, [v == "parallel" for v in missing],
            sig))
        lay.jobs[(how, "more", tuple(missing))] = job
    if job.state == "pending":
        return None
    if job.state == "failed":
        runner._note(f"kernel variant failed to compile (in the background): {job.error}")
        return [v for v in variants if v not in missing]
    return variants


def _compiled(kern, par, types):
    serial, parallel = kern.fast if kern.fast is not None else (kern.serial, kern.parallel)
    if getattr(serial, "overloads", None) is None:  # not a numba dispatcher (tests)
        return True
    if types + RANGE_TYPES not in serial.overloads:  # the parallel one runs it too
        return False
    return not par or types + (ADDRESS_TYPE,) in parallel.overloads


def variants_needed(key, lay, spec, how):
    """The variants (parallel? flags) the first decision runs and its choice may call,
    likeliest first: a trusted measured choice needs only its own, else those
    groups.measured_variants names. Serial comes first with prange: the prange variant
    calls its machine code (codegen_parallel.py), and it runs while prange compiles."""
    par_ok = lay.size >= groups.PAR_MIN and len(spec.axes) < spec.rank
    mode = groups.choice_mode()
    free = cores.free_cores()
    saved = cache.get_choice(key, groups._klass(lay, how)) if mode == "measure" else None
    if saved is not None and adaptive.trusted(saved, free):
        names = [] if saved["choice"] == "numpy" else [saved.get("variant", "serial")]
    else:
        names = groups.measured_variants(par_ok, free, mode)
    return [False, True] if "parallel" in names else [False] * bool(names)


def signature(group, lay, how, arrays):
    """What the numba types of `GroupRunner._run_kernel`'s call are made of, for the
    compile thread (numba.typeof here would import numpy.ma into the first call: 0.13 s).
    Every array reaches the kernel C-contiguous (a view or a copy, groups.how_called)."""
    copied = groups.is_copied(how)
    ins = [(a.dtype, (1 if a.ndim else 0) if groups.is_flat(how) else a.ndim,
            not a.flags.writeable and not (copied and not a.flags.c_contiguous))
           for a in arrays]
    if groups.is_flat(how):
        outs = [(v.type.dtype.np, 1) for v in group.outputs]
        dims = 1
    else:
        outs = [(v.type.dtype.np, len(s)) for s, v in zip(lay.out_shapes, group.outputs)]
        dims = len(lay.domain)
    return ([(dt, nd, "C", ro) for dt, nd, ro in ins]
            + [(dt, nd, "C", False) for dt, nd in outs], dims)


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
    serial, parallel = kern.fast if kern.fast is not None else (kern.serial, kern.parallel)
    for par in variants:
        serial.compile(sig + RANGE_TYPES)       # the prange variant calls it
        if par:
            from numba.np.ufunc.parallel import _launch_threads
            with PARALLEL:      # starting the thread pool must not race a parallel region
                _launch_threads()
            parallel.compile(sig + (ADDRESS_TYPE,))
    return kern
