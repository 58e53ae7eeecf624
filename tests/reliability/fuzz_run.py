"""Runs one fuzz program three ways and compares: eagerly (the reference, one statement at a
time so every intermediate is known), `gc.function(backend="numpy")`, and
`gc.function(backend="numba")` with fused kernels forced at every size.

`check(seed)` returns a `Result` whose `problems` name each disagreement ("[class] backend
output: elements"); `Result.report()` adds the program, its inputs and a runnable reproducer.
"""
import contextlib
import linecache
import os
from dataclasses import dataclass, field

import numpy as np

import graphc as gc
from graphc.kernels.stats import COUNTS
from . import fuzz_bounds as B
from .fuzz_generator import generate
from .fuzz_programs import ARITH, COMPARE, FLOAT_UNARY, REDUCE, Value

UNARY = set(FLOAT_UNARY) | {"logical_not"}
BINARY = set(ARITH) | set(COMPARE) | {"logical_and", "logical_or"}
RAISING = {"floordiv", "mod", "pow"}      # on integers: zero divisor, negative exponent
SHOWN = 4                                  # differing elements shown per output


@contextlib.contextmanager
def kernels_forced():
    """GRAPHC_NUMBA_MIN_SIZE=0 and GRAPHC_KERNEL_CHOICE=kernel, as tests/conftest.py's
    `numba_forced` fixture sets them (this also runs outside pytest, for long runs)."""
    keys = ("GRAPHC_NUMBA_MIN_SIZE", "GRAPHC_KERNEL_CHOICE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel")
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def materialize(prog):
    """`program` defined from the rendered source, with lines that tracebacks can show."""
    name = f"<graphc-fuzz-seed-{prog.seed}>"
    src = prog.source
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {"gc": gc, "np": np}
    exec(compile(src, name, "exec"), ns)
    return ns["program"]


# -- eager reference and its error bounds ----------------------------------------------------
def run_eager(prog):
    """({name: array} for inputs and every statement run, (index, exception) or None)."""
    ns = {"gc": gc, "np": np}
    values = {}
    for v, a in zip(prog.inputs, prog.arrays):
        ns[v.name], values[v.name] = gc.constant(a), a
    for i, node in enumerate(prog.nodes):
        try:
            t = eval(node.expr, ns)
        except Exception as e:  # noqa: BLE001 - the compiled runs must raise the same type
            return values, (i, e)
        got = t.numpy()
        if node.invalid or str(got.dtype) != node.out.dtype or got.shape != node.out.shape:
            raise AssertionError(f"fuzz generator bug: {node.expr} gave {got.dtype}"
                                 f"{list(got.shape)}, expected {node.out.dtype}"
                                 f"{list(node.out.shape)}\n{prog.source}")
        ns[node.out.name], values[node.out.name] = t, np.asarray(got)
    return values, None


def _operand(arg, anchor, values, errs):
    if isinstance(arg, Value):
        return values[arg.name], errs[arg.name]
    return np.asarray(eval(arg), np.dtype(anchor)), B.exact(())


def node_bound(node, values, errs):
    """The error bound of one statement's result, from its operands' values and bounds."""
    op, out = node.op, values[node.out.name]
    if op == "constant":
        return B.exact(out.shape)
    vals = [a for a in node.args if isinstance(a, Value)]
    anchor = (vals[1] if op == "where" and len(vals) > 1 else vals[0]).dtype
    ops = [_operand(a, anchor, values, errs) for a in node.args]
    (x, ex), rest = ops[0], ops[1:]
    if op in UNARY:
        err = B.unary(op, x, ex, out)
    elif op in BINARY:
        err = B.binary(op, x, rest[0][0], ex, rest[0][1], out)
    elif op == "where":
        err = B.where(x, rest[0][0], rest[1][0], ex, rest[0][1], rest[1][1], out)
    elif op == "cast":
        err = B.cast(x, ex, out)
    elif op == "clip_by_value":
        err = B.int_like([ex], out.shape)
    elif op in REDUCE:
        err = B.reduce(op, x, np.broadcast_to(ex, x.shape), node.attrs["axes"], out)
    elif op == "softmax":
        err = B.softmax(x, ex, node.attrs["axis"], out)
    elif op == "transpose":
        err = np.transpose(np.broadcast_to(ex, x.shape), node.attrs["perm"])
    elif op == "matmul":
        (y, ey) = rest[0]
        if node.attrs.get("outer"):
            a, b, ea, eb = x[..., :, None], y[..., None, :], ex[..., :, None], ey[..., None, :]
        else:
            sw = lambda m, t: np.swapaxes(m, -1, -2) if t else m  # noqa: E731
            ta, tb = node.attrs["ta"], node.attrs["tb"]
            a, b, ea, eb = sw(x, ta), sw(y, tb), sw(ex, ta), sw(ey, tb)
        err = B.matmul(a, b, ea, eb, out)
    else:
        raise KeyError(op)
    return np.array(np.broadcast_to(err, out.shape), B.LD)


def bounds(prog, values, upto):
    errs = {v.name: B.exact(v.shape) for v in prog.inputs}
    for node in prog.nodes[:upto]:
        errs[node.out.name] = node_bound(node, values, errs)
    return errs


