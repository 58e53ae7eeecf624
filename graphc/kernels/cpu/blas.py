"""A variable update `v -= c * (a @ b)` (also `+=`, and without `c`) as one BLAS call.

An optimizer step on a weight matrix is a matmul (the gradient), a scaling and an
in-place subtract: three passes over the weight-sized gradient, one of them allocating it.
`gemm` computes C = alpha*op(A)@op(B) + beta*C in one call, so with C = the variable's
own array, alpha = -c and beta = 1 the gradient is never materialized (measured on the
784x256 layer of a 784-256-10 MLP step: 73 us of scaling and subtracting become
part of the BLAS call).

The call goes to the BLAS that numpy itself is linked against (numpy's wheels bundle
OpenBLAS, `scipy_cblas_sgemm64_` and friends), loaded with ctypes, so thread settings
(OPENBLAS_NUM_THREADS) are the same as for np.matmul. Where no such library is found the
pattern is simply not used. The variable's array is written in place only when nothing
else refers to it (the same copy-on-write rule as assign_sub), and never when it overlaps
an operand.
"""
import ctypes
import glob
import os
import threading

import numpy as np

from ...runtime import variables
from ...runtime.types import TensorType

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
# Below this many output elements a fused call saves less than ctypes costs (~3 us).
MIN_ELEMENTS = 1 << 14
_SYMBOLS = [("scipy_cblas_{}gemm64_", ctypes.c_int64), ("cblas_{}gemm64_", ctypes.c_int64),
            ("scipy_cblas_{}gemm", ctypes.c_int), ("cblas_{}gemm", ctypes.c_int)]
_GEMM = {}     # numpy dtype -> ctypes function, once loaded
_state = {"loaded": False}


def _library_paths():
    root = os.path.dirname(os.path.abspath(np.__file__))
    pats = [os.path.join(root, os.pardir, "numpy.libs", "*blas*"),
            os.path.join(root, ".dylibs", "*blas*")]
    return sorted(p for pat in pats for p in glob.glob(pat))


def _load():
    """Bind sgemm/dgemm from numpy's own BLAS, if it exports them."""
    _state["loaded"] = True
    for path in _library_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern, int_t in _SYMBOLS:
            fns = {}
            for letter, dtype, real in (("s", np.float32, ctypes.c_float),
                                        ("d", np.float64, ctypes.c_double)):
                fn = getattr(lib, pattern.format(letter), None)
                if fn is None:
                    break
                fn.restype = None
                fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t,
                               real, ctypes.c_void_p, int_t, ctypes.c_void_p, int_t, real,
                               ctypes.c_void_p, int_t]
                fns[np.dtype(dtype)] = fn
            if len(fns) == 2:
                _GEMM.update(fns)
                _state["int"], _state["path"] = int_t, path
                _bind_threads(lib)
                return


def _bind_threads(lib):
    for key, names, restype, argtypes in (
            ("blas_threads", ("scipy_openblas_get_num_threads64_",
                              "openblas_get_num_threads64_", "openblas_get_num_threads"),
             ctypes.c_int, []),
            ("set_threads", ("scipy_openblas_set_num_threads64_",
                             "openblas_set_num_threads64_", "openblas_set_num_threads"),
             None, [ctypes.c_int])):
        for name in names:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes
                _state[key] = fn
                break


def set_blas_threads(n):
    """Set numpy's OpenBLAS thread count (what OPENBLAS_NUM_THREADS sets at start-up);
    False where the library has no such entry point."""
    fn = _state.get("set_threads") if available() else None
    if fn is None:
        return False
    fn(int(n))
    return True


def blas_threads():
    """How many threads numpy's BLAS uses per call now (0: unknown)."""
    fn = _state.get("blas_threads") if available() else None
    return int(fn()) if fn is not None else 0


