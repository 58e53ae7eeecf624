"""Cost of gc.summary when nothing is logged, measured side by side in one process.

Rows (medians of interleaved rounds): a cached call f(x, y) = x + y before and after a
trace_on/trace_export cycle (the tracer swaps Function.__call__ only while on: the figures
should match); an eager gc.summary.scalar with no default writer; and a compiled step with
vs without a summary op, with no default writer. Usage: python benchmarks/summary_bench.py
"""
import tempfile
import timeit

import numpy as np

import graphc as gc


def _us(fn, number=20000):
    return min(timeit.repeat(fn, number=number, repeat=1)) / number * 1e6


def main(rounds=9):
    x, y = gc.constant(1.0), gc.constant(2.0)
    plain = gc.function(lambda a, b: a + b)
    before = gc.function(lambda a, b: a + b)

    @gc.function
    def with_summary(a, b):
        s = a + b
        gc.summary.scalar("s", s, step=0)
        return s

    for fn in (plain, before, with_summary):
        fn(x, y)
    w = gc.summary.create_file_writer(tempfile.mkdtemp())
    rows = {"cached call, never traced": [], "cached call, after trace_on/export": [],
            "eager summary.scalar, no writer": [], "compiled a+b": [],
            "compiled a+b + summary op, no writer": []}
    traced_once = False
    for _ in range(rounds):
        rows["cached call, never traced"].append(_us(lambda: before(x, y)))
        if not traced_once:         # one cycle, then the same function object is measured
            with w.as_default():
                gc.summary.trace_on(graph=True, profiler=True)
                plain(x, y)
                gc.summary.trace_export("bench")
            traced_once = True
        rows["cached call, after trace_on/export"].append(_us(lambda: plain(x, y)))
        rows["eager summary.scalar, no writer"].append(_us(lambda: gc.summary.scalar("s", 1.0,
                                                                                     step=0)))
        rows["compiled a+b"].append(_us(lambda: before(x, y)))
        rows["compiled a+b + summary op, no writer"].append(_us(lambda: with_summary(x, y)))
    w.close()
    for name, v in rows.items():
        print(f"  {name:<40} {np.median(v):8.3f} us (median of {rounds})")


if __name__ == "__main__":
    main()
