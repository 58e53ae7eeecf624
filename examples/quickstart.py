"""graphc in one screen: trace a function once, inspect its graph, and time it against eager."""
import time

import numpy as np

import graphc as gc


@gc.function
def gelu_mlp_layer(x, w, b):
    """One dense layer with a tanh-approximated GELU, written as plain Python on tensors."""
    h = x @ w + b
    return 0.5 * h * (1.0 + gc.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))


def median_time(fn, *args, repeat=50):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    rng = np.random.default_rng(0)
    x = gc.constant(rng.standard_normal((256, 128), dtype=np.float32))
    w = gc.constant(rng.standard_normal((128, 64), dtype=np.float32) * 0.1)
    b = gc.constant(np.zeros(64, np.float32))

    y = gelu_mlp_layer(x, w, b)                       # first call traces
    gelu_mlp_layer(x, w, b)                           # same signature: cached graph
    print(f"output: shape={y.shape} dtype={y.dtype.name} mean={float(np.mean(y.numpy())):.5f}")
    print(f"traces after 2 calls with one signature: {gelu_mlp_layer.tracing_count}")
    gelu_mlp_layer(gc.constant(np.ones((8, 128), np.float32)), w, b)
    print(f"traces after a call with a new batch size: {gelu_mlp_layer.tracing_count}")

    print("\nThe traced graph:")
    print(gelu_mlp_layer.concrete_functions()[0].graph)

    eager = median_time(gelu_mlp_layer.python_function, x, w, b)
    compiled = median_time(gelu_mlp_layer, x, w, b)
    ref = gelu_mlp_layer.python_function(x, w, b).numpy()
    np.testing.assert_allclose(gelu_mlp_layer(x, w, b).numpy(), ref, rtol=1e-5, atol=1e-6)
    print(f"\nmedian per call: eager {eager * 1e6:.1f} us, gc.function {compiled * 1e6:.1f} us "
          f"({eager / compiled:.2f}x), results agree")

    add = gc.function(lambda a, c: a + c)
    s1, s2 = gc.constant(1.0), gc.constant(2.0)
    add(s1, s2)
    print(f"cached call of a + c on scalars: {median_time(add, s1, s2, repeat=2000) * 1e6:.2f} us")


if __name__ == "__main__":
    main()
