"""How far a compiled result may legitimately differ from eager's: a per-element error bound
propagated through a fuzz program alongside eager's own intermediate values.

Each value carries `err`, an absolute bound (long double) per element on |compiled - eager|:
- 0: the element is determined exactly. Floats must then be equal, NaN where eager has NaN,
  the same infinity, and the same sign of zero. Integers and bools are always 0 or inf.
- finite > 0: a finite float within `err` (the sign of a zero is not checked).
- inf: undetermined ("free"): an earlier rounding difference may flip a comparison, a floor,
  a cast to int or a sum's overflow, so any value is legitimate.

An op's own allowance: K_BASIC ulps of its operands' magnitude for +, -, *, /, sqrt (a fused
multiply-add rounds once where eager rounds twice), K_TRANS ulps of the result for exp, log,
sin, pow... (two implementations within 4 ulp each), and for sums and matmul 2n ulps of
sum(|terms|) (any summation order is within (n-1) ulps of that sum, Higham's bound).
Inputs' errors go through each op's derivative bound (Lipschitz constants, or intervals for
the discontinuous ops). Special values: an element with eager NaN/inf or a possible overflow
(|value| + err beyond the dtype's max) is exact when every input element feeding it is
exact and no order of evaluation can overflow, and free otherwise.
"""
import numpy as np

LD = np.longdouble
K_BASIC = 2
K_TRANS = 8
TRANS = {"exp", "log", "log1p", "sin", "cos", "tan", "tanh", "erf", "pow"}


def eps(dtype):
    return LD(np.finfo(dtype).eps)


def fmax(dtype):
    return LD(np.finfo(dtype).max)


def tiny(dtype):
    return LD(np.finfo(dtype).smallest_subnormal)


def _ld(a):
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(LD)


def exact(shape):
    return np.zeros(shape, LD)


def _free_if(err, mask):
    return np.where(mask, LD(np.inf), err)


def finish(err, out, ins, errs, dtype, decided=None):
    """Apply the special-value rules to an op's raw float bound (see the module doc);
    `decided` marks elements an exact special operand determines whatever the others are."""
    err = np.where(np.isnan(err), LD(np.inf), err)
    if decided is not None:
        err = np.where(np.broadcast_to(decided, err.shape), LD(0), err)
    out_ld = _ld(out)
    inexact = np.zeros(out.shape, bool)
    for e in errs:
        inexact = inexact | np.broadcast_to(e > 0, out.shape)
    nonfinite = ~np.isfinite(out_ld)
    err = np.where(nonfinite & (err > 0), np.where(inexact, LD(np.inf), LD(0)), err)
    err = _free_if(err, (err > 0) & (np.abs(out_ld) + err >= fmax(dtype)))
    # an inexact operand may change a zero's sign or leave a denormal: never demand exactness
    return np.where(inexact & (err == 0), tiny(dtype), err)


def any_free(errs, shape):
    m = np.zeros(shape, bool)
    for e in errs:
        m = m | np.broadcast_to(np.isinf(e), shape)
    return m


def int_like(errs, shape):
    """Integer and bool results: exact unless an operand element is free."""
    return np.where(any_free(errs, shape), LD(np.inf), LD(0))


# -- elementwise -----------------------------------------------------------------------------
def _within(f, x, e):
    """Whether a piecewise-constant f is the same over [x - e, x + e]."""
    with np.errstate(all="ignore"):
        return (e == 0) | (f(x - e) == f(x + e))


