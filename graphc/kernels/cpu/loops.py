"""Whole-loop compilation: a `while`/`cond` op becomes one native numba function.

A region is lowerable when every value in it is a scalar or a small tensor of static shape,
and every op is an elementwise op with a scalar template, a reduction, argmax/argmin,
cumsum/cumprod, matmul, a simple shape op, a constant, an indexing `x[i, ...]` with ints and
static slices, or a nested `while`/`cond` that is lowerable itself (tensor ops: `loops_tensor`;
shape ops and indexing: `loops_shape`). The loop then runs as a native `while True:` with
`if/else`, with no interpreter work per iteration; scalars are local variables and tensors
preallocated buffers. Anything else raises NotLowerable with the reason (naming the op and
the user's line), and the region runs in the interpreter.
"""
import os
import sys
import time

import numpy as np

from ... import config
from ...runtime.registry import REGISTRY, ELEMENTWISE
from ...runtime.types import TensorType
from .. import cache, tiers
from ..stats import COUNTS
from .codegen import np_name, statement, where
from .loops_entry import scalar_wrap
from .loops_shape import ShapeLowering
from .loops_tensor import (MAX_LOOP_TENSOR_ELEMENTS, SUPPORTED_TENSOR_OPS,  # noqa: F401
                           TENSOR_OPS, NotLowerable, TensorLowering, check_value, dims_text,
                           literal, static_shape)


