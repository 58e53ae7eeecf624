"""gc.scan, gc.foldl, gc.foldr: TF 2.21's tf.scan / tf.foldl / tf.foldr semantics, eagerly
and compiled (numpy backend, and backend="auto" with kernels forced). Expected values are
TF 2.21's on the same inputs (run with /work/tfenv), written as literals."""
import numpy as np
import pytest

import graphc as gc
from graphc.runtime.graph import walk

MODES = ["eager", "numpy", "auto"]


@pytest.fixture(params=MODES)
def run(request):
    """run(fn, *args): fn eagerly, or compiled on the mode's backend (auto: kernels forced)."""
    mode = request.param
    if mode == "auto":
        request.getfixturevalue("numba_forced")

    def call(fn, *args):
        f = fn if mode == "eager" else gc.function(fn, backend=mode)
        return f(*args)
    return call


def values(x):
    if isinstance(x, (list, tuple)):
        return [values(v) for v in x]
    return (x.numpy().tolist(), x.dtype.name, tuple(x.shape))


I3 = [1, 2, 3]


def test_scan(run):
    x = gc.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert values(run(lambda x: gc.scan(lambda a, e: a + e, x), x)) == (
        [[1.0, 2.0], [4.0, 6.0], [9.0, 12.0]], "float32", (3, 2))
    i = gc.constant(I3)
    assert values(run(lambda x: gc.scan(lambda a, t: a + t, x, reverse=True), i)) == (
        [6, 5, 3], "int32", (3,))
    assert values(run(lambda x: gc.scan(lambda a, t: a * 10 + t, x, initializer=0,
                                        reverse=True), i)) == ([321, 32, 3], "int32", (3,))
    assert values(run(lambda x: gc.scan(lambda a, t: a + t, x, initializer=0), i)) == (
        [1, 3, 6], "int32", (3,))
    assert values(run(lambda x: gc.scan(lambda a, t: a + gc.cast(t, gc.float32), x,
                                        initializer=0.0), i)) == ([1.0, 3.0, 6.0], "float32", (3,))


def test_scan_nests(run):
    out = run(lambda a, b: gc.scan(lambda a, t: (a[0] + t[0], a[1] * t[1]), (a, b)),
              gc.constant(I3), gc.constant([1.0, 2.0, 3.0]))
    assert values(out) == [([1, 3, 6], "int32", (3,)), ([1.0, 2.0, 6.0], "float32", (3,))]
    fib = run(lambda x: gc.scan(lambda a, _: (a[1], a[0] + a[1]), x,
                                (gc.constant(0), gc.constant(1))), gc.constant([1, 2, 3, 4, 5, 6]))
    assert isinstance(fib, tuple)                     # the initializer's structure (TF's doc)
    assert values(fib) == [([1, 1, 2, 3, 5, 8], "int32", (6,)),
                           ([1, 2, 3, 5, 8, 13], "int32", (6,))]
    d = run(lambda x: gc.scan(lambda a, t: {"s": a["s"] + t, "n": a["n"] + 1}, x,
                              {"s": 0.0, "n": 0}), gc.constant([0.5, 1.5]))
    assert values([d["s"], d["n"]]) == [([0.5, 2.0], "float32", (2,)), ([1, 2], "int32", (2,))]


def test_folds(run):
    i = gc.constant(I3)
    assert values(run(lambda x: gc.foldl(lambda a, t: a * 10 + t, x), i)) == (123, "int32", ())
    assert values(run(lambda x: gc.foldr(lambda a, t: a * 10 + t, x), i)) == (321, "int32", ())
    assert values(run(lambda x: gc.foldr(lambda a, t: a * 10 + t, x, initializer=0), i)) == (
        321, "int32", ())
    assert values(run(lambda x: gc.foldl(lambda a, t: a * 10 + t, x, initializer=0), i)) == (
        123, "int32", ())
    assert values(run(lambda a, b: gc.foldl(lambda a, t: a + t[0] * t[1], (a, b), initializer=0),
                      i, gc.constant([4, 5, 6]))) == (32, "int32", ())
    assert values(run(lambda a, b: gc.foldl(lambda a, t: (a[0] + t[0], a[1] + t[1]), (a, b)),
                      i, gc.constant([4, 5, 6]))) == [(6, "int32", ()), (15, "int32", ())]
    assert values(run(lambda x: gc.foldl(lambda a, t: a + t, x), np.array([1, 2, 3]))) == (
        6, "int64", ())                               # numpy int64 elems stay int64 (TF)
    # fold accumulators of another shape than an element
    assert values(run(lambda x: gc.foldl(lambda a, t: a + gc.stack([t, t * t]), x,
                                         initializer=gc.zeros([2])), gc.constant([1.0, 2.0]))) \
        == ([3.0, 5.0], "float32", (2,))