def unary(op, x, ex, out):
    dt = out.dtype
    if dt.kind != "f":
        return int_like([ex], out.shape)
    xv, ao = _ld(x), np.abs(_ld(out))
    with np.errstate(all="ignore"):
        trans = K_TRANS * eps(dt) * ao + K_TRANS * tiny(dt)
        if op in ("negative", "abs"):
            err = ex.copy()
        elif op == "square":
            err = 2 * np.abs(xv) * ex + ex * ex + K_BASIC * eps(dt) * ao
        elif op == "sign":
            err = _free_if(exact(out.shape), (ex > 0) & (ex >= np.abs(xv)))
        elif op in ("floor", "ceil", "round"):
            f = {"floor": np.floor, "ceil": np.ceil, "round": np.rint}[op]
            err = _free_if(exact(out.shape), ~_within(f, xv, ex))
        elif op == "exp":
            err = ao * np.expm1(ex) + trans
        elif op in ("log", "log1p"):
            base = xv if op == "log" else xv + 1
            err = _free_if(ex / (base - ex) + trans, (ex > 0) & (base - ex <= 0))
        elif op == "sqrt":
            low = xv - ex
            err = ex / (np.sqrt(np.maximum(low, 0)) + np.sqrt(np.abs(xv)))
            err = _free_if(np.where(ex == 0, LD(0), err), (ex > 0) & (low < 0))
            err = err + K_BASIC * eps(dt) * ao
        elif op == "rsqrt":
            low = xv - ex
            err = ao * (np.sqrt(xv / low) - 1)
            err = _free_if(np.where(ex == 0, LD(0), err), (ex > 0) & (low <= 0))
            err = err + 2 * K_BASIC * eps(dt) * ao
        elif op in ("sin", "cos"):
            err = np.minimum(ex, 2) + trans
        elif op in ("tanh", "erf"):
            err = 1.13 * ex + trans
        elif op == "tan":
            slope = 1 + ao * ao
            err = _free_if(2 * ex * slope, ex * slope > 0.1) + trans
        else:
            raise KeyError(op)
    nan_in = np.isnan(xv) & (ex == 0)        # NaN in, NaN out, whatever rounding did
    return finish(err, out, [x], [ex], dt, nan_in)


def _decided(op, xv, yv, ex, ey):
    """Elements an exact NaN (any op below) or an exact inf beside a finite interval (+, -)
    determines."""
    nan = (np.isnan(xv) & (ex == 0)) | (np.isnan(yv) & (ey == 0))
    if op in ("add", "subtract"):
        with np.errstate(all="ignore"):
            fin_x, fin_y = np.abs(xv) + ex < LD(np.inf), np.abs(yv) + ey < LD(np.inf)
        nan = nan | (np.isinf(xv) & (ex == 0) & fin_y) | (np.isinf(yv) & (ey == 0) & fin_x)
    return nan


def binary(op, x, y, ex, ey, out):
    dt = out.dtype
    if dt.kind != "f" or (x.dtype.kind != "f" and op != "divide"):
        if op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal") \
                and x.dtype.kind == "f":
            return _compare(x, y, ex, ey, out)
        if op == "logical_and" or op == "logical_or":
            return _logical(op, x, y, ex, ey, out)
        return int_like([ex, ey], out.shape)
    xv, yv, ov = _ld(x), _ld(y), _ld(out)
    ax, ay, ao = np.abs(xv), np.abs(yv), np.abs(ov)
    e = eps(dt)
    with np.errstate(all="ignore"):
        if op in ("add", "subtract"):
            fin = np.isfinite(xv) & np.isfinite(yv)
            err = ex + ey + np.where(fin, K_BASIC * e * (ax + ay), LD(0))
        elif op == "multiply":
            err = ex * ay + ey * ax + ex * ey + K_BASIC * e * ao
        elif op == "divide":
            if x.dtype.kind != "f":      # integers: exact operands, one correctly rounded /
                return finish(K_BASIC * e * ao, out, [x, y], [ex, ey], dt)
            err = (ex + ao * ey) / (ay - ey) + K_BASIC * e * ao
            err = _free_if(err, (ey > 0) & (ey >= ay))
        elif op in ("floordiv", "mod"):
            err = _free_if(exact(out.shape), (ex > 0) | (ey > 0))
        elif op in ("maximum", "minimum"):
            err = np.maximum(ex, ey)
        elif op == "pow":
            pos = xv - ex > 0
            rel = np.abs(yv) * ex / np.abs(np.abs(xv) - ex) + np.abs(np.log(ax)) * ey
            err = ao * np.expm1(np.where(ex + ey > 0, rel, LD(0)))
            bad = ((ex > 0) & ~pos & (ax - ex <= 0)) | ((ey > 0) & ~pos)
            err = _free_if(err, bad) + K_TRANS * e * ao + K_TRANS * tiny(dt)
        else:
            raise KeyError(op)
    decided = _decided(op, xv, yv, ex, ey) if op not in ("pow",) else None
    return finish(err, out, [x, y], [ex, ey], dt, decided)


