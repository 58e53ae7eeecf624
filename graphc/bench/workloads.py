"""The built-in workloads, each written once with the public graphc API.

A workload's `build(sizes, seed)` returns a fresh `Case`: the Python function, its tensor
arguments and any variables it updates. The runner calls `case.fn` eagerly and wraps the
same function in `gc.function(..., backend=...)` for the compiled modes, so every mode
runs exactly this code.
"""
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import graphc as gc


@dataclass
class Case:
    """One ready-to-run instance of a workload."""
    fn: Callable                  # Python function on gc tensors (the thing benchmarked)
    args: tuple                   # its gc tensor arguments
    arrays: tuple                 # the same arguments as numpy arrays (for peers)
    state: list = field(default_factory=list)   # gc.Variables the call updates
    init: dict = field(default_factory=dict)    # initial numpy values of `state`, by name
    notes: list = field(default_factory=list)   # shown under the table (e.g. the loop form)
    learning_rate: float = None                 # for training workloads' peers


@dataclass(frozen=True)
class Workload:
    """A benchmark: what it computes, its full and --quick sizes, how to build it."""
    name: str
    summary: str
    sizes: dict
    quick_sizes: dict
    build: Callable               # build(sizes, seed) -> Case
    size_text: Callable           # sizes -> "4096x1024 float32"
    bytes_moved: Optional[Callable] = None   # sizes -> bytes read+written once (memory-bound)
    rtol: float = 1e-5
    atol: float = 1e-6
    requires: Callable = lambda: None        # () -> reason it cannot run, or None

    def sizes_for(self, quick):
        return dict(self.quick_sizes if quick else self.sizes)


def _uniform(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _stateless(fn, *arrays):
    return Case(fn, tuple(gc.constant(a) for a in arrays), tuple(arrays))


# -- elementwise chain ------------------------------------------------------------------------
def elementwise_chain(x):
    """tanh(a*x + b) * exp(-x*x) + 0.5*sin(x): eagerly ten passes over memory, fused one."""
    return gc.tanh(1.5 * x + 0.5) * gc.exp(-x * x) + 0.5 * gc.sin(x)


def _build_elementwise(sizes, seed):
    return _stateless(elementwise_chain, _uniform(np.random.default_rng(seed), sizes["n"]))


# -- row softmax ------------------------------------------------------------------------------
def row_softmax(x):
    """Numerically stable softmax over the last axis."""
    e = gc.exp(x - gc.reduce_max(x, axis=-1, keepdims=True))
    return e / gc.reduce_sum(e, axis=-1, keepdims=True)


def _build_softmax(sizes, seed):
    rng = np.random.default_rng(seed)
    return _stateless(row_softmax, _uniform(rng, (sizes["rows"], sizes["cols"]), -4.0, 4.0))


# -- layernorm --------------------------------------------------------------------------------
def layernorm(x, gamma, beta):
    """Layer normalization over the last axis, with a learned scale and shift."""
    mean = gc.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = gc.reduce_mean(centered * centered, axis=-1, keepdims=True)
    return centered * gc.rsqrt(var + 1e-5) * gamma + beta


def _build_layernorm(sizes, seed):
    rng = np.random.default_rng(seed)
    rows, cols = sizes["rows"], sizes["cols"]
    return _stateless(layernorm, _uniform(rng, (rows, cols), -3.0, 3.0),
                      _uniform(rng, cols, 0.5, 1.5), _uniform(rng, cols, -0.5, 0.5))


def _load_as_user_module(filename, module_name):
    """Import a file of this package as a top-level module (see user_loops.py: why)."""
    if module_name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), filename)
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


user_loops = _load_as_user_module("user_loops.py", "graphc_bench_user_loops")
scalar_loop = user_loops.scalar_loop
branchy_loop = user_loops.branchy_loop


# -- scalar while loop ------------------------------------------------------------------------
def scalar_loop_functional(n):
    """`user_loops.scalar_loop` written with gc.while_loop (no AutoGraph needed)."""
    s, _ = gc.while_loop(lambda s, i: i < n, lambda s, i: (s + i * i % 7, i + 1),
                         (gc.constant(0), gc.constant(0)))
    return s


def _build_scalar_loop(sizes, seed):
    fn, notes = loop_form(scalar_loop, scalar_loop_functional, np.int32(10))
    n = np.int32(sizes["n"])
    return Case(fn, (gc.constant(n),), (n,), notes=notes)


# -- branchy loop over a tensor ---------------------------------------------------------------
def branchy_loop_functional(x):
    """`user_loops.branchy_loop` written with gc.while_loop and gc.cond."""
    n = gc.size(x)

    def body(i, acc):
        xi = x[i]
        return i + 1, gc.cond(xi > 0, lambda: acc + xi ** 2, lambda: acc - xi)

    _, acc = gc.while_loop(lambda i, acc: i < n, body, (gc.constant(0), gc.constant(0.0)))
    return acc


def _build_branchy(sizes, seed):
    fn, notes = loop_form(branchy_loop, branchy_loop_functional,
                          np.array([2.0, -1.0, 0.5], np.float32))
    case = _stateless(fn, _uniform(np.random.default_rng(seed), sizes["n"]))
    case.notes = notes
    return case


# -- MLP train step ---------------------------------------------------------------------------
MLP_LEARNING_RATE = 0.01


def _mlp_requires():
    try:
        from graphc.optimizers import SGD  # noqa: F401
    except ImportError as e:
        return f"needs gc.optimizers.SGD, which is not available yet ({e})"
    return None