def test_empty_elems(run):
    z = gc.zeros([0, 3])
    assert values(run(lambda x: gc.scan(lambda a, e: a + e, x, initializer=gc.zeros([3])), z)) \
        == ([], "float32", (0, 3))                   # TF: shape (0, 3)
    assert values(run(lambda x: gc.scan(lambda a, e: a + gc.reduce_sum(e), x, initializer=0.0),
                      z)) == ([], "float32", (0,))
    for fold in (gc.foldl, gc.foldr):                 # TF: the initializer
        assert values(run(lambda x: fold(lambda a, e: a + e, x, initializer=gc.ones([3])), z)) \
            == ([1.0, 1.0, 1.0], "float32", (3,))
    # no initializer: TF raises OutOfRangeError eagerly, InvalidArgumentError in a graph
    for f in (gc.scan, gc.foldl, gc.foldr):
        with pytest.raises(gc.errors.InvalidArgumentError, match="empty.*initializer"):
            run(lambda x: f(lambda a, e: a + e, x), z)


def test_empty_elems_with_a_run_time_length():
    @gc.function(input_signature=[gc.TensorSpec([None, 3])])
    def f(x):
        return gc.scan(lambda a, e: a + e, x), gc.foldr(lambda a, e: a * e, x)
    s, p = f(gc.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert s.numpy().tolist() == [[1.0, 2.0, 3.0], [5.0, 7.0, 9.0]]
    assert p.numpy().tolist() == [4.0, 10.0, 18.0]
    with pytest.raises(gc.errors.InvalidArgumentError, match="empty.*initializer"):
        f(gc.zeros([0, 3]))
    assert f.tracing_count == 1


def test_errors(run):
    ints = gc.constant([1, 2])
    with pytest.raises(ValueError, match="same first dimension"):   # TF: ValueError
        run(lambda a, b: gc.scan(lambda a, t: a, (a, b)), ints, gc.constant(I3))
    with pytest.raises(ValueError, match="same first dimension"):
        run(lambda a, b: gc.foldl(lambda a, t: a, (a, b), initializer=0), ints, gc.constant(I3))
    with pytest.raises(ValueError, match="rank >= 1"):            # TF: IndexError
        run(lambda x: gc.foldl(lambda a, t: a, x, initializer=0), gc.constant(2))
    with pytest.raises(ValueError, match="structure"):            # TF: ValueError
        run(lambda x: gc.scan(lambda a, t: (a, a), x), ints)
    with pytest.raises(ValueError, match="structure"):
        run(lambda x: gc.foldl(lambda a, t: (a, a), x), ints)
    with pytest.raises(TypeError, match="structure"):             # TF: TypeError
        run(lambda x: gc.scan(lambda a, t: [a[0] + t, a[1]], x, initializer=(0, 0)), ints)
    # TF: InvalidArgumentError eagerly / TypeError in a graph for a dtype change
    for f in (gc.scan, gc.foldl, gc.foldr):
        with pytest.raises(gc.errors.DtypeChangeError, match="float32.*int32"):
            run(lambda x: f(lambda a, t: gc.cast(a, gc.float32), x), ints)
    with pytest.raises(TypeError):                                # TF: InvalidArgumentError
        run(lambda x: gc.scan(lambda a, t: a + gc.cast(t, gc.float32), x, initializer=0), ints)
    with pytest.raises(ValueError, match=r"shape \[2\].*\[1\]"):  # TF: ValueError
        run(lambda x: gc.scan(lambda a, t: gc.concat([a, [t]], 0), x,
                              initializer=gc.constant([0])), ints)
    with pytest.raises(ValueError, match=r"shape \[2\].*\[1\]"):  # TF graph: ValueError
        run(lambda x: gc.foldl(lambda a, t: gc.concat([a, [t]], 0), x,
                               initializer=gc.constant([0])), ints)
    with pytest.raises(TypeError, match="callable"):
        run(lambda x: gc.foldr(3, x), ints)


def accumulate(a, x):
    if x > 2.0:          # a tensor condition: AutoGraph converts fn from converted code
        return a + x * 10.0
    return a + x


def test_traced_once_one_loop_and_converted_fn():
    @gc.function(input_signature=[gc.TensorSpec([None])])
    def f(x):
        return gc.scan(accumulate, x), gc.foldl(accumulate, x), gc.foldr(accumulate, x)
    for xs in ([1.0, 3.0], [3.0, 1.0, 0.5, 4.0]):
        s, fl, fr = f(gc.constant(xs))
        acc, want = xs[0], [xs[0]]
        for v in xs[1:]:
            acc = acc + (v * 10 if v > 2 else v)
            want.append(acc)
        assert s.numpy().tolist() == want and float(fl) == want[-1]
    assert float(fr) == 4.0 + 0.5 + 1.0 + 30.0       # from the last element backward
    assert f.tracing_count == 1
    types = [op.type for op in walk(f.concrete_functions()[0].graph)]
    assert types.count("while") == 3 and types.count("cond") == 3     # fn traced once each
