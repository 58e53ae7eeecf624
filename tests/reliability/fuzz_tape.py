"""Differential fuzzer of float32 training-step programs on the native kernels: random chains
of elementwise and gc.nn ops (silu, sigmoid, softplus, dropout, where, maximum, ...),
reductions (keepdims both ways, axis None/0/1/-1) and broadcasts over inputs shaped [n, 1],
[n, k], [1, k], [k] and [n], mostly under a GradientTape whose loss is differentiated w.r.t.
Variables. The class it hunts: fused groups mixing a full or row reduction with an
elementwise store over a domain with broadcast (size-1) dims, and their gradients, which have
sent LLVM into endless optimization (docs/reliability.md, seed 799) -- so every program runs
in a child process under a timeout, and a hang is a finding, not a stall.

A program is a plain dict (JSON: it crosses into the child and is shrunk by editing it):
`dims` {"n", "k", "m"}, `inputs` [[name, shape, is_variable]], `stmts` [[name, fmt, args,
shape]] (`fmt.format(*args)` is the expression), `loss` (a stmt name or None: no tape),
`outputs` (stmt or input names), `data` (the seed of the input values). Shapes are symbolic
(tuples of "n"/"k"/"m"/1) so the shrinker can shrink dims without breaking broadcasting.
The child (`child_main`) runs it eagerly, on the numpy backend and on the numba backend with
kernels forced (the parent sets GRAPHC_NUMBA_MIN_SIZE=0 GRAPHC_KERNEL_CHOICE=kernel
GRAPHC_COMPILE=sync and a private cache), with gc.random.set_seed(0) before each run so the
dropout masks are the same draws.
"""
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL, ATOL = 2e-4, 2e-5      # float32 rounding of short chains (vecmath vs numpy libm)

UNARY = ["gc.negative({0})", "gc.abs({0})", "gc.square({0})", "gc.exp({0})", "gc.tanh({0})",
         "gc.sigmoid({0})", "gc.nn.sigmoid({0})", "gc.nn.silu({0})", "gc.nn.softplus({0})",
         "gc.nn.relu({0})", "gc.nn.elu({0})", "gc.nn.gelu({0})", "gc.nn.leaky_relu({0})",
         "gc.sin({0})", "gc.cos({0})", "gc.erf({0})", "gc.log1p(gc.abs({0}))",
         "gc.sqrt(gc.square({0}) + 1.0)", "gc.clip_by_value({0}, -1.0, 1.0)", "(-{0})",
         "({0} * 0.5)", "({0} + 1.0)", "gc.stop_gradient({0})", "gc.nn.relu6({0})",
         "gc.nn.softplus(-{0})", "gc.nn.silu({0} * 3.0)", "gc.exp(-gc.square({0}))"]
BINARY = ["gc.add({0}, {1})", "gc.subtract({0}, {1})", "gc.multiply({0}, {1})",
          "({0} * {1})", "({0} - {1})", "gc.divide({0}, 1.0 + gc.square({1}))",
          "gc.maximum({0}, {1})", "gc.minimum({0}, {1})"]
COMPARE = ["gc.greater({0}, {1})", "gc.less({0}, {1})", "({0} >= {1})"]
REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_logsumexp"]
SHAPES = [("n", 1), ("n", 1), ("n", "k"), (1, "k"), ("k",), ("n",)]


