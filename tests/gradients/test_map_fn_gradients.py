"""Gradients through gc.map_fn / scan / foldl / foldr: eagerly, compiled (numpy backend,
backend="auto" with kernels forced, and with a None first dim), against TF 2.21's values
(tf.GradientTape through tf.map_fn etc. on the same float64 inputs, written as literals)
and against finite differences."""
import numpy as np
import pytest

import graphc as gc
from grad_check import check_gradients

X = [[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]]
W = [1.5, -0.5]
A0 = [0.1, 0.2]


def case_map(x, w):
    out = gc.map_fn(lambda r: gc.sin(r) * w, x)
    return gc.reduce_sum(out * out)


def case_map_nest(x, w):
    out = gc.map_fn(lambda t: (gc.reduce_sum(t[0] * t[1]), t[0] * 2.0),
                    (x, gc.tile(w[None], [3, 1])), fn_output_signature=(gc.float64, gc.float64))
    return gc.reduce_sum(out[0] ** 2) + gc.reduce_sum(gc.exp(out[1]))


def case_scan(x, a0):
    out = gc.scan(lambda a, e: a * e + gc.tanh(a), x, initializer=a0)
    return gc.reduce_sum(out * gc.constant([[1.0], [2.0], [3.0]], gc.float64))


def case_scan_reverse(x, a0):
    out = gc.scan(lambda a, e: a * gc.cos(e) + a0, x, reverse=True)
    return gc.reduce_sum(out ** 2)


def case_foldl(x, a0):
    return gc.reduce_sum(gc.foldl(lambda a, e: gc.sin(a) * e + a0, x, initializer=a0))


def case_foldr(x, a0):
    return gc.reduce_sum(gc.foldr(lambda a, e: gc.sin(a) * e + a0, x) ** 2)


# TF 2.21: (value, d/dx, d/d(second argument)), eager and tf.function alike
TF = {
    case_map: (3.8639992239008922,
               [[1.8933097158177672, -0.22732435670642046],
                [-1.7028056144428385, 0.11985638465105075],
                [-2.2443637198591224, 0.0352800020149668]],
               [4.563906169991654, -1.7642783856286075]),
    case_map_nest: (92.75290549887612,
                    [[9.186563656918091, -0.9793294335267746],
                     [117.82130006628847, 0.4224425414002564],
                     [-5.17873967970314, 42.046073846375336]],
                    [15.5625, -6.6875]),
    case_scan: (1.2644060784105953,
                [[0.7612123460837679, 2.5749788382175853],
                 [0.3323192015109259, -0.02493437310837017],
                 [1.3436890828292765, -0.009842531075388062]],
                [11.342568570763175, -0.5015674723116597]),
    case_scan_reverse: (7.1244393420243775,
                        [[-0.1824262442830708, 3.042185449002041],
                         [1.1146924484785699, -1.6655912525137238],
                         [-2.1801965597794415, 7.348655963081252]],
                        [2.5578322695080713, 6.674820463207446]),
    case_foldl: (0.30731957416682254,
                 [[-0.13645610178012257, 0.07301094667470132],
                  [-0.10323045261971378, 0.0019560840179457606],
                  [0.38823127938396, 0.198995355803195]],
                 [-1.73801414641757, 2.477326178654917]),
    case_foldr: (0.19672929574927797,
                 [[0.7177583630267299, -0.20364878103150963],
                  [0.07769170894262187, 0.42120222805417146],
                  [-0.16679262380899565, 0.007467372605597969]],
                 [-0.8670653803790402, -0.046543086680555956]),
}
CASES = list(TF)


def value_and_grads(case):
    def g(x, o):
        with gc.GradientTape() as tape:
            tape.watch([x, o])
            y = case(x, o)
        return (y,) + tuple(tape.gradient(y, [x, o]))
    return g


@pytest.fixture(params=["eager", "numpy", "numpy-none", "auto"])
def mode(request):
    if request.param == "auto":
        request.getfixturevalue("numba_forced")
    return request.param


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_tf_values(case, mode):
    other = W if case in (case_map, case_map_nest) else A0
    g = value_and_grads(case)
    if mode != "eager":
        sig = None
        if mode == "numpy-none":    # the length known only at run time
            sig = [gc.TensorSpec([None, 2], gc.float64), gc.TensorSpec([2], gc.float64)]
        g = gc.function(g, backend=mode.split("-")[0], input_signature=sig)
    y, dx, do = g(gc.constant(X, gc.float64), gc.constant(other, gc.float64))
    want = TF[case]
    # TF's float64 values to 1e-13 (the order of a fused kernel's sums may differ)
    np.testing.assert_allclose(float(y), want[0], rtol=1e-13)
    np.testing.assert_allclose(dx.numpy(), want[1], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(do.numpy(), want[2], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_finite_differences(case):
    other = W if case in (case_map, case_map_nest) else A0
    check_gradients(case, [np.array(X), np.array(other)])


def test_variables_read_in_fn():
    v = gc.Variable([1.0, 2.0])

    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            s = gc.reduce_sum(gc.map_fn(lambda r: r * r * v, x))
        return s, tape.gradient(s, [x, v])
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    for g in (f, gc.function(f)):
        s, (dx, dv) = g(x)
        assert float(s) == 50.0 and dx.numpy().tolist() == [[2.0, 8.0], [6.0, 16.0]]
        assert dv.numpy().tolist() == [10.0, 20.0]


def test_back_prop_false_stops_gradients():
    # as gc.while_loop(back_prop=False) and TF's tf.function (TF's eager mode ignores it)
    def f(x):
        with gc.GradientTape(persistent=True) as t:
            t.watch(x)
            y = gc.reduce_sum(gc.map_fn(lambda r: r * r, x, back_prop=False))
            z = gc.reduce_sum(gc.scan(lambda a, r: a * r, x, back_prop=False))
            u = gc.foldl(lambda a, r: a * r, x, back_prop=False)
        return t.gradient(y, x), t.gradient(z, x), t.gradient(u, x)
    x = gc.constant([1.0, 2.0])
    assert f(x) == (None, None, None) and gc.function(f)(x) == (None, None, None)


def test_nested_map_fn():
    def f(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            s = gc.reduce_sum(gc.map_fn(lambda r: gc.map_fn(lambda e: e * e * 2.0, r), x))
        return tape.gradient(s, x)
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    assert f(x).numpy().tolist() == [[4.0, 8.0], [12.0, 16.0]]       # TF: 4x
    # compiled, a TensorArray made inside a differentiated loop and passed to a nested loop
    # is not supported by graphc's while gradient yet: a clear error, never a wrong value
    with pytest.raises(NotImplementedError, match="nested while"):
        gc.function(f)(x)