def _compare(x, y, ex, ey, out):
    """A comparison flips only where the operands' intervals overlap."""
    with np.errstate(all="ignore"):
        gap = np.abs(_ld(x) - _ld(y))
        tol = ex + ey
        return np.where((tol > 0) & ~(gap > tol), LD(np.inf), LD(0)) + exact(out.shape)


def _logical(op, x, y, ex, ey, out):
    """and/or: a definite False (True) operand decides the result whatever the other is."""
    shape = out.shape
    fx, fy = np.broadcast_to(np.isinf(ex), shape), np.broadcast_to(np.isinf(ey), shape)
    xv, yv = np.broadcast_to(x, shape), np.broadcast_to(y, shape)
    decide = (lambda v: ~v) if op == "logical_and" else (lambda v: v)
    free = (fx & ~(~fy & decide(yv))) | (fy & ~(~fx & decide(xv)))
    return np.where(free, LD(np.inf), LD(0))


def where(c, x, y, ec, ex, ey, out):
    shape = out.shape
    cb = np.broadcast_to(c, shape)
    err = np.where(cb, np.broadcast_to(ex, shape), np.broadcast_to(ey, shape))
    return np.where(np.broadcast_to(np.isinf(ec), shape), LD(np.inf), err)


def cast(x, ex, out):
    src, dst = x.dtype, out.dtype
    if src.kind != "f":
        return int_like([ex], out.shape)
    xv = _ld(x)
    if dst.kind == "f":
        narrowing = dst.itemsize < src.itemsize    # exact operands round the same way
        err = ex + np.where((ex > 0) & narrowing, eps(dst) * np.abs(_ld(out)), LD(0))
        return finish(err, out, [x], [ex], dst)
    if dst.kind == "b":
        return _free_if(exact(out.shape), (ex > 0) & (ex >= np.abs(xv)))
    info = np.iinfo(dst)
    with np.errstate(all="ignore"):
        ok = _within(np.trunc, xv, ex) & ((ex == 0) | ((xv - ex > info.min - 1)
                                                        & (xv + ex < LD(info.max) + 1)))
    return _free_if(exact(out.shape), ~ok)


# -- reductions, softmax, matmul -------------------------------------------------------------
def _slices(a, axes):
    """`a` with the reduced axes moved last and merged: shape (outer..., n)."""
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = np.transpose(a, rest + list(axes))
    n = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    return moved.reshape(moved.shape[:len(rest)] + (n,))


def _shaped(flat, out_shape):
    return np.asarray(flat, LD).reshape(out_shape)


def reduce(op, x, ex, axes, out):
    """Bound of reduce_* over `axes` (sorted; keepdims only changes the output's shape)."""
    xs, es = _slices(x, axes), _slices(np.broadcast_to(ex, x.shape), axes)
    free = np.isinf(es).any(-1)
    dt = out.dtype
    if dt.kind != "f":
        if op in ("reduce_any", "reduce_all"):    # a definite True (False) decides any (all)
            decide = xs if op == "reduce_any" else ~xs
            free = free & ~(decide & ~np.isinf(es)).any(-1)
        return _shaped(np.where(free, LD(np.inf), LD(0)), out.shape)
    xv = _ld(xs)
    n = xv.shape[-1]
    fin = np.isfinite(xv)
    absx = np.where(fin, np.abs(xv), LD(0))
    e = eps(dt)
    with np.errstate(all="ignore"):
        if op in ("reduce_sum", "reduce_mean"):
            s = absx.sum(-1)
            err = es.sum(-1) + 2 * n * e * s
            overflow = (s + es.sum(-1)) * (1 + 2 * n * e) >= fmax(dt)
            special = ~fin.all(-1)
            err = np.where(special, LD(0), err)
            if op == "reduce_mean":
                err = err / max(n, 1) + K_BASIC * e * np.abs(_ld(out).reshape(err.shape))
            err = np.where(overflow, LD(np.inf), err)
        elif op == "reduce_prod":
            nz = fin & (xv != 0)
            mag = np.where(nz, absx, LD(1))
            hi = np.where(mag > 1, mag, LD(1)).prod(-1)
            lo = np.where(mag < 1, mag, LD(1)).prod(-1)
            safe = (hi < fmax(dt) / 2) & (lo > LD(np.finfo(dt).tiny) * 2)
            rel = (es / np.where(nz, absx, LD(np.inf))).sum(-1)
            err = np.abs(_ld(out).reshape(rel.shape)) * (np.expm1(rel) + 2 * n * e)
            inexact_zero = ((es > 0) & (es >= absx)).any(-1)
            err = np.where(safe & ~inexact_zero, err, LD(np.inf))
            err = np.where(safe & ~fin.all(-1), LD(0), err)
        elif op in ("reduce_max", "reduce_min"):
            err = es.max(-1, initial=LD(0))
            zeros = xv == 0
            both = (zeros & np.signbit(xs)).any(-1) & (zeros & ~np.signbit(xs)).any(-1)
            err = np.where(both & (err == 0) & (_ld(out).reshape(err.shape) == 0),
                           tiny(dt), err)       # +-0 tie: either zero is the extremum
        elif op == "reduce_logsumexp":
            err = es.max(-1, initial=LD(0)) + K_TRANS * (n + 2) * e
            err = err + K_TRANS * e * np.abs(_ld(out).reshape(err.shape))
        else:
            raise KeyError(op)
    err = np.where(free, LD(np.inf), err)
    flat_out = np.asarray(out).reshape(err.shape)
    inexact = np.where((es > 0).any(-1), LD(1), LD(0))
    return _shaped(finish(err, flat_out, [flat_out], [inexact], dt), out.shape)