class _Emitter(TensorLowering, ShapeLowering):
    def __init__(self):
        self.lines = []
        self.allocs = []         # buffer allocations, run once at function entry
        self.consts = []         # module-level tensor constants
        self.count = 0
        self.arrays = {}         # name -> shape, for names bound to arrays (not scalars)
        self.deferred = {}       # name -> (op, args, loc): computed in its consumer's loops
        self.deferrable = set()
        self.buffers = []        # every buffer name, in the order they were made

    def fresh(self, base="t"):
        self.count += 1
        return f"{base}{self.count}"

    def emit(self, depth, text):
        self.lines.append("    " * depth + text)

    def graph(self, g, names, depth):
        """Emit `g`'s ops with its inputs bound to `names`; returns the output names."""
        env = {id(v): n for v, n in zip(g.all_inputs, names)}
        self.plan_deferred(g)
        for op in g.operations:
            self.op(op, env, depth)
        missing = [v for v in g.outputs if id(v) not in env]
        if missing:
            raise NotLowerable(f"output '%{missing[0].name}' is not computed in the region")
        return [env[id(v)] for v in g.outputs]

    def op(self, op, env, depth):
        opdef = REGISTRY.get(op.type)
        loc = where(op)
        if op.type == "constant":
            if np.ndim(op.attrs["value"]) != 0:
                return self.tensor_constant(op, env, loc)
            env[id(op.outputs[0])] = name = self.fresh("c")
            self.emit(depth, f"{name} = {literal(op.attrs['value'])}  # constant {loc}")
            return
        if op.type == "while":
            return self.while_op(op, env, depth)
        if op.type == "cond":
            return self.cond_op(op, env, depth)
        if op.type == "getitem":
            return self.getitem(op, env, depth, loc)
        if opdef is not None and opdef.kind == ELEMENTWISE and opdef.scalar \
                and not opdef.effectful:
            for v in op.inputs + op.outputs:
                check_value(v, f"{op.type} {loc}: value")
            if op.outputs[0].type.shape != ():
                return self.elementwise(op, env, depth, loc)
            args = [env[id(v)] for v in op.inputs]
            env[id(op.outputs[0])] = name = self.fresh()
            self.emit(depth, f"{name} = {statement(op, args)}  # {op.type} {loc}")
            return
        if opdef is None or op.type not in TENSOR_OPS or opdef.effectful:
            raise NotLowerable(f"{op.type} {loc} has no compiled-loop lowering (compiled loops "
                               f"support {SUPPORTED_TENSOR_OPS})")
        getattr(self, TENSOR_OPS[op.type])(op, env, depth, loc)

    def _state(self, v, src, what, depth, base):
        """A fresh variable (scalar) or buffer (tensor) holding `src`, for loop state or a
        cond result: later writes to it never touch `src`."""
        if check_value(v, what) == ():
            name = self.fresh(base)
            self.emit(depth, f"{name} = {src}")
            return name
        static_shape(v, what)
        name = self.buffer(v, base)
        self.copy(name, src, self.arrays[name], depth, what)
        return name

    def while_op(self, op, env, depth):
        cg, bg, n = op.attrs["cond"], op.attrs["body"], op.attrs["n_vars"]
        loc = where(op)
        state = [self._state(v, env[id(v)], f"while {loc}: loop variable", depth, "s")
                 for v in op.inputs[:n]]
        caps = [env[id(v)] for v in op.inputs[n:]]
        self.emit(depth, f"while True:  # while {loc}")
        (pred,) = self.graph(cg, state + caps, depth + 1)
        self.emit(depth + 1, f"if not {pred}:")
        self.emit(depth + 2, "break")
        mark = len(self.buffers)
        new = self.graph(bg, state + caps, depth + 1)
        self._carry(state, new, depth + 1, loc, mark)
        for v, s in zip(op.outputs, state):
            env[id(v)] = s

    def _carry(self, state, new, depth, loc, mark):
        """state = new. A new tensor made in this body (buffers[mark:]) trades places with
        its state buffer (nothing of the finished iteration is read again); any other is
        copied in, after first staging a new value that is another state (`a, b = b, a`)."""
        staged = []
        for s, x in zip(state, new):
            if s not in self.arrays or s == x:
                continue
            if x in state:
                tmp = self.fresh("b")
                self.allocs.append(f"{tmp} = np.empty_like({s})")
                self.arrays[tmp] = self.arrays[s]
                self.buffers.append(tmp)
                self.copy(tmp, x, self.arrays[s], depth, f"while {loc}: stage a swapped value")
                x = tmp
            staged.append((s, x))
        made_here = set(self.buffers[mark:])
        news = [x for _, x in staged]
        swaps = []
        for s, x in staged:
            if x in made_here and news.count(x) == 1:
                swaps.append((s, x))
            else:
                self.copy(s, x, self.arrays[s], depth, f"while {loc}: next state")
        if swaps:
            self.emit(depth, ", ".join(f"{s}, {x}" for s, x in swaps) + " = " +
                      ", ".join(f"{x}, {s}" for s, x in swaps) +
                      f"  # while {loc}: next state (buffers trade places)")
        scalars = [(s, x) for s, x in zip(state, new) if s not in self.arrays]
        if scalars:
            self.emit(depth, f"{', '.join(s for s, _ in scalars)} = "
                      f"{', '.join(x for _, x in scalars)}")

    def cond_op(self, op, env, depth):
        tb, fb = op.attrs["true_branch"], op.attrs["false_branch"]
        loc = where(op)
        outs = []
        for v in op.outputs:
            if check_value(v, f"cond {loc}: result") == ():
                outs.append(self.fresh("r"))
            else:
                static_shape(v, f"cond {loc}: result")
                outs.append(self.buffer(v, "r"))
        pred = env[id(op.inputs[0])]
        caps = [env[id(v)] for v in op.inputs[1:]]
        self.emit(depth, f"if {pred}:  # cond {loc}")
        for branch in (tb, fb):
            res = self.graph(branch, caps, depth + 1)
            for o, r, v in zip(outs, res, op.outputs):
                if o in self.arrays:
                    self.copy(o, r, self.arrays[o], depth + 1, f"cond {loc}: result")
                else:
                    self.emit(depth + 1, f"{o} = {np_name(v.type.dtype)}({r})")
            if not op.outputs:
                self.emit(depth + 1, "pass")
            if branch is tb:
                self.emit(depth, "else:")
        for v, o in zip(op.outputs, outs):
            env[id(v)] = o


# A loop is compiled once the interpreter has spent this long on it: compiling costs
# ~0.3-1 s, so a loop that ran 50 ms interpreted is likely to run again and repay it.
LOOP_COMPILE_AFTER = 0.05


def loop_compile_after():
    """GRAPHC_NUMBA_MIN_SIZE=0 (used by tests) compiles loops on first use too."""
    return 0.0 if os.environ.get("GRAPHC_NUMBA_MIN_SIZE") == "0" else LOOP_COMPILE_AFTER


