"""The workloads written by hand as numba kernels: what an expert would write without graphc.

Each `KERNELS[name](case)` returns a zero-argument callable producing the list of the
workload's outputs (for the MLP step: the loss, then the parameters it updated in place).
Array kernels are what a numba user writes for speed: `parallel=True` with `prange` over
elements or rows, and the fast-math flags that only change rounding (`FASTMATH`). The two
loops over a few thousand scalars stay serial, as a user would leave them (a parallel
region costs more than the loop). Kernels keep float32 arithmetic where graphc does, so
results agree within rounding; they are cached on disk by numba (cache=True), so only the
first run pays their compile time. Without Intel's SVML numba calls scalar libm for
exp/sin/tanh (tanhf alone ~30 ns per float32 here), so the elementwise chain stays slower
than numpy's SIMD ufuncs even on every core: that is what a numba user gets.
"""
import math

import numba
import numpy as np
from numba import prange

_F = np.float32

# fastmath=True minus what changes more than rounding: "nnan"/"ninf" (NaN and inf inputs
# would give garbage), "nsz" (-0.0 becomes 0.0) and "afn" (approximate exp/sin/tanh).
# Reassociation is what lets LLVM vectorize the reductions, as fastmath=True would.
FASTMATH = {"arcp", "contract", "reassoc"}


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def _elementwise(x):
    out = np.empty_like(x)
    for i in prange(x.size):
        v = x[i]
        out[i] = math.tanh(_F(1.5) * v + _F(0.5)) * math.exp(-v * v) + _F(0.5) * math.sin(v)
    return out


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def _softmax(x):
    out = np.empty_like(x)
    for r in prange(x.shape[0]):
        m = x[r, 0]
        for c in range(1, x.shape[1]):
            m = max(m, x[r, c])
        total = _F(0.0)
        for c in range(x.shape[1]):
            e = math.exp(x[r, c] - m)
            out[r, c] = e
            total += e
        inv = _F(1.0) / total
        for c in range(x.shape[1]):
            out[r, c] *= inv
    return out


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def _layernorm(x, gamma, beta):
    out = np.empty_like(x)
    cols = x.shape[1]
    for r in prange(x.shape[0]):
        total = _F(0.0)
        for c in range(cols):
            total += x[r, c]
        mean = total / _F(cols)
        sq = _F(0.0)
        for c in range(cols):
            d = x[r, c] - mean
            sq += d * d
        scale = _F(1.0) / math.sqrt(sq / _F(cols) + _F(1e-5))
        for c in range(cols):
            out[r, c] = (x[r, c] - mean) * scale * gamma[c] + beta[c]
    return out


@numba.njit(cache=True)
def _scalar_loop(n):
    # machine-word integers, as one would write it (equal to int32 while i * i fits);
    # serial: the workload measures a scalar loop, 20,000 iterations take ~20 us
    s = 0
    i = 0
    while i < n:
        s += i * i % 7
        i += 1
    return np.int32(s)


@numba.njit(cache=True, fastmath=FASTMATH)
def _branchy_loop(x):
    # serial (10,000 elements: a parallel region's start-up would dominate); reassoc lets
    # LLVM vectorize the branchy sum
    acc = _F(0.0)
    for i in range(x.size):
        v = x[i]
        if v > 0:
            acc = _F(acc + v * v)
        else:
            acc = _F(acc - v)
    return acc


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def _xent_grad(logits, labels, dlogits):
    """Mean sparse softmax cross-entropy; writes d loss / d logits into `dlogits`."""
    batch, classes = logits.shape
    loss = 0.0
    for r in prange(batch):
        m = logits[r, 0]
        for c in range(1, classes):
            m = max(m, logits[r, c])
        total = _F(0.0)
        for c in range(classes):
            e = math.exp(logits[r, c] - m)
            dlogits[r, c] = e
            total += e
        loss += math.log(total) + m - logits[r, labels[r]]
        scale = _F(1.0) / (total * batch)
        for c in range(classes):
            dlogits[r, c] *= scale
        dlogits[r, labels[r]] -= _F(1.0) / batch
    return np.float32(loss / batch)


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def _relu_bias(h_pre, bias):
    """h_pre += bias, then relu, in place."""
    for r in prange(h_pre.shape[0]):
        for c in range(h_pre.shape[1]):
            h_pre[r, c] = max(h_pre[r, c] + bias[c], _F(0.0))


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH)
def _sgd_bias(bias, grad_rows, lr, mask):
    """bias -= lr * column sums of grad_rows (times mask > 0 when given), in place."""
    for c in prange(bias.shape[0]):
        total = _F(0.0)
        for r in range(grad_rows.shape[0]):
            if mask.shape[0] == 0 or mask[r, c] > 0:
                total += grad_rows[r, c]
            elif mask.shape[0] != 0:
                grad_rows[r, c] = _F(0.0)
        bias[c] -= lr * total


def _mlp_step(x, labels, w1, b1, w2, b2, lr):
    """One SGD step: BLAS matmuls (as a hand-tuner would use) around fused numba loops."""
    h = x @ w1
    _relu_bias(h, b1)
    logits = h @ w2 + b2
    dlogits = np.empty_like(logits)
    loss = _xent_grad(logits, labels, dlogits)
    dh = dlogits @ w2.T
    _sgd_bias(b2, dlogits, lr, _NO_MASK)
    w2 -= lr * (h.T @ dlogits)
    _sgd_bias(b1, dh, lr, h)          # relu'(h_pre) is h > 0; zeroes dh where it is not
    w1 -= lr * (x.T @ dh)
    return loss


_NO_MASK = np.zeros((0, 0), np.float32)


@numba.njit(cache=True)
def _add(x, y):
    return x + y


def _mlp(case):
    x, labels = case.arrays
    params = [case.init[k].copy() for k in ("w1", "b1", "w2", "b2")]
    lr = _F(case.learning_rate)
    return lambda: [_mlp_step(x, labels, *params, lr)] + params


def _unary(kernel):
    return lambda case: (lambda: [kernel(*case.arrays)])


KERNELS = {
    "elementwise": _unary(_elementwise),
    "softmax": _unary(_softmax),
    "layernorm": _unary(_layernorm),
    "scalar_loop": _unary(_scalar_loop),
    "branchy_loop": _unary(_branchy_loop),
    "mlp_train_step": _mlp,
    "dispatch": _unary(_add),
}
