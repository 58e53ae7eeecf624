"""Whole-loop compilation: a `while`/`cond` op over scalars becomes one native numba function.

A region is lowerable when every value in it is a scalar (rank-0 tensor) and every op is
an elementwise op with a scalar template, a scalar constant, element access `x[i, j]`
into a captured tensor, or a nested `while`/`cond` that is lowerable itself. The loop then
runs as a native `while True:` with `if/else`, with no interpreter work per iteration.
Anything else raises NotLowerable with the reason, and the region runs in the interpreter.
"""
import os
import sys
import time

import numpy as np

from .. import config
from ..runtime.registry import REGISTRY, ELEMENTWISE
from ..runtime.types import TensorType
from . import cache
from .codegen import np_name, statement, where
from .fusion import SUPPORTED_DTYPES


class NotLowerable(Exception):
    """Why a control-flow region cannot be compiled as one native function."""


def _scalar_ok(v, what):
    t = v.type
    if not isinstance(t, TensorType) or t.dtype.name not in SUPPORTED_DTYPES:
        raise NotLowerable(f"{what} '%{v.name}' is {t}, not a numeric or bool tensor")
    if t.shape != ():
        raise NotLowerable(f"{what} '%{v.name}' has shape {list(t.shape)}; only scalars are "
                           "carried through compiled loops")


def _literal(value):
    arr = np.asarray(value)
    v = arr.item()
    if arr.dtype.kind == "b":
        return "True" if v else "False"
    if arr.dtype.kind == "f":
        text = "np.nan" if v != v else ("np.inf" if v == np.inf else
                                        "-np.inf" if v == -np.inf else repr(float(v)))
        return f"{arr.dtype.name}({text})"
    return f"{arr.dtype.name}({int(v)})"


