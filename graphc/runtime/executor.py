"""The reference interpreter: runs a Graph with each op's numpy rule, in program order.

A graph is compiled once into straight-line Python (one statement per op over local
variables, generated here from the graph: nothing read from disk), so a call costs one
Python call per op and nothing else. Each step also drops the intermediates it used last,
so big temporaries are freed as early as in eager code (numpy then reuses warm memory
instead of faulting in fresh pages for every op). Graphs too big to be worth generating
code for run through a loop over a flat list of steps instead.
"""
from functools import partial

from .registry import REGISTRY
from .run_errors import located

# Generating and compiling the source costs ~10 us per op once; past this many ops the
# per-op saving (~0.1 us a call) no longer pays for itself within a few thousand calls.
STRAIGHT_MAX_OPS = 1000


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
    dead = last_uses(steps, n_in, set(out_idx))
    if len(steps) <= STRAIGHT_MAX_OPS:
        run = straight_runner([s + (d,) for s, d in zip(steps, dead)], n_in, out_idx,
                              graph.name)
    else:
        pad = [None] * (len(index) - n_in)
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


def straight_runner(steps, n_in, out_idx, name="graph", consts=None, unpack=()):
    """`run(args)` as generated Python: slot k is the local `s<k>`, step i calls `f<i>` on
    its own line. An exception is re-raised as the loop runner does, with the op and the
    values it was given: the traceback's line number says which step failed. `consts`
    (slot -> value) are bound as default arguments; steps numbered in `unpack` return a
    sequence even for one output. `f<i>` is a global of `run`: rebinding it in
    `run.__globals__` changes what later calls of step i run."""
    names = {f"_c{k}": v for k, v in (consts or {}).items()}
    names["__name__"] = __name__     # warnings raised in the plan are graphc's (see __init__)
    lines = ["def run(args" + "".join(f", s{k}=_c{k}" for k in (consts or {})) + "):"]
    if n_in:
        lines.append(f"    {', '.join(f's{k}' for k in range(n_in))}, = args")
    lines.append("    try:")
    at_line = {}
    for i, (fn, ins, outs, op, dead) in enumerate(steps):
        names[f"f{i}"] = fn
        call = f"f{i}({', '.join(f's{k}' for k in ins)})"
        if len(outs) == 1 and i not in unpack:
            call = f"s{outs[0]} = {call}"
        elif outs:          # extra results are ignored, as zip() in the loop runner does
            call = f"{', '.join(f's{k}' for k in outs)}, *_ = {call}"
        lines.append(f"        {call}")
        at_line[len(lines)] = (op, ins)
        if dead:
            lines.append(f"        del {', '.join(f's{k}' for k in dead)}")
    lines += [f"        return [{', '.join(f's{k}' for k in out_idx)}]",
              "    except Exception as e:  # noqa: BLE001 - re-raised with the op and user line",
              "        err = _locate(e, locals())",
              "        if err is None:",
              "            raise",
              "        raise err from e"]

    def locate(e, slots):
        op, ins = at_line[e.__traceback__.tb_lineno]
        return located(op, e, tuple(slots[f"s{k}"] for k in ins))
    names["_locate"] = locate
    code = compile("\n".join(lines) + "\n", f"<graphc plan {name}>", "exec")
    exec(code, names)    # noqa: S102 - source generated above from the graph's own steps
    return names["run"]


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