class LoopRunner:
    """Callable like the op's numpy rule: `(*inputs) -> value or tuple of values`."""

    def __init__(self, op, source, key, baked=(), returned=None):
        self.op, self.source, self.key = op, source, key
        self.baked = frozenset(baked)   # input positions the kernel holds as literals
        # the outputs the kernel returns (those the graph reads), in order; one comes back
        # bare, several as a tuple
        self.returned = list(range(len(op.outputs))) if returned is None else list(returned)
        self.status = None
        self.fn = None
        self.error = None
        self.job = None          # tiers.Job compiling it in the background
        self.interpreted_s = 0.0
        self.scalar_in = [isinstance(v.type, TensorType) and v.type.shape == ()
                          for v in op.inputs]
        self.out_types = [v.type.dtype.np.type for v in op.outputs]
        self.scalar_out = [v.type.shape == () for v in op.outputs]
        self.single = len(op.outputs) == 1
        impl = REGISTRY[op.type].numpy
        self.fallback = lambda *a: impl(*a, **op.attrs)
        self.direct = None       # the compiled entry (_make_direct), once installed
        self.sites = []          # (namespace, name) of plan steps that call it directly
        self.watchers = []       # weak callbacks told when the entry changes (loops_entry)

    def _load(self):
        self._install(*cache.load_module(self.key, self.source))

    def _install(self, mod, status):
        self.direct = self._make_direct(mod.loop_kernel)
        self.status = status
        self.fn = mod.loop_kernel       # last: a call in another thread sees fn => direct
        self._rebind()
        if config.debug_level() >= 3:
            print(f"// graphc loop kernel for {self.op.name} (cache {self.status})\n"
                  f"{self.source}", file=sys.stderr)

    def _worth_compiling(self, *arrays):
        """Interpret until the loop has cost LOOP_COMPILE_AFTER seconds (or a compiled entry
        is already on disk): most loops in tests and scripts run a few steps, once."""
        if self.interpreted_s >= loop_compile_after() or cache.has_module(self.key):
            return True, None
        t0 = time.perf_counter()
        result = self.fallback(*arrays)
        self.interpreted_s += time.perf_counter() - t0
        return False, result

    def __call__(self, *arrays):
        if self.error is None and self.fn is None:
            ready, result = self._worth_compiling(*arrays)
            if not ready:
                return result
            if tiers.mode() == "background" and (self.job is not None or not cache.has_module(
                    self.key)) and not self._compiled(arrays):
                return self.fallback(*arrays)   # interpreted while it compiles
            if self.fn is None and self.error is None:
                try:
                    self._load()
                except Exception as e:  # noqa: BLE001 - unusable cache entry: interpret
                    self.error = f"loop kernel failed to load: {type(e).__name__}: {e}"
        if self.error is not None:
            return self.fallback(*arrays)
        return self.direct(*arrays)

    def bind(self, namespace, name):
        """Let a plan's step `namespace[name]` call the compiled entry directly once it is
        installed (this runner until then, and again if the kernel fails)."""
        self.sites.append((namespace, name))
        self._rebind()

    def result(self, k, r="r"):
        """The expression for output `k` of the kernel's return value `r`, None for an
        output it does not return."""
        if k not in self.returned:
            return None
        return r if len(self.returned) == 1 else f"{r}[{self.returned.index(k)}]"

    def _rebind(self):
        entry = self.direct if self.fn is not None and self.error is None else self
        for namespace, name in self.sites:
            namespace[name] = entry       # one dict store: atomic for calls in other threads
        for ref in list(self.watchers):
            callback = ref()
            if callback is not None:
                callback()

    def _failed(self, e, arrays):
        """The kernel could not run (typing or compile error): interpret from now on."""
        self.mark_failed(e)
        return self.fallback(*arrays)

    def mark_failed(self, e):
        self.error = f"loop kernel failed to compile: {type(e).__name__}: {e}"
        self._rebind()

    def _compiled(self, arrays):
        """Background tier: is the compiled loop installed (or has its compile failed)?
        Starts the compile on the first ask; installs its result between calls."""
        if self.job is None:
            sig = self._signature(arrays)
            self.job = tiers.submit(f"loop {self.op.name}", lambda: self._compile(sig))
        if self.job.state == "pending":
            return False
        if self.job.state == "failed":
            self.error = f"loop kernel failed to compile (in the background): {self.job.error}"
        elif self.fn is None:
            self._install(*self.job.result)
        return True

    def _signature(self, arrays):
        """The call's arguments (small: loops hold scalars and small tensors), typed by the
        compile thread (numba.typeof here would import numpy.ma into this call)."""
        return [a[()] if s else np.ascontiguousarray(a)
                for k, (a, s) in enumerate(zip(arrays, self.scalar_in)) if k not in self.baked]

    def _compile(self, args):
        import numba
        mod, status = cache.load_module(self.key, self.source)
        mod.loop_kernel.compile(tuple(numba.typeof(a) for a in args))
        return mod, status

    def _make_direct(self, fn):
        """The compiled entry as one straight-line Python function for this arity (no
        per-call loops over arguments, no layers): counts the run, calls the kernel, and
        on an error numpy raises differently runs the interpreter for its reference error.

        Scalars go in as numpy scalars (`a[()]`) and come back as numpy scalars of the
        result dtype, as the numpy rules give for rank-0 results; tensors go in C-contiguous
        (the kernel reshapes them) and come back as the kernel's own fresh arrays. Outputs
        the graph never reads come back as None (the kernel does not return them)."""
        params = [f"a{k}" for k in range(len(self.scalar_in))]
        args = [p + "[()]" if s else f"asc({p})" for k, (p, s) in
                enumerate(zip(params, self.scalar_in)) if k not in self.baked]
        ns = {"fn": fn, "asc": np.ascontiguousarray, "counts": COUNTS,
              "fallback": self.fallback, "failed": self._failed}
        outs = [("None" if self.result(k) is None else
                 scalar_wrap(t, self.result(k), f"T{k}", ns) if scalar else self.result(k))
                for k, (t, scalar) in enumerate(zip(self.out_types, self.scalar_out))]
        ret = outs[0] if self.single else (f"({', '.join(outs)},)" if outs else "None")
        every = ", ".join(params)
        src = (f"def direct({every}):\n"
               f"    counts._loop_calls += 1\n"
               f"    try:\n"
               f"        r = fn({', '.join(args)})\n"
               # an index, an integer power or divisor numpy rejects: the reference error
               f"    except (IndexError, ArithmeticError):\n"
               f"        return fallback({every})\n"
               f"    except Exception as e:  # noqa: BLE001\n"
               f"        return failed(e, ({every}{',' if len(params) == 1 else ''}))\n"
               f"    return {ret}\n")
        exec(compile(src, f"<graphc loop wrapper {self.op.name}>", "exec"), ns)  # noqa: S102
        return ns["direct"]