class _Emitter:
    def __init__(self):
        self.lines = []
        self.count = 0
        self.arrays = set()      # names bound to arrays (captured tensors), not scalars

    def fresh(self, base="t"):
        self.count += 1
        return f"{base}{self.count}"

    def emit(self, depth, text):
        self.lines.append("    " * depth + text)

    def graph(self, g, names, depth):
        """Emit `g`'s ops with its inputs bound to `names`; returns the output names."""
        env = {id(v): n for v, n in zip(g.all_inputs, names)}
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
            val = op.attrs["value"]
            if np.ndim(val) != 0:
                raise NotLowerable(f"constant {loc} is a tensor of shape {list(np.shape(val))}")
            env[id(op.outputs[0])] = name = self.fresh("c")
            self.emit(depth, f"{name} = {_literal(val)}  # constant {loc}")
            return
        if op.type == "while":
            return self.while_op(op, env, depth)
        if op.type == "cond":
            return self.cond_op(op, env, depth)
        if op.type == "getitem":
            return self.getitem(op, env, depth)
        if opdef is None or opdef.kind != ELEMENTWISE or not opdef.scalar or opdef.effectful:
            raise NotLowerable(f"{op.type} {loc} has no scalar lowering (only elementwise ops, "
                               "scalar constants, element reads x[i] and nested loops/conds "
                               "compile to native code)")
        for v in op.inputs + op.outputs:
            _scalar_ok(v, f"{op.type} {loc}: value")
        args = [env[id(v)] for v in op.inputs]
        if any(a in self.arrays for a in args):
            raise NotLowerable(f"{op.type} {loc} reads a whole tensor")
        env[id(op.outputs[0])] = name = self.fresh()
        self.emit(depth, f"{name} = {statement(op, args)}  # {op.type} {loc}")

    def getitem(self, op, env, depth):
        loc = where(op)
        src = op.inputs[0]
        index = op.attrs["index"]
        rank = len(src.type.shape)
        if any(item[0] != "int" for item in index) or len(index) != rank:
            raise NotLowerable(f"getitem {loc} is not a single-element read x[i, ...] "
                               f"(index {index})")
        arr = env[id(src)]
        if arr not in self.arrays:
            raise NotLowerable(f"getitem {loc} indexes a tensor computed inside the loop")
        parts = []
        for axis, item in enumerate(index):
            v = item[1]
            if isinstance(v, str):
                iv = op.inputs[int(v[1:])]
                _scalar_ok(iv, f"getitem {loc}: index")
                expr = env[id(iv)]
            else:
                expr = str(int(v))
            idx = self.fresh("k")
            self.emit(depth, f"{idx} = {expr}")
            self.emit(depth, f"if {idx} < -{arr}.shape[{axis}] or {idx} >= {arr}.shape[{axis}]:")
            self.emit(depth + 1, f"raise IndexError('index out of range in getitem {op.name}')")
            parts.append(idx)
        env[id(op.outputs[0])] = name = self.fresh()
        self.emit(depth, f"{name} = {arr}[{', '.join(parts)}]  # getitem {loc}")

    def while_op(self, op, env, depth):
        cg, bg, n = op.attrs["cond"], op.attrs["body"], op.attrs["n_vars"]
        loc = where(op)
        for v in op.inputs[:n]:
            _scalar_ok(v, f"while {loc}: loop variable")
        state = [self.fresh("s") for _ in range(n)]
        for s, v in zip(state, op.inputs[:n]):
            self.emit(depth, f"{s} = {env[id(v)]}")
        caps = [env[id(v)] for v in op.inputs[n:]]
        self.emit(depth, f"while True:  # while {loc}")
        (pred,) = self.graph(cg, state + caps, depth + 1)
        self.emit(depth + 1, f"if not {pred}:")
        self.emit(depth + 2, "break")
        new = self.graph(bg, state + caps, depth + 1)
        self.emit(depth + 1, f"{', '.join(state)} = {', '.join(new)}" + ("," if n == 1 else ""))
        for v, s in zip(op.outputs, state):
            env[id(v)] = s

    def cond_op(self, op, env, depth):
        tb, fb = op.attrs["true_branch"], op.attrs["false_branch"]
        loc = where(op)
        for v in op.outputs:
            _scalar_ok(v, f"cond {loc}: result")
        pred = env[id(op.inputs[0])]
        caps = [env[id(v)] for v in op.inputs[1:]]
        outs = [self.fresh("r") for _ in op.outputs]
        self.emit(depth, f"if {pred}:  # cond {loc}")
        for branch, d in ((tb, depth + 1), (fb, depth + 1)):
            res = self.graph(branch, caps, d)
            for o, r, v in zip(outs, res, op.outputs):
                self.emit(d, f"{o} = {np_name(v.type.dtype)}({r})")
            if not op.outputs:
                self.emit(d, "pass")
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

    def __init__(self, op, source, key):
        self.op, self.source, self.key = op, source, key
        self.status = None
        self.fn = None
        self.error = None
        self.interpreted_s = 0.0
        self.scalar_in = [isinstance(v.type, TensorType) and v.type.shape == ()
                          for v in op.inputs]
        self.out_types = [v.type.dtype.np.type for v in op.outputs]
        self.single = len(op.outputs) == 1
        impl = REGISTRY[op.type].numpy
        self.fallback = lambda *a: impl(*a, **op.attrs)

    def _load(self):
        mod, self.status = cache.load_module(self.key, self.source)
        self.fn = mod.loop_kernel
        self._make_fast()
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
            try:
                self._load()
            except Exception as e:  # noqa: BLE001 - unusable cache entry: interpret instead
                self.error = f"loop kernel failed to load: {type(e).__name__}: {e}"
        if self.error is not None:
            return self.fallback(*arrays)
        try:
            return self.fast(*arrays)
        except IndexError:
            return self.fallback(*arrays)   # the interpreter raises the reference error
        except Exception as e:  # noqa: BLE001 - typing/compile failure: interpret from now on
            self.error = f"loop kernel failed to compile: {type(e).__name__}: {e}"
            return self.fallback(*arrays)

    def _make_fast(self):
        """A straight-line Python wrapper for this arity: no per-call loops over arguments.

        Scalars go in as numpy scalars (`a[()]`) and come back as numpy scalars of the
        result dtype, as the numpy rules give for rank-0 results."""
        params = [f"a{k}" for k in range(len(self.scalar_in))]
        args = [p + "[()]" if s else p for p, s in zip(params, self.scalar_in)]
        outs = [f"T{k}(r[{k}])" for k in range(len(self.out_types))]
        ret = outs[0] if self.single else (f"({', '.join(outs)},)" if outs else "None")
        src = (f"def fast({', '.join(params)}):\n"
               f"    r = fn({', '.join(args)})\n"
               f"    return {ret}\n")
        ns = {"fn": self.fn, **{f"T{k}": t for k, t in enumerate(self.out_types)}}
        exec(compile(src, f"<graphc loop wrapper {self.op.name}>", "exec"), ns)  # noqa: S102
        self.fast = ns["fast"]


def lower(op):
    """A LoopRunner for a top-level `while`/`cond` op, or NotLowerable with the reason."""
    em = _Emitter()
    params = []
    env = {}
    for k, v in enumerate(op.inputs):
        name = f"a{k}"
        params.append(name)
        env[id(v)] = name
        t = v.type
        if not isinstance(t, TensorType) or t.dtype.name not in SUPPORTED_DTYPES:
            raise NotLowerable(f"input '%{v.name}' is {t}, not a numeric or bool tensor")
        if t.shape != ():
            em.arrays.add(name)
    if op.type == "while":
        em.while_op(op, env, 1)
    else:
        em.cond_op(op, env, 1)
    outs = [env[id(v)] for v in op.outputs]
    em.emit(1, f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    body = [f"def loop_kernel({', '.join(params)}):"] + em.lines
    header = ["import numpy as np", "from numba import njit",
              "from graphc.kernels.scalar import *  # noqa: F401,F403", ""]
    footer = ["", "loop_kernel = njit(cache=True, error_model='numpy')(loop_kernel)"]
    source = "\n".join(header + body + footer) + "\n"
    canonical = "\n".join(ln.split("  #")[0] for ln in source.splitlines())
    canonical += "\n" + " ".join(f"{v.type.dtype.name}{len(v.type.shape)}" for v in op.inputs)
    return LoopRunner(op, source, cache.kernel_key("loop\n" + canonical))
