"""Per-call overhead of a cached gc.function: f(x, y) = x + y on two scalar tensors.

Reports medians, measured side by side in one run: numpy's own add, eager graphc, and the
compiled call on the numpy backend and on the default ("auto") backend -- positional
tensors, the fingerprint fast path -- and the same call with keyword arguments, which
takes the general path (signature keys). On the 2-core dev VM the cached call is about
2x numpy's own add of two np.float32 scalars (it was 4x before the fast path and the
straight-line interpreter; the issue 13 target is <= 1.5 us).
Usage: python benchmarks/dispatch_bench.py [--json FILE]
"""
import argparse
import json
import platform
import timeit

import numpy as np

import graphc as gc


def median_us(fn, number=20000, repeat=15):
    runs = timeit.repeat(fn, number=number, repeat=repeat)
    return float(np.median(runs)) / number * 1e6


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args(argv)

    x, y = gc.constant(1.0), gc.constant(2.0)
    xn, yn = np.float32(1.0), np.float32(2.0)
    f = gc.function(lambda a, b: a + b, backend="numpy")
    g = gc.function(lambda a, b: a + b)                  # backend="auto"
    for fn in (f, g):
        fn(x, y)
        assert float(fn(x, y)) == 3.0 and fn.tracing_count == 1
    rows = {
        "numpy add (np.float32 scalars)": median_us(lambda: np.add(xn, yn)),
        "graphc eager x + y": median_us(lambda: x + y),
        "graphc gc.function cached call": median_us(lambda: f(x, y)),
        "  same, backend='auto'": median_us(lambda: g(x, y)),
        "  same, keyword arguments": median_us(lambda: g(a=x, b=y)),
    }
    print(f"dispatch benchmark ({platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, numpy {np.__version__})")
    for name, us in rows.items():
        print(f"  {name:<34} {us:8.2f} us (median)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