class _Fewer:
    """numpy's BLAS on fewer threads while a graphc call that asked for it runs.

    OpenBLAS's count is one number for the whole process (the thread-local setter of this
    build sets it too), so calls from several threads nest: the first in lowers it, the
    last out puts back the count it found. Lowering only changes which threads do the work
    of a call (never its result); a numpy call of the user's own thread that starts inside
    such a window runs on fewer threads too, and a count the user sets meanwhile is
    replaced by the one found on the way in."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.saved = 0            # the count found by the first call in

    def enter(self, n):
        with self.lock:
            if self.depth == 0:
                self.saved = blas_threads()
                if 0 < n < self.saved:
                    set_blas_threads(n)
            self.depth += 1

    def leave(self):
        with self.lock:
            self.depth -= 1
            if self.depth == 0 and self.saved and blas_threads() != self.saved:
                set_blas_threads(self.saved)


FEWER = _Fewer()


def user_threads():
    """numpy's BLAS count as the user has it (not the one lowered for a graphc call)."""
    return FEWER.saved if FEWER.depth else blas_threads()


def can_lower():
    """Can graphc run a call of numpy's BLAS on fewer threads than the user's count?"""
    return available() and "set_threads" in _state and "blas_threads" in _state


def available():
    if not _state["loaded"]:
        _load()
    return bool(_GEMM)


def _operand(x):
    """(transpose flag, array, leading dimension) describing x row-major for cblas."""
    rows, cols = x.shape
    if x.flags.c_contiguous:
        return _NO_TRANS, x, max(1, cols)
    if x.flags.f_contiguous:
        return _TRANS, x, max(1, rows)
    x = np.ascontiguousarray(x)
    return _NO_TRANS, x, max(1, cols)


def gemm_update(var, a, b, scale, sign, transpose_a, transpose_b):
    """var += sign * scale * (op(a) @ op(b)) with one gemm call; False if not applicable
    (the caller then runs the ops one by one)."""
    c = var._value
    dt = c.dtype
    fn = _GEMM.get(dt)
    if fn is None or a.dtype != dt or b.dtype != dt or a.ndim != 2 or b.ndim != 2:
        return False
    la = a.T if transpose_a else a
    lb = b.T if transpose_b else b
    m, k = la.shape
    n = lb.shape[1]
    if c.shape != (m, n) or lb.shape[0] != k or np.ndim(scale) != 0:
        return False
    c = variables.owned_value(var)
    if not c.flags.c_contiguous or np.may_share_memory(c, a) or np.may_share_memory(c, b):
        return False
    gemm(ta_la_lda=_operand(la), tb_lb_ldb=_operand(lb), m=m, n=n, k=k,
         alpha=sign * float(scale), beta=1.0, c=c)
    return True


def gemm(ta_la_lda, tb_lb_ldb, m, n, k, alpha, beta, c):
    """C = alpha*op(A)@op(B) + beta*C on a C-ordered c. A big product runs the way its
    recent timings say is fastest now: as numpy's BLAS is set, on fewer BLAS threads, or
    split across numba's threads (`blas_choice`)."""
    ta, a, lda = ta_la_lda
    tb, b, ldb = tb_lb_ldb
    dt = c.dtype
    choice, way = blas_choice.choose(dt, ta, tb, m, n, k)
    t0 = blas_choice.clock()
    if way == "plain":
        call_gemm(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c)
    else:
        blas_choice.run_way(choice, way, dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c)
    if choice is not None:
        choice.record(way, blas_choice.clock() - t0)


def call_gemm(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c):
    """One cblas gemm call on the BLAS's threads as they are set now."""
    _GEMM[dtype](_ROW_MAJOR, ta, tb, m, n, k, alpha, a.ctypes.data, lda, b.ctypes.data, ldb,
                 beta, c.ctypes.data, max(1, n))