def lower(op, constants=None, read=None):
    """A LoopRunner for a top-level `while`/`cond` op, or NotLowerable with the reason.
    `constants` (input position -> value) are the scalar inputs the plan always passes
    the same value: the kernel holds them as literals (fewer arguments to convert and
    type per call, and LLVM sees the start values). `read`: per output, whether the graph
    reads it (None: all are); the kernel returns only those, one of them bare (no tuple
    to build and index, no Python scalar boxed for nothing: ~0.04 us a call)."""
    em = _Emitter()
    params = []
    env = {}
    baked = {k: c for k, c in (constants or {}).items() if check_value(op.inputs[k], "input")
             == () and np.ndim(c) == 0 and np.asarray(c).dtype == op.inputs[k].type.dtype.np}
    for k, v in enumerate(op.inputs):
        name = f"a{k}"
        env[id(v)] = name
        if k in baked:
            em.allocs.append(f"{name} = {literal(baked[k])}  # always this constant")
            continue
        params.append(name)
        shape = check_value(v, "input")
        if shape != ():
            em.arrays[name] = shape     # dims may be unknown: then only element reads work
    if op.type == "while":
        em.while_op(op, env, 1)
    else:
        em.cond_op(op, env, 1)
    returned = [k for k in range(len(op.outputs)) if read is None or read[k]]
    outs = [env[id(op.outputs[k])] for k in returned]
    em.emit(1, f"return {outs[0]}" if len(outs) == 1 else f"return ({''.join(o + ', ' for o in outs)})")
    body = ([f"def loop_kernel({', '.join(params)}):"] + ["    " + ln for ln in em.allocs]
            + em.lines)
    header = ["import numpy as np",
              "from graphc.kernels.cpu.cache_numba import njit  # cache=True: graphc's sealed cache",
              "from graphc.kernels.cpu.scalar import *  # noqa: F401,F403", ""]
    if em.consts:
        header += em.consts + [""]
    footer = ["", "loop_kernel = njit(cache=True, error_model='numpy')(loop_kernel)"]
    source = "\n".join(header + body + footer) + "\n"
    # static shapes are part of the lowering (loop bounds, buffers), so they are in the key
    canonical = "\n".join(ln.split("  #")[0] for ln in source.splitlines())
    canonical += "\n" + " ".join(f"{v.type.dtype.name}{dims_text(v.type.shape)}" for v in op.inputs)
    return LoopRunner(op, source, cache.kernel_key("loop\n" + canonical), baked, returned)