def softmax(x, ex, axis, out):
    """exp(x_i)/sum exp(x_j): each x within d moves each output by a factor within e^(+-2d)."""
    xm, em = np.moveaxis(x, axis, -1), np.moveaxis(np.broadcast_to(ex, x.shape), axis, -1)
    om = np.moveaxis(out, axis, -1)
    n = xm.shape[-1]
    d = em.max(-1, keepdims=True, initial=LD(0))
    dt = out.dtype
    y = np.abs(_ld(om))
    with np.errstate(all="ignore"):
        err = y * (np.expm1(2 * d) + (2 * K_TRANS + 2 * n + 4) * eps(dt)) + K_TRANS * tiny(dt)
    err = np.where(np.isinf(d), LD(np.inf), err)
    row_inexact = np.broadcast_to(d > 0, om.shape)
    # a row with NaN or +inf gives NaN throughout (finish: exact when the row is); -inf entries
    # give exact zeros beside finite values that round as usual
    return np.moveaxis(finish(err, om, [om], [np.where(row_inexact, LD(1), LD(0))], dt), -1, axis)


def matmul(a, b, ea, eb, out):
    """sum_k a_ik b_kj: 2(K+2) ulps of sum_k |a_ik b_kj|, plus the operands' errors."""
    dt = out.dtype
    shape = out.shape
    ea, eb = np.broadcast_to(ea, a.shape), np.broadcast_to(eb, b.shape)
    fa, fb = np.isinf(ea).astype(LD), np.isinf(eb).astype(LD)
    ones_b, ones_a = np.ones(b.shape, LD), np.ones(a.shape, LD)
    free = (np.matmul(fa, ones_b) + np.matmul(ones_a, fb)) > 0
    if dt.kind != "f":
        return np.where(free, LD(np.inf), LD(0)) + exact(shape)
    av, bv = _ld(a), _ld(b)
    nfa = (~np.isfinite(av)).astype(LD)
    nfb = (~np.isfinite(bv)).astype(LD)
    special = (np.matmul(nfa, ones_b) + np.matmul(ones_a, nfb)) > 0
    A = np.where(np.isfinite(av), np.abs(av), LD(0))
    B = np.where(np.isfinite(bv), np.abs(bv), LD(0))
    ea0, eb0 = np.where(np.isinf(ea), LD(0), ea), np.where(np.isinf(eb), LD(0), eb)
    k = a.shape[-1]
    e = eps(dt)
    with np.errstate(all="ignore"):
        s = np.matmul(A, B)
        err = np.matmul(ea0, B) + np.matmul(A, eb0) + np.matmul(ea0, eb0) \
            + 2 * (k + 2) * e * s
        overflow = s * (1 + 2 * (k + 2) * e) >= fmax(dt)
    inexact = (np.matmul((ea > 0).astype(LD), ones_b) + np.matmul(ones_a, (eb > 0).astype(LD))) > 0
    err = np.where(special, np.where(inexact, LD(np.inf), LD(0)), err)
    err = np.where(overflow | free, LD(np.inf), err)
    return finish(err, out, [out], [np.where(inexact, LD(1), LD(0))], dt)