def make_mlp_step(params, optimizer):
    """One SGD step of a 2-layer MLP (relu, sparse softmax cross-entropy); returns the loss."""
    w1, b1, w2, b2 = params

    def mlp_train_step(x, labels):
        with gc.GradientTape() as tape:
            hidden = gc.nn.relu(x @ w1 + b1)
            logits = hidden @ w2 + b2
            loss = gc.reduce_mean(
                gc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        grads = tape.gradient(loss, params)
        optimizer.apply_gradients(zip(grads, params))
        return loss

    return mlp_train_step


def _build_mlp(sizes, seed):
    from graphc.optimizers import SGD
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out, batch = sizes["in"], sizes["hidden"], sizes["out"], sizes["batch"]
    init = {"w1": _uniform(rng, (n_in, n_hidden), -0.08, 0.08),
            "b1": np.zeros(n_hidden, np.float32),
            "w2": _uniform(rng, (n_hidden, n_out), -0.15, 0.15),
            "b2": np.zeros(n_out, np.float32)}
    params = [gc.Variable(v.copy(), name=k) for k, v in init.items()]
    x = _uniform(rng, (batch, n_in))
    labels = rng.integers(0, n_out, batch).astype(np.int32)
    fn = make_mlp_step(params, SGD(MLP_LEARNING_RATE))
    return Case(fn, (gc.constant(x), gc.constant(labels)), (x, labels), params, init,
                learning_rate=MLP_LEARNING_RATE)


# -- small-call dispatch ----------------------------------------------------------------------
def scalar_add(x, y):
    """`x + y` on two scalars: measures the fixed cost of one call."""
    return x + y


def _build_dispatch(sizes, seed):
    return _stateless(scalar_add, np.float32(1.25), np.float32(2.5))


# -- which loop form runs ---------------------------------------------------------------------
_LOOP_FORMS = {}


def loop_form(python_form, functional_form, probe_input):
    """(function to run, notes): the Python-loop form when AutoGraph converts it, else its twin.

    The loop workloads are written as plain Python `while`/`for`/`if`; while AutoGraph does
    not yet convert one of them inside `gc.function` (checked once, on `probe_input`,
    against eager), the `gc.while_loop`/`gc.cond` twin, which computes the same thing, runs.
    """
    if python_form not in _LOOP_FORMS:
        try:
            want = python_form(gc.constant(probe_input)).numpy()
            got = gc.function(python_form, backend="numpy")(gc.constant(probe_input)).numpy()
            if not np.array_equal(want, got):
                raise ValueError(f"converted form gave {got}, eager {want}")
            _LOOP_FORMS[python_form] = (python_form, [])
        except Exception as e:  # noqa: BLE001 - any failure means: use the functional form
            note = (f"ran {functional_form.__name__} (gc.while_loop/gc.cond): AutoGraph does "
                    f"not convert {python_form.__name__} yet ({type(e).__name__})")
            _LOOP_FORMS[python_form] = (functional_form, [note])
    fn, notes = _LOOP_FORMS[python_form]
    return fn, list(notes)


def _f32(count):
    return f"{count:,} float32"


WORKLOADS = {w.name: w for w in [
    Workload("elementwise", "y = tanh(1.5*x + 0.5) * exp(-x*x) + 0.5*sin(x)", {"n": 10_000_000},
             {"n": 1_000_000}, _build_elementwise, lambda s: _f32(s["n"]),
             bytes_moved=lambda s: 2 * 4 * s["n"], rtol=1e-5, atol=1e-6),
    Workload("softmax", "softmax over each row", {"rows": 4096, "cols": 1024},
             {"rows": 512, "cols": 1024}, _build_softmax,
             lambda s: f"{s['rows']}x{s['cols']} float32",
             bytes_moved=lambda s: 2 * 4 * s["rows"] * s["cols"], rtol=1e-4, atol=1e-7),
    Workload("layernorm", "layer normalization of each row, with gamma and beta",
             {"rows": 8192, "cols": 512}, {"rows": 1024, "cols": 512}, _build_layernorm,
             lambda s: f"{s['rows']}x{s['cols']} float32",
             bytes_moved=lambda s: 4 * (2 * s["rows"] * s["cols"] + 2 * s["cols"]),
             rtol=1e-4, atol=1e-4),
    Workload("scalar_loop", "while i < n: s += i * i % 7; i += 1 (int32)", {"n": 20_000},
             {"n": 1_000}, _build_scalar_loop, lambda s: f"{s['n']:,} iterations int32",
             rtol=0, atol=0),
    Workload("branchy_loop", "for i in gc.range(n): if x[i] > 0: acc += x[i]**2 "
             "else: acc -= x[i]", {"n": 10_000}, {"n": 500}, _build_branchy,
             lambda s: f"{s['n']:,} iterations float32", rtol=1e-4, atol=1e-4),
    Workload("mlp_train_step", "SGD step of a 784-256-10 relu MLP, cross-entropy loss",
             {"in": 784, "hidden": 256, "out": 10, "batch": 128},
             {"in": 784, "hidden": 256, "out": 10, "batch": 128}, _build_mlp,
             lambda s: f"{s['in']}-{s['hidden']}-{s['out']}, batch {s['batch']}",
             rtol=1e-4, atol=1e-5, requires=_mlp_requires),
    Workload("dispatch", "x + y on two float32 scalars (per-call overhead)", {}, {},
             _build_dispatch, lambda s: "scalars float32", rtol=0, atol=0),
]}