def broadcast(*shapes):
    """Symbolic broadcast: 1 stretches, equal symbols agree, distinct ones do not."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.pool, self.stmts, self.seeds = [], [], 0

    def pick(self, pred=lambda s: True):
        cands = [(n, s) for n, s in self.pool if pred(s)]
        if not cands:
            return None
        return self.r.choices(cands, [1 + i for i in range(len(cands))])[0]   # later likelier

    def emit(self, fmt, args, shape, pool=True):
        name = f"v{len(self.stmts)}"
        self.stmts.append([name, fmt, list(args), list(shape)])
        if pool:        # bool conditions and labels are no float operands
            self.pool.append((name, tuple(shape)))
        return name

    def partner(self, s):
        b = self.pick(lambda t: broadcast(s, t) is not None)
        return b if b and self.r.random() < 0.8 else ("0.5", ())

    def step(self):
        r = self.r
        kind = r.choices(["unary", "binary", "where", "reduce", "center", "bcast", "dropout",
                          "softmax", "xent", "squeeze", "matmul"],
                         [24, 22, 8, 16, 7, 4, 6, 3, 3, 3, 3])[0]
        a, sa = self.pick()
        if kind == "unary":
            self.emit(r.choice(UNARY), [a], sa)
        elif kind in ("binary", "where"):
            b, sb = self.partner(sa)
            if r.random() < 0.3:
                (a, sa), (b, sb) = (b, sb), (a, sa)
            if kind == "binary":
                return self.emit(r.choice(BINARY), [a, b], broadcast(sa, sb))
            c, sc = self.partner(broadcast(sa, sb))
            other = a if c[0] == "0" or r.random() < 0.5 else "0.0"
            cond = self.emit(r.choice(COMPARE), [c, other], broadcast(sc, sa), pool=False)
            self.emit("gc.where({0}, {1}, {2})", [cond, a, b], broadcast(sa, sb, sc))
        elif kind in ("reduce", "center"):
            keep = kind == "center" or r.random() < 0.5
            axis = r.choice([None] + list(range(len(sa))) + ([-1] if sa else []))
            axes = range(len(sa)) if axis is None else [axis % len(sa)]
            shape = tuple(1 if i in axes else d for i, d in enumerate(sa)) if keep else \
                tuple(d for i, d in enumerate(sa) if i not in axes)
            op = r.choice(REDUCE[:2] if kind == "center" else REDUCE)
            fmt = f"gc.{op}({{0}}, axis={axis!r}{', keepdims=True' if keep else ''})"
            if kind == "center":
                fmt = "({0} - " + fmt + ")"
                shape = sa
            self.emit(fmt, [a], shape)
        elif kind == "bcast":
            full = broadcast(sa, ("n", "k")) or broadcast(sa, ("n",)) or broadcast(sa, ("k",))
            if full:
                self.emit(f"gc.broadcast_to({{0}}, [{', '.join(map(str, full))}])", [a], full)
        elif kind == "dropout":
            self.seeds += 1
            rate = r.choice([0.2, 0.5])
            self.emit(f"gc.nn.dropout({{0}}, rate={rate}, seed={self.seeds})", [a], sa)
        elif kind == "softmax" and sa:
            self.emit(r.choice(["gc.nn.softmax({0})", "gc.nn.log_softmax({0})"]), [a], sa)
        elif kind == "xent":
            lab = self.emit("gc.cast(gc.greater({0}, 0.0), gc.float32)", [a], sa, pool=False)
            b, sb = self.pick(lambda t: t == sa)
            self.emit("gc.nn.sigmoid_cross_entropy_with_logits(labels={0}, logits={1})",
                      [lab, b], sa)
        elif kind == "squeeze" and tuple(sa) == ("n", 1):
            self.emit("gc.squeeze({0}, 1)", [a], ("n",))
        elif kind == "squeeze" and tuple(sa) == ("n",):
            self.emit("gc.expand_dims({0}, -1)", [a], ("n", 1))
        elif kind == "matmul":
            x = self.pick(lambda t: t == ("n", "m"))
            w = self.pick(lambda t: t in (("m", 1), ("m", "k")))
            if x and w:
                self.emit("({0} @ {1})", [x[0], w[0]], ("n",) + w[1][1:])


def generate(seed):
    r = random.Random(seed)
    g = Gen(seed * 7919 + 1)
    dims = {"n": r.choice([1, 2, 3, 4, 5, 8]), "k": r.choice([1, 2, 3, 4, 7]),
            "m": r.choice([2, 3, 4])}
    inputs = []
    nx, nw = r.choice([1, 2, 2, 3]), r.choice([0, 1, 1, 2])
    matmul = r.random() < 0.35
    for i in range(nx + nw):
        var = i >= nx
        shape = r.choice(SHAPES)
        if i == 0 and r.random() < 0.5:
            shape = ("n", 1)
        if matmul and i == 0:
            shape = ("n", "m")
        if matmul and i == nx:
            shape = r.choice([("m", 1), ("m", "k")])
        inputs.append([f"w{i - nx}" if var else f"x{i}", list(shape), var])
    g.pool = [(n, tuple(s)) for n, s, _ in inputs]
    if matmul:
        x, w = inputs[0][0], inputs[nx][0] if nw else None
        if w:
            g.emit("({0} @ {1})", [x, w], ("n",) + tuple(inputs[nx][1][1:]))
    for _ in range(r.randint(2, 12)):
        g.step()
    tape = r.random() < 0.75
    last = [n for n, _ in g.pool[-4:] if n.startswith("v")] or [g.pool[-1][0]]
    loss = None
    if tape or r.random() < 0.5:
        src = r.sample(last, min(len(last), r.choice([1, 1, 2])))
        ops = [r.choice(["gc.reduce_mean({%d})", "gc.reduce_sum({%d})", "gc.nn.l2_loss({%d})"])
               % i for i in range(len(src))]
        loss = g.emit(" + ".join(ops), src, ())
    outs = r.sample(last, r.randint(1, len(last)))
    return {"seed": seed, "dims": dims, "inputs": inputs, "stmts": g.stmts,
            "loss": loss if tape else None, "outputs": ([loss] if loss else []) + outs,
            "data": seed}


# -- rendering ---------------------------------------------------------------------------------
def live(spec):
    """Statements the outputs (and the loss) need, in order."""
    need = set(spec["outputs"]) | ({spec["loss"]} if spec["loss"] else set())
    keep = []
    for name, fmt, args, shape in reversed(spec["stmts"]):
        if name in need:
            keep.append([name, fmt, args, shape])
            need |= set(args)
    return keep[::-1], need


def source(spec):
    """`setup` (inputs and Variables from the data seed) and `def program(...)`."""
    stmts, need = live(spec)
    ins = [i for i in spec["inputs"] if i[0] in need]
    lines = ["n, k, m = {n}, {k}, {m}".format(**spec["dims"]),
             f"rng = np.random.default_rng({spec['data']})",
             "def data(shape):   # values on a 1/4 grid (ties, zeros) or not; some large",
             "    a = rng.standard_normal(shape) * rng.choice([2, 2, 2, 30])",
             "    return np.round(a * 4) / 4 if rng.random() < 0.4 else a\n"]
    for name, shape, var in ins:
        shp = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
        lines.append(f"{name} = {'gc.Variable' if var else 'gc.constant'}("
                     f"data({shp}), gc.float32)")
    args = [n for n, _, var in ins if not var]
    watched = [n for n, _, var in ins if var] + args     # Variables, then watched inputs
    body = [f"{n} = {fmt.format(*a)}" for n, fmt, a, _ in stmts]
    lines.append(f"args = [{', '.join(args)}]\n")
    lines.append(f"def program({', '.join(args)}):")
    if spec["loss"]:
        lines.append("    with gc.GradientTape() as tape:")
        lines += [f"        tape.watch({a})" for a in args]
        lines += [f"        {b}" for b in body]
        lines.append(f"    grads = tape.gradient({spec['loss']}, [{', '.join(watched)}])")
        lines.append(f"    return [{', '.join(spec['outputs'])}] + list(grads)")
    else:
        lines += [f"    {b}" for b in body]
        lines.append(f"    return [{', '.join(spec['outputs'])}]")
    return "\n".join(lines) + "\n"


def script(spec, comment=""):
    """A standalone reproducer: kernels forced, private cache, eager vs compiled."""
    return (f"# {comment or 'fuzz_tape seed %d' % spec['seed']}\n"
            "# run: timeout 120 python <this file>  (graphc on PYTHONPATH)\n"
            "import os, tempfile, time\n"
            "os.environ.update(GRAPHC_NUMBA_MIN_SIZE='0', GRAPHC_KERNEL_CHOICE='kernel',\n"
            "                  GRAPHC_COMPILE='sync', GRAPHC_CACHE_DIR=tempfile.mkdtemp())\n"
            "import numpy as np\nimport graphc as gc\n\n"
            f"{source(spec)}\n"
            "gc.random.set_seed(0)\neager = program(*args)\n"
            "gc.random.set_seed(0)\nt = time.time()\n"
            "compiled = gc.function(program, backend='numba', autograph=False)(*args)\n"
            "print('compiled in %.1f s' % (time.time() - t))\n"
            "for i, (e, c) in enumerate(zip(eager, compiled)):\n"
            "    e, c = (None if t is None else t.numpy() for t in (e, c))\n"
            "    same = (e is None and c is None) or (e is not None and c is not None and\n"
            "            np.allclose(c, e, rtol=2e-4, atol=2e-5, equal_nan=True))\n"
            "    print(i, 'ok' if same else 'MISMATCH', 'eager', e, 'compiled', c, sep='\\n  ')\n")


# -- the child: run and compare ----------------------------------------------------------------
def compare(want, got):
    """None where equal up to float32 rounding, else a short description."""
    if want is None or got is None:
        return None if want is None and got is None else f"None vs {type(got).__name__}"
    import numpy as np
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{want.dtype}{list(want.shape)} vs {got.dtype}{list(got.shape)}"
    w, g = want.astype(np.float64), got.astype(np.float64)
    fin = np.isfinite(w) & np.isfinite(g)
    scale = np.abs(w[fin]).max() if fin.any() else 0.0
    bad = (np.isnan(w) != np.isnan(g)) | ((np.isinf(w) | np.isinf(g)) & (w != g) & ~np.isnan(w))
    bad |= fin & (np.abs(w - g) > ATOL * max(1.0, scale) + RTOL * np.abs(w))
    if not bad.any():
        return None
    i = tuple(np.argwhere(bad)[0])
    return (f"{int(bad.sum())}/{w.size} differ, e.g. {list(map(int, i))}: eager "
            f"{want[i]!r} got {got[i]!r}")


def run_one(spec):
    import numpy as np
    import graphc as gc
    from graphc.kernels.stats import COUNTS
    ns = {"gc": gc, "np": np}
    exec(compile(source(spec), f"<fuzz_tape {spec['seed']}>", "exec"), ns)
    prog, args = ns["program"], ns["args"]
    res = {"seed": spec["seed"]}

    def numpy_of(outs):
        return [None if t is None else t.numpy() for t in outs]
    gc.random.set_seed(0)
    try:
        eager = numpy_of(prog(*args))
    except Exception as e:  # noqa: BLE001 - a generator bug, reported as such
        return dict(res, status="eager-error", detail=f"{type(e).__name__}: {e}"[:500])
    for backend in ("numpy", "numba"):
        gc.random.set_seed(0)
        k0, t0 = COUNTS.kernel_calls, time.time()
        try:
            got = numpy_of(gc.function(prog, backend=backend, autograph=False)(*args))
        except Exception as e:  # noqa: BLE001 - compiled raises where eager runs
            res[backend] = f"raises {type(e).__name__}: {e}"[:500]
            continue
        res[f"{backend}_s"] = round(time.time() - t0, 2)
        if backend == "numba":
            res["kernels"] = COUNTS.kernel_calls - k0
        diffs = [(i, compare(w, g)) for i, (w, g) in enumerate(zip(eager, got))]
        diffs = [f"out {i}: {d}" for i, d in diffs if d]
        if len(got) != len(eager):
            diffs.append(f"{len(got)} outputs, eager {len(eager)}")
        res[backend] = "; ".join(diffs)[:800] or "ok"
    res["status"] = "ok" if res["numpy"] == res["numba"] == "ok" else "mismatch"
    return res


def child_main():
    """Reads a JSON list of programs on stdin; prints `start <seed>` before each and one
    JSON result line after it, so the parent knows which program hung."""
    import warnings
    warnings.simplefilter("ignore")
    for spec in json.load(sys.stdin):
        print("start", spec["seed"], flush=True)
        print(json.dumps(run_one(spec)), flush=True)


# -- the parent: children under a timeout ------------------------------------------------------
def child_env(cache):
    env = dict(os.environ, GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel",
               GRAPHC_COMPILE="sync", GRAPHC_CACHE_DIR=cache)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_specs(specs, timeout, on_result=None):
    """Results of `specs` in order, each run in a child under `timeout` s per program; a
    program that does not return in time is {"status": "hang"} and the rest go on in a new
    child (a fresh private cache each)."""
    results, todo = [], list(specs)
    while todo:
        cache = tempfile.mkdtemp(prefix="graphc-fuzz-")
        err_file = open(os.path.join(cache, "stderr"), "w+")   # a pipe could fill and block
        p = subprocess.Popen([sys.executable, "-c", "from tests.reliability.fuzz_tape import "
                              "child_main; child_main()"], cwd=ROOT, env=child_env(cache),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=err_file, text=True, start_new_session=True)
        p.stdin.write(json.dumps(todo))
        p.stdin.close()
        deadline, current = time.time() + timeout + 10, None    # + import time
        try:
            while todo:
                ready, _, _ = select.select([p.stdout], [], [], max(0, deadline - time.time()))
                if not ready:
                    res = {"seed": todo[0]["seed"], "status": "hang",
                           "detail": f"no result within {timeout} s"}
                    todo.pop(0)
                    _out(results, res, on_result)
                    break
                line = p.stdout.readline()
                if not line:
                    p.wait()
                    err_file.seek(0)
                    err = err_file.read()[-1500:]
                    res = {"seed": todo[0]["seed"], "status": "crash", "detail": err}
                    todo.pop(0)
                    _out(results, res, on_result)
                    break
                if line.startswith("start "):
                    current, deadline = int(line.split()[1]), time.time() + timeout
                elif line.startswith("{"):
                    res = json.loads(line)
                    assert res["seed"] == todo[0]["seed"] == current
                    todo.pop(0)
                    _out(results, res, on_result)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, 9)
            p.wait()
            err_file.close()
            shutil.rmtree(cache, ignore_errors=True)
    return results


def _out(results, res, on_result):
    results.append(res)
    if on_result:
        on_result(res)
