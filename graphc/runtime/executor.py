"""The reference interpreter: runs a Graph with each op's numpy rule, in program order.

A graph is compiled once into a flat list of steps over a slot array, so a call costs one
Python-level loop iteration per op and nothing else. Each step also drops the intermediates
it used last, so big temporaries are freed as early as in eager code (numpy then reuses
warm memory instead of faulting in fresh pages for every op).
"""
from functools import partial

from .registry import REGISTRY
from .run_errors import located


def _step(op, index):
    impl = REGISTRY[op.type].numpy
    fn = partial(impl, **op.attrs) if op.attrs else impl
    ins = tuple(index[id(v)] for v in op.inputs)
    outs = tuple(index.setdefault(id(v), len(index)) for v in op.outputs)
    return fn, ins, outs, op


def compile_graph(graph):
    """Graph -> run(list_of_input_values) -> list_of_output_values (cached on the graph)."""
    if graph._plan is not None:
        return graph._plan
    index = {}
    for v in graph.all_inputs:
        index[id(v)] = len(index)
    n_in = len(index)
    steps = [_step(op, index) for op in graph.operations]
    out_idx = tuple(index[id(v)] for v in graph.outputs)
    pad = [None] * (len(index) - n_in)
    dead = last_uses(steps, n_in, set(out_idx))
    simple = tuple((fn, ins, outs[0], op, d) for (fn, ins, outs, op), d in zip(steps, dead)
                   if len(outs) == 1)
    if len(simple) == len(steps) and all(len(s[1]) == 2 for s in simple):
        run = _binary_runner(simple, out_idx, pad)
    else:
        run = _general_runner([s + (d,) for s, d in zip(steps, dead)], out_idx, pad)
    graph._plan = run
    return run


def last_uses(steps, n_in, keep):
    """Per step, the intermediate slots no later step reads (freed right after it runs)."""
    last = {}
    for i, (_, ins, outs, _) in enumerate(steps):
        for o in outs:
            last[o] = i
        for x in ins:
            last[x] = i
    dead = [[] for _ in steps]
    for slot, i in last.items():
        if slot >= n_in and slot not in keep:
            dead[i].append(slot)
    return [tuple(d) for d in dead]


def _binary_runner(steps, out_idx, pad):
    """Fast path for graphs made only of single-output two-input ops (arithmetic chains)."""
    def run(args):
        env = args + pad
        op = a = b = None
        try:
            for fn, (a, b), o, op, dead in steps:
                env[o] = fn(env[a], env[b])
                for d in dead:
                    env[d] = None
        except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
            err = located(op, e, (env[a], env[b]))
            if err is None:
                raise
            raise err from e
        return [env[i] for i in out_idx]
    return run


def _general_runner(steps, out_idx, pad):
    def run(args):
        env = args + pad
        for fn, ins, outs, op, dead in steps:
            try:
                r = fn(*[env[i] for i in ins])
            except Exception as e:  # noqa: BLE001 - re-raised with the op and user line
                err = located(op, e, [env[i] for i in ins])
                if err is None:
                    raise
                raise err from e
            if len(outs) == 1:
                env[outs[0]] = r
            elif outs:
                for o, x in zip(outs, r):
                    env[o] = x
            for d in dead:
                env[d] = None
        return [env[i] for i in out_idx]
    return run


def run_graph(graph, args):
    """Run `graph` on a list of runtime values for its inputs followed by its captures."""
    return compile_graph(graph)(list(args))
