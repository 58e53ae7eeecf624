"""A converted function that calls itself by name (recursion on Python values, unrolled
while tracing, as in TF) calls what the name means where it was defined -- the gc.function
for a decorated global, the closure cell for a nested def -- not a stale raw copy."""
import numpy as np
import pytest

import graphc as gc


@gc.function
def doubled(x, n):
    if n == 0:
        return x
    return doubled(x * 2.0, n - 1)


def make_factorial():
    def fact(x, n):
        if n <= 1:
            return x
        return fact(x * float(n), n - 1)
    return fact


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_recursion_on_python_values(backend):
    f = gc.function(doubled.python_function, backend=backend)
    assert float(f(gc.constant(1.0), 3)) == 8.0
    assert float(doubled(gc.constant(1.0), 4)) == 16.0
    fact = make_factorial()
    g = gc.function(fact, backend=backend)
    np.testing.assert_allclose(g(gc.constant([1.0, 2.0]), 4).numpy(), [24.0, 48.0])
    assert fact(gc.constant(1.0), 4).numpy() == 24.0          # eager, unchanged


def test_converted_code_keeps_the_function_name():
    text = gc.autograph.to_code(doubled.python_function)
    assert text.startswith("def doubled(x, n):") and "ag__converted" not in text
    converted = gc.autograph.to_graph(doubled.python_function)
    assert converted.__name__ == "doubled" and converted.__code__.co_name == "doubled"
