"""Every registered op survives serialize -> JSON text -> deserialize: the rebuilt graph
prints the same and computes the same bits as the original on the numpy and numba
backends (NaN, inf and -0.0 included)."""
import sys

import numpy as np
import pytest

import graphc as gc
from graphc.runtime.graph import walk
from graphc.runtime.registry import REGISTRY
from .roundtrip import assert_same, roundtrip

NAN_INF = np.array([[1.5, -0.0, np.nan], [np.inf, -np.inf, 2.25]], np.float32)
INTS = np.array([[7, -3, 0], [-8, 5, 2**31 - 1]], np.int32)


@gc.custom_gradient
def _doubled_gradient(x):      # saved as a custom_gradient_output identity
    return x * 1.0, lambda dy: dy * 2.0


def elementwise(x, k):
    y = gc.abs(x) + gc.ceil(x) - gc.floor(x) * gc.round(x)
    y = y + gc.cos(x) * gc.sin(x) / gc.tan(x) + gc.exp(x) - gc.log(gc.abs(x)) + gc.erf(x)
    y = y + gc.log1p(gc.abs(x)) + gc.rsqrt(gc.abs(x)) + gc.sqrt(gc.abs(x)) + gc.square(x)
    y = gc.maximum(y, -x) + gc.minimum(y, x) + gc.sign(x) + gc.tanh(-x) + gc.pow(x, 2.0)
    y = y + gc.stop_gradient(x) + gc.negative(x) + _doubled_gradient(x)
    m = gc.logical_or(gc.logical_and(x > 0.0, x <= 2.0), gc.logical_not(x >= 1.0))
    m = gc.logical_or(m, gc.logical_and(gc.equal(x, 1.5), gc.not_equal(x, 0.0)))
    i = k // 3 + k % 5 - gc.cast(x < 1.0, gc.int32) + gc.pow(k, 2)
    i = i + (k & 6) - (k | 3) + (k ^ 5) * ~k
    m = m ^ gc.logical_xor(x > 1.0, m)
    return gc.where(m, y, -0.0), i, gc.cast(y, gc.float64) * 1e-300


def shapes(x, k):
    a = gc.reshape(x, [3, 2]) + gc.fill([3, 2], -0.0)
    b = gc.transpose(a) + gc.broadcast_to(gc.constant([1.0, 2.0, 3.0]), [2, 3])
    c = gc.concat([gc.expand_dims(b, 0), gc.squeeze(gc.expand_dims(b, 2), 2)[None]], axis=0)
    u = gc.unstack(c, axis=0)
    t = gc.tile(u[0], [2, 1])
    idx = gc.argmax(x, axis=1) + gc.argmin(x, axis=0)[:1]
    g = gc.gather(t, idx) + x[..., ::-1] + x[1:, gc.shape(x)[0] - 1][:, None]
    r = gc.cast(gc.range(0, 6, 2), gc.float32) + gc.cumsum(x, axis=1, exclusive=True,
                                                          reverse=True)[0]
    r = r + gc.math.cumprod(x, axis=1, exclusive=True)[1]
    s = (gc.reduce_sum(x, axis=0) + gc.reduce_max(x, 1, keepdims=True)[0]
         + gc.reduce_min(x) + gc.reduce_prod(x, axis=[0]))
    flags = gc.cast(gc.reduce_all(x > 0.0), gc.int32) + gc.cast(gc.reduce_any(k > 0), gc.int32)
    big = gc.constant(np.arange(3000, dtype=np.float64).reshape(30, 100))   # not inline
    loss = gc.nn.sparse_softmax_cross_entropy_with_logits(gc.constant([1, 0]), x)
    return g, r, s, flags, gc.matmul(x, x, transpose_b=True), gc.reduce_sum(big), loss


def control(x, n):
    total = gc.zeros([3])
    for i in gc.range(n):
        if gc.reduce_sum(x) > 0.0:
            total = total + x[0] * gc.cast(i, gc.float32)
        else:
            total = total - x[1]
    ta = gc.TensorArray(gc.float32, size=0, dynamic_size=True)
    for i in gc.range(3):
        ta = ta.write(i, x[0] * gc.cast(i, gc.float32))
    tb = gc.TensorArray(gc.float32, size=2).unstack(x)
    return (total, gc.range(1, n, 2), ta.stack(), ta.gather([0, 2]), ta.concat(), ta.size(),
            ta.read(1), tb.read(0))


def effects(x, v):
    gc.print("x is", x, output_stream=sys.stderr)
    gc.print("sum", gc.reduce_sum(x), sep="|", end="!\n")
    assert gc.reduce_all(gc.abs(x) < 100.0), "x too large"
    gc.summary.scalar("sum", gc.reduce_sum(x), step=3, description="d")   # no writer: no-ops
    gc.summary.histogram("x", x, step=gc.constant(np.int64(4)), buckets=7)
    gc.summary.image("x", gc.reshape(x, [1, 2, 3, 1]), step=5, max_outputs=1)
    gc.summary.text("t", "*md*", step=6)
    v.assign(x[0])
    v.assign_add(gc.ones([3]))
    v.assign_sub(x[1] * 0.5)
    return (v.read_value() + gc.random.normal([3], seed=3)
            + gc.random.uniform([3], minval=-1.0, maxval=1.0)
            + gc.cast(gc.random.uniform([3], 0, 9, dtype=gc.int32), gc.float32))


