"""Differential fuzzer of the native kernel path on training-step programs (generator and
child runner: tests/reliability/fuzz_tape.py). Each program runs eagerly, on the numpy
backend and on numba with kernels forced, in a child process under a timeout, so an LLVM
compile hang is reported as `hang`, not a stall.

    python tools/fuzz_kernels.py --seeds 0:300 --timeout 60 [--log run.jsonl]
    python tools/fuzz_kernels.py --seeds 1118,1140 --timeout 60   # some seeds again
    python tools/fuzz_kernels.py --show 17                  # its standalone reproducer
    python tools/fuzz_kernels.py --shrink 17 --timeout 30 --out /tmp/repro.py

--shrink reduces a program to a small one that fails the same way (hang, or a mismatch on
the same backends): it drops outputs, gradients and statements, bypasses statements by one
of their operands and shrinks the dims n, k, m; a shrunk `hang` is a program that did not
return within --timeout (check its time with a longer one: it may be a slow compile).
Exit status 1 when any program failed (hang, mismatch, crash, or slow past --slow).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.reliability.fuzz_tape import generate, live, run_specs, script  # noqa: E402


def seeds_of(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition(":")
        out += list(range(int(a), int(b))) if b else [int(a)]
    return out


def verdict(res):
    """What a shrink must keep: the status, and for a mismatch which backends disagree."""
    if res["status"] != "mismatch":
        return res["status"]
    return "mismatch:" + ",".join(b for b in ("numpy", "numba") if res.get(b) != "ok")


def candidates(spec):
    """Smaller variants of `spec`, most promising first."""
    stmts, _ = live(spec)
    spec = dict(spec, stmts=stmts)
    outs = spec["outputs"]
    for i in range(len(outs)):
        if len(outs) > 1:
            yield dict(spec, outputs=outs[:i] + outs[i + 1:])
    if spec["loss"]:
        yield dict(spec, loss=None)
    for name, shape, var in spec["inputs"]:     # a Variable as a plain input: fewer grads
        if var:
            yield dict(spec, inputs=[[n, s, False if n == name else v]
                                     for n, s, v in spec["inputs"]])
    shapes = {n: tuple(s) for n, s, _ in spec["inputs"]}
    shapes.update({n: tuple(s) for n, _, _, s in stmts})
    for j, (name, fmt, args, shape) in enumerate(stmts):
        for a in dict.fromkeys(args):           # bypass: uses of `name` read operand `a`
            if a in shapes and shapes[a] == tuple(shape) and a != name:
                yield _renamed(spec, j, name, a)
    for d in ("n", "k", "m"):
        for v in (1, 2, 3):
            if v < spec["dims"][d]:
                yield dict(spec, dims=dict(spec["dims"], **{d: v}))


def _renamed(spec, j, old, new):
    ren = lambda x: new if x == old else x   # noqa: E731
    stmts = [[n, f, [ren(a) for a in args], s] for n, f, args, s in spec["stmts"]
             if n != old]
    loss = spec["loss"]
    if loss == old:
        return dict(spec, stmts=[], outputs=[])     # the loss must stay a statement
    return dict(spec, stmts=stmts, outputs=list(dict.fromkeys(map(ren, spec["outputs"]))))


def shrink(spec, timeout, log=print):
    want = verdict(run_specs([spec], timeout)[0])
    log(f"seed {spec['seed']}: {want}")
    if want == "ok":
        return spec, want
    progress = True
    while progress:
        progress = False
        for cand in candidates(spec):
            if not cand["outputs"] or (cand["loss"] and cand["loss"] not in
                                       [s[0] for s in cand["stmts"]]):
                continue
            res = run_specs([cand], timeout)[0]
            if verdict(res) == want:
                spec, progress = dict(cand, stmts=live(cand)[0]), True
                log(f"  -> {len(spec['stmts'])} stmts, dims {spec['dims']}, "
                    f"{len(spec['outputs'])} outputs, loss {spec['loss']}")
                break
    return spec, want


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:50", help="A:B, or a list: 1,5,10:20")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per program")
    ap.add_argument("--slow", type=float, default=15,
                    help="report a program whose numba call took longer (s) as `slow` (a "
                         "compile blowup of the hang class: a tiny one compiles in ~1-3 s)")
    ap.add_argument("--log", help="append one JSON line per program")
    ap.add_argument("--show", type=int, help="print the reproducer of one seed")
    ap.add_argument("--shrink", type=int, help="shrink one failing seed")
    ap.add_argument("--out", help="--shrink: write the reproducer here")
    a = ap.parse_args()
    if a.show is not None:
        print(script(generate(a.show)))
        return 0
    if a.shrink is not None:
        spec, want = shrink(generate(a.shrink), a.timeout)
        text = script(spec, f"fuzz_kernels seed {a.shrink} shrunk: {want}")
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        print(text)
        print(json.dumps(spec))
        return 0
    counts, failed, t0 = {}, [], time.time()

    def report(res):
        if res["status"] == "ok" and res.get("numba_s", 0) > a.slow:
            res["status"] = "slow"
        counts[res["status"]] = counts.get(res["status"], 0) + 1
        if res["status"] != "ok":
            failed.append(res["seed"])
            print(json.dumps(res), flush=True)
        if a.log:
            with open(a.log, "a") as f:
                print(json.dumps(res), file=f)
    seeds = seeds_of(a.seeds)
    run_specs([generate(s) for s in seeds], a.timeout, report)
    print(f"{len(seeds)} programs in {time.time() - t0:.0f} s: {counts}; failing seeds "
          f"{failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