def matmul(a, b, transpose_a=False, transpose_b=False):
    """The numpy rule for matmul, except that a big 2-D float32/float64 product of one
    dtype runs the way its recent timings say is fastest (`gemm`): the plain way is the
    numpy rule itself (np.matmul, no ctypes call)."""
    dt = a.dtype
    if a.ndim != 2 or b.ndim != 2 or b.dtype != dt or dt not in _GEMM:
        return _MATMUL(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    la = a.T if transpose_a else a
    lb = b.T if transpose_b else b
    m, k = la.shape
    n = lb.shape[1]
    if lb.shape[0] != k:
        return _MATMUL(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    choice, way = blas_choice.choose(dt, _TRANS if transpose_a else _NO_TRANS,
                                     _TRANS if transpose_b else _NO_TRANS, m, n, k)
    if choice is None:
        return _MATMUL(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    t0 = blas_choice.clock()
    if way == "plain":
        c = _MATMUL(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    else:
        c = np.empty((m, n), dt)
        (ta, a2, lda), (tb, b2, ldb) = _operand(la), _operand(lb)
        blas_choice.run_way(choice, way, dt, ta, tb, m, n, k, 1.0, a2, lda, b2, ldb, 0.0, c)
    choice.record(way, blas_choice.clock() - t0)
    return c


def may_split(op):
    """Could this matmul op be big enough for a measured choice of threads? (Static shapes
    decide at plan time, so small products keep the plain numpy rule with no per-call
    checks.)"""
    from .blas_choice import CHOICE_MIN
    if not available() or any(len(v.type.shape) != 2 for v in op.inputs):
        return False
    (m, n), a = op.outputs[0].type.shape, op.inputs[0].type.shape
    k = a[0] if op.attrs["transpose_a"] else a[1]
    return None in (m, n, k) or m * n * k >= CHOICE_MIN


def _MATMUL(a, b, **attrs):
    rule = _RULE.get("matmul")
    if rule is None:
        from ...runtime.registry import REGISTRY
        rule = _RULE["matmul"] = REGISTRY["matmul"].numpy
    return rule(a, b, **attrs)


_RULE = {}     # the numpy rule, looked up once (an import per call costs ~1 us)


def find_updates(graph):
    """Ops of `graph` forming `assign_{sub,add}_variable(v, [c *] matmul(a, b))`, where the
    matmul and the scaling feed nothing else: {id(assign op): (assign, matmul, multiply)}."""
    producer = {id(v): op for op in graph.operations for v in op.outputs}
    uses = {}
    for op in graph.operations:
        for v in op.inputs:
            uses[id(v)] = uses.get(id(v), 0) + 1
    for v in graph.outputs:
        uses[id(v)] = uses.get(id(v), 0) + 1
    found = {}
    for op in graph.operations:
        if op.type not in ("assign_sub_variable", "assign_add_variable"):
            continue
        delta = op.inputs[1]
        mul = producer.get(id(delta))
        mm = mul
        if mul is not None and mul.type == "multiply":
            scalars = [v for v in mul.inputs if isinstance(v.type, TensorType)
                       and v.type.shape == ()]
            rest = [v for v in mul.inputs if v not in scalars]
            if len(scalars) != 1 or len(rest) != 1:
                continue
            mm = producer.get(id(rest[0]))
        else:
            mul = None
        if mm is None or mm.type != "matmul" or len(mm.outputs[0].type.shape) != 2:
            continue
        t = mm.outputs[0].type
        if t.dtype.name not in ("float32", "float64") or None in t.shape or \
                t.shape[0] * t.shape[1] < MIN_ELEMENTS:
            continue
        chain = [mm.outputs[0]] + ([mul.outputs[0]] if mul is not None else [])
        if all(uses.get(id(v), 0) == 1 for v in chain):
            found[id(op)] = (op, mm, mul)
    return found


def update_step(assign, mm, mul):
    """(fn, input values) for a Plan step running the fused update, with a fallback that
    runs the three ops' numpy rules when gemm does not apply to the run-time arrays."""
    from ...runtime.registry import REGISTRY
    sign = -1.0 if assign.type == "assign_sub_variable" else 1.0
    ta, tb = mm.attrs["transpose_a"], mm.attrs["transpose_b"]
    scale_v = None
    if mul is not None:
        scale_v = next(v for v in mul.inputs if v.type.shape == ())
    mul_np = REGISTRY["multiply"].numpy
    assign_np = REGISTRY[assign.type].numpy

    def run(var, a, b, scale=1.0):
        if gemm_update(var, a, b, scale, sign, ta, tb):
            return None
        delta = matmul(a, b, transpose_a=ta, transpose_b=tb)
        if mul is not None:
            delta = mul_np(*[scale if v is scale_v else delta for v in mul.inputs])
        return assign_np(var, delta)
    ins = [assign.inputs[0], *mm.inputs] + ([scale_v] if scale_v is not None else [])
    return run, ins


from . import blas_choice  # noqa: E402 - it imports this module; used at call time only
