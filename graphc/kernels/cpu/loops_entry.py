"""A plan that is one compiled loop, as source lines for a caller's own generated entry.

A graph that is a single top-level `while`/`cond` fed by the graph's inputs and constants,
returning the loop's results, needs nothing of a plan on a cached call but the kernel call.
Its `LoopTail` gives that call as source lines; the ConcreteFunction (and gc.function, for
its hot signature) put them into the one generated function that checks the arguments,
calls the kernel and wraps the results (runtime/concrete.py, runtime/function_entry.py):
no plan, no direct entry, no extra frames between the user's call and the kernel.

The lines do what the plan's step does (loops.LoopRunner._make_direct): count the run, call
the kernel, and on an error that numpy raises differently, or a kernel that cannot run,
return `k_slow(leaves)`: the plan, whose step then gives numpy's error at the user's line or
the interpreted result. The kernel's scalar results come back as Python scalars; they are
made numpy scalars of the result dtype by `scalar_wrap`.
"""
import weakref

import numpy as np

from ..stats import COUNTS


def scalar_wrapping(dtype):
    """How a kernel's Python scalar result becomes the numpy scalar of `dtype`:
    ("mul", one) -- `one * v`, numpy's cheapest way there (0.04 us, against 0.15 us for
    `np.float32(v)`) and exact: v holds a value of the dtype, x * 1 keeps -0.0, inf and
    NaN --, ("bool", (False_, True_)) indexed by v, or ("call", dtype.type)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iuf":
        return "mul", dtype.type(1)
    if dtype.kind == "b":
        return "bool", (np.False_, np.True_)
    return "call", dtype.type


def scalar_wrap(dtype, expr, name, ns):
    """An expression making the numpy scalar of `dtype` from the Python scalar `expr` that a
    kernel returned (scalar_wrapping); binds what it needs in `ns` as `name`."""
    kind, ns[name] = scalar_wrapping(dtype)
    return {"mul": f"{name} * {expr}", "bool": f"{name}[{expr}]",
            "call": f"{name}({expr})"}[kind]


class LoopTail:
    """The source of one compiled loop's call for a plan made of nothing else.

    `params`: per kernel parameter (the loop's inputs less the baked ones), the index of
    the graph input feeding it, or ("const", value). `outs`: per graph output, the index of
    the loop output it is."""

    def __init__(self, runner, params, outs):
        self.runner = runner
        self.params = params
        self.outs = outs

    def watch(self, callback):
        """Call `callback()` (held weakly: a bound method) whenever code() may give another
        answer: the kernel installed, or failed."""
        self.runner.watchers.append(weakref.WeakMethod(callback))

    def inputs(self):
        """The loop inputs that are kernel parameters (the baked ones are not)."""
        runner = self.runner
        return [k for k in range(len(runner.scalar_in)) if k not in runner.baked]

    def constant(self, k, p):
        """The value passed for kernel input `k`, fed by the constant `p` = ("const", v)."""
        value = np.asarray(p[1])
        return value[()] if self.runner.scalar_in[k] else np.ascontiguousarray(value)

    def native(self, known, slow):
        """What native_entry needs to make this loop's call in machine code (a LoopBody),
        for a graph whose one output is loop output self.outs[0]; None where the Python
        entry's direct call would not be taken (see direct_call) or the result is wrapped
        another way. `slow(leaves)`: the plan, as `k_slow` in code()."""
        from ...runtime.native_entry import LoopBody
        from ..stats import native_counter
        runner = self.runner
        if runner.fn is None or runner.error is not None or len(self.outs) != 1:
            return None
        direct = direct_params(self, known)
        if direct is None:
            return None
        ep, params = direct
        j = self.outs[0]
        index = None if len(runner.returned) == 1 else runner.returned.index(j)
        wrap = scalar_wrapping(runner.out_types[j]) if runner.scalar_out[j] else ("array",)
        if wrap[0] == "call":
            return None
        failed = runner.mark_failed

        def on_error(e, *leaves):        # the except clauses of code()'s lines
            if not isinstance(e, (IndexError, ArithmeticError)):
                failed(e)
            return slow(list(leaves))
        return LoopBody(ep, [p[:2] if p[0] == "const" else p for p in params], index, wrap,
                        native_counter("loop_calls"), on_error)

    def code(self, leaves, leaves_expr, known=None):
        """(lines, namespace, output expressions) computing the graph's outputs from the
        local names `leaves` (one per graph input), or None while the kernel is not
        installed (or has failed). The lines return `k_slow(<leaves_expr>)` on the paths the
        plan must take; the caller binds `k_slow`. Namespace names start with `k_`.
        `known`: per leaf, the (dtype, shape) the caller's own checks guarantee, if any:
        then the kernel's compiled entry point is called without numba's dispatch when
        the arrays are C-contiguous, aligned and writable (see direct_call)."""
        runner = self.runner
        fn = runner.fn
        if fn is None or runner.error is not None:
            return None
        ns = {"k_fn": fn, "k_asc": np.ascontiguousarray, "k_failed": runner.mark_failed,
              "k_counts": COUNTS}
        args = []
        inputs = self.inputs()
        for k, p in zip(inputs, self.params):
            if type(p) is tuple:                     # a constant: converted once, here
                ns[f"k_c{k}"] = self.constant(k, p)
                args.append(f"k_c{k}")
            else:
                args.append(f"{leaves[p]}[()]" if runner.scalar_in[k] else f"k_asc({leaves[p]})")
        call = f"k_fn({', '.join(args)})"
        if known is not None:
            call = direct_call(self, leaves, known, ns, call)
        lines = ["k_counts._loop_calls += 1",
                 "try:",
                 f"    k_r = {call}",
                 # an index, an integer power or divisor numpy rejects: the plan's reference error
                 "except (IndexError, ArithmeticError):",
                 f"    return k_slow({leaves_expr})",
                 "except Exception as k_e:  # noqa: BLE001 - the kernel cannot run: interpreted",
                 "    k_failed(k_e)",
                 f"    return k_slow({leaves_expr})"]
        outs = []
        for j in self.outs:
            value = runner.result(j, "k_r")
            if runner.scalar_out[j]:
                value = scalar_wrap(runner.out_types[j], value, f"k_one{j}", ns)
            outs.append(value)
        return lines, ns, outs


def direct_call(tail, leaves, known, ns, dispatched):
    """The kernel call `dispatched` (through numba's dispatcher) as
    `k_ep(...) if <the arrays are behaved> else <dispatched>`: `k_ep`,
    the compiled overload's own entry point, takes the arguments without numba's dispatch
    (typing each argument, finding the overload: ~0.15 us of a ~1 us loop call). It does
    not check them: the caller has checked each leaf's dtype and shape (`known`), and the
    condition checks each array's flags (numba types an array that is not C-contiguous,
    aligned and writable as another type: those go through the dispatcher, as before).
    `dispatched` alone when the overload for those types is not compiled (yet) or a type
    is not one whose unboxing is exact (bool, integers, float32/64, complex arrays)."""
    direct = direct_params(tail, known)
    if direct is None:
        return dispatched
    ns["k_ep"], params = direct
    ep_args, behaved = [], []
    for p in params:
        if p[0] == "const":
            ep_args.append(f"k_c{p[2]}")
        elif p[2]:
            ep_args.append(f"{leaves[p[1]]}[()]")
        else:
            ep_args.append(leaves[p[1]])
            behaved.append(f"{leaves[p[1]]}.flags.carray")
    call = f"k_ep({', '.join(ep_args)})"
    return f"{call} if {' and '.join(behaved)} else {dispatched}" if behaved else call


def direct_params(tail, known):
    """(entry point, params) for calling the loop's compiled overload without numba's
    dispatch, given leaves of the (dtype, shape) in `known`, or None (see direct_call).
    params: per kernel parameter ("leaf", leaf index, passed as a 0-d scalar) or
    ("const", value, input index)."""
    from numba import from_dtype, typeof, types
    runner = tail.runner
    typed, params = [], []
    for k, p in zip(tail.inputs(), tail.params):
        if type(p) is tuple:
            value = tail.constant(k, p)
            typed.append(typeof(value))
            params.append(("const", value, k))
            continue
        dtype, shape = known[p]
        want = runner.op.inputs[k].type
        if dtype is not want.dtype.np or len(shape) != len(want.shape) or \
                dtype.kind not in ("b", "i", "u", "f", "c") or dtype.itemsize < 4 and \
                dtype.kind in "fc" or dtype.byteorder not in "=|":
            return None
        if runner.scalar_in[k]:
            if dtype.kind == "c":
                return None
            typed.append(from_dtype(dtype))
            params.append(("leaf", p, True))
        else:
            typed.append(types.Array(from_dtype(dtype), len(shape), "C"))
            params.append(("leaf", p, False))
    overloads = getattr(runner.fn, "overloads", None)    # a numba dispatcher's, by types
    overload = None if overloads is None else overloads.get(tuple(typed))
    if overload is None:
        return None
    return overload.entry_point, params


def single_loop_tail(steps, n_in, n_graph_inputs, out_idx, consts):
    """A LoopTail when the plan's steps are one compiled loop whose inputs are graph inputs
    (no captures: n_in == n_graph_inputs) or constants and whose outputs are the graph's;
    None otherwise. `steps`: (fn, ins, outs, ...) per step; `consts`: slot -> value."""
    from .loops import LoopRunner
    if len(steps) != 1 or n_in != n_graph_inputs:
        return None
    runner, ins, outs = steps[0][:3]
    if not isinstance(runner, LoopRunner):
        return None
    params = []
    for k, slot in enumerate(ins):
        if k in runner.baked:
            continue
        if slot < n_in:
            params.append(slot)
        elif slot in consts:
            params.append(("const", consts[slot]))
        else:
            return None
    if any(o not in outs or runner.result(outs.index(o)) is None for o in out_idx):
        return None
    return LoopTail(runner, params, [outs.index(o) for o in out_idx])