# -- comparison ------------------------------------------------------------------------------
def compare_output(label, want, got, err):
    """Problems of one output: dtype/shape, then elements outside the bound (see fuzz_bounds)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return [f"[dtype/shape] {label}: {got.dtype}{list(got.shape)} where eager gives "
                f"{want.dtype}{list(want.shape)}"]
    checked = np.isfinite(err)
    if want.dtype.kind != "f":
        bad = checked & (got != want)
        return _elements(label, want, got, err, bad, "integer" if want.dtype.kind == "i"
                         else "bool")
    w, g = B._ld(want), B._ld(got)
    with np.errstate(all="ignore"):
        nan_bad = np.isnan(w) != np.isnan(g)
        inf_bad = (np.isinf(w) | np.isinf(g)) & (w != g) & ~np.isnan(w)
        val_bad = np.isfinite(w) & np.isfinite(g) & ~(np.abs(w - g) <= err)
        zero_bad = (err == 0) & (w == 0) & (g == 0) & (np.signbit(want) != np.signbit(got))
    out = []
    for mask, what in ((nan_bad, "NaN"), (inf_bad, "inf"), (val_bad, "value"),
                       (zero_bad, "signed zero")):
        out += _elements(label, want, got, err, checked & mask, what)
    return out


def _elements(label, want, got, err, bad, what):
    if not bad.any():
        return []
    idx = np.argwhere(bad)[:SHOWN]
    shown = "; ".join(f"[{','.join(map(str, i))}] eager {want[tuple(i)]!r} got "
                      f"{got[tuple(i)]!r} (allowed {float(err[tuple(i)]):.3g})" for i in idx)
    return [f"[{what}] {label}: {int(bad.sum())} element(s) differ: {shown}"]


@dataclass
class Result:
    program: object
    problems: list = field(default_factory=list)
    eager_error: object = None
    groups: int = 0             # fused groups in the numba plan
    kernels: dict = field(default_factory=dict)   # backend -> kernel runs in its call
    fallbacks: list = field(default_factory=list)
    checked: int = 0            # output elements held to a bound
    free: int = 0               # output elements left free

    def report(self):
        p = self.program
        return "\n".join([f"== fuzz seed {p.seed}: {len(self.problems)} problem(s)"]
                         + [f"  - {m}" for m in self.problems]
                         + ["-- program:", p.source, "-- reproducer:", p.script()])


def _may_raise(prog, errs, values):
    """Whether a raising op (integer //, %, **) has an operand that rounding may change."""
    for node in prog.nodes:
        if node.op in RAISING and node.out.dtype in ("int32", "int64"):
            for a in node.args:
                if isinstance(a, Value) and (a.name not in errs or np.isinf(errs[a.name]).any()):
                    return True
    return False


def _run(prog, backend, tensors):
    """Backend "numpy"/"numba", or "numpy?"/"numba?": traced with every dim None (an
    input_signature), so shapes and broadcasting are resolved only at run time."""
    fn = materialize(prog)
    sig = None
    if backend.endswith("?"):
        sig = [gc.TensorSpec([None] * len(v.shape), getattr(gc, v.dtype)) for v in prog.inputs]
    f = gc.function(fn, backend=backend.rstrip("?"), autograph=False, input_signature=sig)
    before = COUNTS.kernel_calls
    try:
        out = f(*tensors)
    except Exception as e:  # noqa: BLE001 - compared with eager's outcome
        return None, e, f, COUNTS.kernel_calls - before
    return [t.numpy() for t in out], None, f, COUNTS.kernel_calls - before


def check(seed, backends=("numpy", "numba")):
    prog = generate(seed)
    values, failed = run_eager(prog)
    res = Result(prog, eager_error=failed)
    errs = bounds(prog, values, failed[0] if failed else len(prog.nodes))
    tensors = [gc.constant(a) for a in prog.arrays]
    for backend in backends:
        numba = backend.startswith("numba")
        with kernels_forced() if numba else contextlib.nullcontext():
            got, exc, f, kernels = _run(prog, backend, tensors)
        if numba:
            res.kernels[backend] = kernels
        if backend == "numba":        # static shapes: every fused group runs its kernel
            _kernel_check(res, f, tensors, exc is None and failed is None)
        res.problems += _outcome(prog, backend, values, errs, failed, got, exc, res)
    return res


def _outcome(prog, backend, values, errs, failed, got, exc, res):
    if failed is not None:
        i, e = failed
        node = prog.nodes[i]
        if exc is not None and type(exc) is type(e):
            return []
        ins = [a for a in node.args if isinstance(a, Value)]
        if not node.invalid and any(np.isinf(errs[a.name]).any() for a in ins):
            return []        # the failing op's operands are not determined: either is right
        what = "no error" if exc is None else f"{type(exc).__name__}: {exc}"
        return [f"[error type] {backend}: eager raises {type(e).__name__} at `{node.expr}` "
                f"({e}), compiled: {what}"]
    if exc is not None:
        if _may_raise(prog, errs, values) and isinstance(exc, gc.errors.InvalidArgumentError):
            return []
        return [f"[raises] {backend}: {type(exc).__name__}: {exc} where eager runs"]
    problems = []
    for v, g in zip(prog.outputs, got):
        err = errs[v.name]
        if backend == "numpy":
            res.checked += int(np.isfinite(err).sum())
            res.free += int(np.isinf(err).sum())
        problems += compare_output(f"{backend} {v.name}", values[v.name], g, err)
    return problems


def _kernel_check(res, f, tensors, ran_ok):
    """The numba run must have entered compiled code for every fused group it planned."""
    if not ran_ok:
        return
    plan = getattr(f.get_concrete_function(*tensors).graph, "_numba_plan", None)
    groups = list(getattr(plan, "groups", None) or [])
    res.groups = len(groups)
    for runner in groups:
        res.fallbacks += [r for r in runner.fallbacks if r not in res.fallbacks]
    if groups and res.kernels["numba"] == 0:
        res.problems.append(f"[no kernel] numba: {len(groups)} fused group(s) but no kernel "
                            f"ran (fallbacks: {res.fallbacks})")