def gradients(x):
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x[0, 1:] * x[1, :2]
        ta = gc.TensorArray(gc.float32, size=2)
        ta = ta.write(0, y).write(1, y * 2.0)
        z = ta.stack() + ta.read(0) + ta.read(1) + gc.reduce_sum(ta.gather([1, 0]))
        tu = gc.TensorArray(gc.float32, size=2).unstack(x * 3.0)
        z = z + tu.read(1)[1:]
        s = gc.constant(0.0)
        i = gc.constant(0)
        while i < 3:
            s = s + gc.reduce_sum(z) * gc.cast(i, gc.float32)
            i += 1
        loss = s + gc.reduce_sum(gc.tanh(x))
    with gc.GradientTape() as outer:      # relu's second derivative: the piecewise_linear ops
        outer.watch(x)
        with gc.GradientTape() as inner:
            inner.watch(x)
            r = gc.nn.relu(x - 1.0) * x
        dr = inner.gradient(r, x)
    return tape.gradient(loss, x), outer.gradient(dr, x)


def gradients_unknown_dims(x, n):
    v = gc.cast(gc.range(n), gc.float32)        # float32[?]: 1 at run time broadcasts
    v = gc.clip_by_value(v, 0.0, v + 1.0)       # a run-time shape check (check_shape)
    with gc.GradientTape() as tape:
        tape.watch(v)
        loss = gc.reduce_sum(v * x[0])          # so v's gradient sums at run time
    return tape.gradient(loss, v) * 2.0 + gc.tanh(v)      # a fused group on top


def selection(x, n):
    rows = x[: n % 2 + 1]                       # float32[?,3]: the mask's check runs at run time
    with gc.GradientTape() as tape:
        tape.watch(rows)
        kept = gc.boolean_mask(rows, gc.reduce_sum(rows, axis=1) > 0.0)
        picked = gc.gather(rows, gc.zeros_like(gc.cast(rows, gc.int32)) + [2, 0, 1],
                           batch_dims=1)
        loss = gc.reduce_sum(kept * kept) + gc.reduce_sum(picked * rows)
    return gc.where(x > 0.0), gc.exp(kept) * 2.0 - 1.0, tape.gradient(loss, rows)


def tf_ops(x, n):
    """gather_nd, scatter_nd, tensor_scatter_nd, sort/top_k, segments, ensure_shape and the
    gc.debugging checks: their attrs (None dims, strings, bools) survive the round trip."""
    rows = gc.ensure_shape(x[: n % 2 + 1], [None, 3])           # float32[?,3] stays open
    gc.debugging.assert_less(rows, 10.0, message="big")
    idx = gc.constant([[0, 1], [0, 2]])
    with gc.GradientTape() as tape:
        tape.watch(x)
        g = gc.gather_nd(gc.debugging.check_numerics(x, "x"), idx)
        s = gc.scatter_nd(idx, g, gc.shape(x))
        t = gc.tensor_scatter_nd_update(x, idx, g * 2.0)
        seg = gc.math.unsorted_segment_max(x, [1, 0], 2) + gc.math.segment_mean(x, [0, 1])
        loss = gc.reduce_sum(s * t) + gc.reduce_sum(gc.sort(x) * seg) \
            + gc.reduce_sum(gc.math.top_k(x, 2).values)
    return rows * 2.0, tape.gradient(loss, x), gc.argsort(x, axis=0, direction="DESCENDING")


X = np.array([[1.5, -0.5, 2.0], [0.25, 3.0, -1.0]], np.float32)
CASES = [
    ("tf_ops", tf_ops, lambda: (X, np.int32(1))),
    ("selection", selection, lambda: (X, np.int32(1))),
    ("elementwise", elementwise, lambda: (NAN_INF, INTS)),
    ("shapes", shapes, lambda: (X, np.array([[1, -2], [0, 3]], np.int32))),
    ("control", control, lambda: (X, np.int32(4))),
    ("control_negative", control, lambda: (-X, np.int32(2))),
    ("effects", effects, lambda: (X, None)),
    ("gradients", gradients, lambda: (X,)),
    ("gradients_unknown_dims", gradients_unknown_dims, lambda: (X, np.int32(1))),
    ("gradients_unknown_dims_3", gradients_unknown_dims, lambda: (X, np.int32(3))),
]


def _args(case_args):
    out = []
    for a in case_args:
        out.append(gc.Variable(np.zeros(3, np.float32)) if a is None else gc.constant(a))
    return out


def _call(cf, args, capsys):
    gc.random.set_seed(11)
    before = [a.numpy().copy() for a in args if type(a) is gc.Variable]
    outs = cf(*args)
    after = [a.numpy().copy() for a in args if type(a) is gc.Variable]
    for a, b in zip([a for a in args if type(a) is gc.Variable], before):
        a.assign(b)                      # the next run starts from the same state
    printed = capsys.readouterr()
    values = [t.numpy() for t in (outs if isinstance(outs, (list, tuple)) else [outs])]
    return values + after, printed


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_op_families_round_trip(name, fn, make, backend, capsys, numba_forced):
    args = _args(make())
    cf = gc.function(fn, backend=backend).get_concrete_function(*args)
    loaded = roundtrip(cf, backend)
    want, printed = _call(cf, args, capsys)
    if backend == "numba":
        with numba_forced.expect():      # kernels compile from the loaded graph
            got, printed_again = _call(loaded, args, capsys)
    else:
        got, printed_again = _call(loaded, args, capsys)
    assert_same(got, want)
    assert printed == printed_again
    if name == "effects":
        assert "x is [[" in printed.err and "sum|" in printed.out


def test_the_cases_cover_every_registered_op():
    seen = set()
    for _, fn, make in CASES:
        cf = gc.function(fn, backend="numpy").get_concrete_function(*_args(make()))
        seen.update(op.type for op in walk(cf.graph))
    # custom_gradient nodes never outlive a trace (custom_gradient_output stands for them)
    missing = sorted(set(REGISTRY) - seen - {"custom_gradient"})
    assert not missing, f"ops no round-trip case uses: {missing}"
