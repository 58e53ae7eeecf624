"""ConcreteFunction: one traced graph plus what is needed to call it with real tensors."""
import os

from numpy import ndarray, may_share_memory

from .. import dtypes as _dt
from . import signature as sig
from .backends import get_backend
from . import context
from .context import building
from .autodiff.custom import strip as strip_custom_gradients
from .dispatch import convert_to_tensor, resolve
from .graph import Graph
from .tensor import Tensor
from .types import ResourceType, TensorType


class _Slot:
    """Where output number `index` goes in the returned structure."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def trace(fn, name, key, values, params, backend):
    """Trace `fn` on placeholders built from `key`. Returns (ConcreteFunction, created_vars)."""
    graph = Graph(name)
    graph.resource_args = {}
    graph.input_values = {}     # placeholder -> this call's value, while tracing only: what a
    sym = [_placeholders(graph, v, k, n)     # variable's initial value made from it reads
           for n, v, k in zip(params.names, values, key)]
    args, kwargs = params.rebuild(sym)
    created = []
    hooks = context._tls.creation_hooks      # this thread's: another thread's variables
    context._push(hooks, created.append)     # are not this trace's
    try:
        with building(graph):
            result = fn(*args, **kwargs)
            flat = []
            structure = _flatten_outputs(graph, result, flat)
    finally:
        context._pop(hooks, created.append)
        graph.input_values = None
    graph.outputs = flat
    strip_custom_gradients(graph)     # every gradient is built: backends see the forward
    if os.environ.get("GRAPHC_VERIFY"):
        from .verify import verify
        verify(graph)
    spec_args, spec_kwargs = params.rebuild([_to_specs(v, k, n)
                                             for n, v, k in zip(params.names, values, key)])
    return ConcreteFunction(graph, structure, (tuple(spec_args), spec_kwargs), backend), created


def _placeholders(graph, v, k, base):
    tag = k[0]
    if tag == sig.TENSOR:
        t = Tensor._symbolic(graph.add_input(TensorType(k[1], k[2]), base), graph)
        if not isinstance(v, sig.TensorSpec):
            graph.input_values[id(t._sym)] = v
        return t
    if tag == sig.RESOURCE:
        graph.resource_args[id(v)] = r = graph.add_input(ResourceType(k[1], k[2]), base)
        graph.input_values[id(r)] = v
        return v
    if tag in (sig.LIST, sig.TUPLE):
        parts = [_placeholders(graph, x, kk, f"{base}_{i}") for i, (x, kk) in enumerate(zip(v, k[1]))]
        return parts if tag == sig.LIST else tuple(parts)
    if tag == sig.NAMED:
        return k[1](*[_placeholders(graph, x, kk, f"{base}_{f}")
                      for f, x, kk in zip(k[1]._fields, v, k[2])])
    if tag == sig.DICT:
        return {name: _placeholders(graph, v[name], kk, f"{base}_{name}") for name, kk in k[1]}
    return v


def _to_specs(v, k, name=None):
    """The structured input signature of value `v` keyed `k`: a top-level tensor argument's
    spec is named after the argument (as TF names it), unless it came as a named spec."""
    tag = k[0]
    if tag == sig.TENSOR:
        given = v.name if isinstance(v, sig.TensorSpec) else None
        return sig.TensorSpec(k[2], k[1], given or name)
    if tag in (sig.LIST, sig.TUPLE):
        parts = [_to_specs(x, kk) for x, kk in zip(v, k[1])]
        return parts if tag == sig.LIST else tuple(parts)
    if tag == sig.NAMED:
        return k[1](*[_to_specs(x, kk) for x, kk in zip(v, k[2])])
    if tag == sig.DICT:
        return {name: _to_specs(v[name], kk) for name, kk in k[1]}
    if tag == sig.OBJ:
        return k[1]        # the weak identity key: the signature must not keep the object alive
    return v


def _flatten_outputs(graph, x, flat):
    if x is None:
        return None
    if type(x) is Tensor or hasattr(x, "_as_tensor") or isinstance(x, (bool, int, float)):
        t = convert_to_tensor(x)
        flat.append(resolve(graph, t))
        return _Slot(len(flat) - 1)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_flatten_outputs(graph, v, flat) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_flatten_outputs(graph, v, flat) for v in x)
    if isinstance(x, dict):
        return {k: _flatten_outputs(graph, v, flat) for k, v in x.items()}
    if hasattr(x, "_stack_for_output"):            # TensorArray
        return _flatten_outputs(graph, x._stack_for_output(), flat)
    raise TypeError(f"gc.function '{graph.name}' returned {type(x).__name__} {x!r}: compiled "
                    "functions return tensors, Python numbers/bools, None, and lists, tuples, "
                    "dicts or namedtuples of them")


def _unflatten(structure, outs, wrap=Tensor._concrete):
    if type(structure) is _Slot:
        return wrap(outs[structure.index])
    if structure is None:
        return None
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[_unflatten(s, outs, wrap) for s in structure])
    if isinstance(structure, (list, tuple)):
        return type(structure)(_unflatten(s, outs, wrap) for s in structure)
    return {k: _unflatten(s, outs, wrap) for k, s in structure.items()}


class ConcreteFunction:
    """One traced graph. Call it with the tensor arguments only (Python values are baked in)."""

    def __init__(self, graph: Graph, structure, structured_input_signature, backend="auto"):
        self.graph = graph
        self._structure = structure
        self.structured_input_signature = structured_input_signature
        self._backend = get_backend(backend)
        # a device backend (cuda) takes device arrays and returns them as device tensors
        self._device = getattr(self._backend, "device_values", False)
        self._captures = [_capture_value(src, self._device) for _, src in graph.captures]
        run = self._backend.compile(graph)
        # `_run(args)`: flat outputs for leaves + captures (saved-model signatures index them)
        self._run = _holding_variable_locks(run, graph)
        # `_call_leaves(leaves)`: the whole cached call after the arguments are encoded, one
        # closure swapped whole (other threads see the old one or the new one, never half)
        call = self._plan_call = _caller(self._run, self._captures, structure, self._device)
        self._tail = None        # the settled plan as inline source (one compiled loop)
        self._on_change = None   # told when _tail's source comes or goes (gc.function's entries)
        if getattr(run, "settled", None) is not None:
            call = self._settling(run, call)
        self._call_leaves = call

    def _settling(self, run, call):
        """For a backend whose runner is one call away from its final form (numba: the
        plan is built on the first call): once it is, later calls go to it directly; a
        plan that offers its call as source (`tail`) is inlined into `_call_leaves`."""
        def first(leaves):
            out = call(leaves)
            done = run.settled()
            if done is not None:
                self._run = _holding_variable_locks(done, self.graph)
                self._plan_call = _caller(self._run, self._captures, self._structure,
                                          self._device)
                self._call_leaves = self._plan_call
                tail = getattr(done, "tail", None)
                if tail is not None and self._run is done and not self._device:
                    self._tail = tail
                    tail.watch(self._retail)
                    self._retail()
            return out
        return first

    def _retail(self):
        """The plan's inline source came or went (a loop kernel installed, or failed):
        `_call_leaves` becomes one generated function that runs it, or the plan again."""
        leaves = [f"v{i}" for i in range(len(self.graph.inputs))]
        body = self._tail_body(leaves, "leaves")
        if body is None:
            self._call_leaves = self._plan_call
        else:
            lines, ns = body
            src = ["def call(leaves):"] + ([f"    {', '.join(leaves)}, = leaves"] if leaves else [])
            src += ["    " + ln for ln in lines]
            exec(compile("\n".join(src) + "\n", f"<graphc call {self.name}>", "exec"), ns)  # noqa: S102
            self._call_leaves = ns["call"]
        notify = self._on_change
        if notify is not None:
            notify()

    def _tail_body(self, leaves, leaves_expr, known=None):
        """(source lines, namespace) finishing a call whose leaves are the local names
        `leaves` (`leaves_expr` lists them), with the plan inlined; None when it is not.
        `known`: per leaf, the (dtype, shape) the caller has checked it has, if it has."""
        code = None if self._tail is None else self._tail.code(leaves, leaves_expr, known)
        if code is None:
            return None
        lines, ns, outs = code
        ns.update(k_slow=self._plan_call, c_new=Tensor.__new__, c_Tensor=Tensor,
                  c_unflatten=_unflatten, c_structure=self._structure)
        if type(self._structure) is _Slot:
            lines = lines + ["c_t = c_new(c_Tensor)",
                             f"c_t._np = {outs[self._structure.index]}",
                             "c_t._sym = c_t._graph = c_t._dev = None",
                             "return c_t"]
        else:
            lines = lines + [f"return c_unflatten(c_structure, [{', '.join(outs)}])"]
        return lines, ns

    def _native_body(self, known):
        """A native_entry.LoopBody finishing a cached call from leaves of the (dtype, shape)
        in `known`, when the plan is one compiled loop returning one tensor; else None."""
        tail = self._tail
        if tail is None or type(self._structure) is not _Slot or self._structure.index != 0:
            return None
        return tail.native(known, self._plan_call)

    def _entry_body(self, leaves, known):
        """(source lines, namespace) that finish a cached call from the local names
        `leaves`, for gc.function's generated entry (function_entry.py), which has checked
        that each has the (dtype, shape) in `known`: the inlined plan, or a call of
        `_call_leaves` (read at each call: it changes when the plan settles)."""
        listed = f"[{', '.join(leaves)}]"
        body = self._tail_body(leaves, listed, known)
        if body is not None:
            return body
        return [f"return c_cf._call_leaves({listed})"], {"c_cf": self}

    @property
    def name(self):
        return self.graph.name

    @property
    def inputs(self):
        return [Tensor._symbolic(v, self.graph) for v in self.graph.all_inputs]

    @property
    def outputs(self):
        return [Tensor._symbolic(v, self.graph) for v in self.graph.outputs]

    @property
    def variables(self):
        return [src for _, src in self.graph.captures if hasattr(src, "_resolve_in")]

    @property
    def structured_outputs(self):
        """The returned nest with a TensorSpec for each tensor (TF's structured_outputs)."""
        outs = self.graph.outputs
        return _unflatten(self._structure, outs,
                          lambda v: sig.TensorSpec(v.type.shape, v.type.dtype))

    def __call__(self, *args, **kwargs):
        args = self._without_baked(args, kwargs)
        if kwargs:
            args = self._with_keywords(args, kwargs)
        leaves = []
        for a in args:
            _flatten_args(a, leaves)
        expected = self.graph.inputs
        if len(leaves) != len(expected):
            raise TypeError(f"ConcreteFunction {self.name} takes {len(expected)} tensor "
                            f"arguments ({', '.join(map(repr, expected))}), got {len(leaves)}")
        values, given = [], []
        for v, x in zip(expected, leaves):
            if isinstance(v.type, ResourceType):
                if not hasattr(x, "_resolve_in") or x.dtype is not v.type.dtype:
                    raise TypeError(f"ConcreteFunction {self.name}: input '{v.name}' expects a "
                                    f"gc.Variable of {v.type}, got {x!r}")
                values.append(x)
                given.append(x)
                continue
            t = convert_to_tensor(x, None if type(x) is Tensor else v.type.dtype)
            if t.dtype is not v.type.dtype:
                raise TypeError(f"ConcreteFunction {self.name}: input '{v.name}' expects "
                                f"{v.type}, got {t.dtype.name}{list(t.shape)}")
            if not sig.TensorSpec(v.type.shape, v.type.dtype).is_compatible_with(t):
                raise ValueError(f"ConcreteFunction {self.name}: input '{v.name}' expects "
                                 f"shape {v.type}, got {t.dtype.name}{list(t.shape)}")
            values.append(t._dev if self._device and t._dev is not None else t._np)
            given.append(t)
        if context._busy[0] and _tracing_or_taping():
            # inside another trace (symbolic arguments) or under an eager GradientTape: the
            # graph's ops join the trace / the tape, as a tf ConcreteFunction's call does
            from ..saved_model.replay import replay
            return replay(self, given)
        return self._call_leaves(values)

    def __repr__(self):
        return f"<gc.ConcreteFunction {self.name}{self.structured_input_signature}>"

    def _without_baked(self, args, kwargs):
        """A call with every positional argument of the trace, Python values included (TF's
        concrete functions take that form too): the tensor arguments, once each Python value
        is checked to be the one baked in."""
        spec_args, spec_kwargs = self.structured_input_signature
        if len(args) != len(spec_args):
            return args
        baked = [i for i, s in enumerate(spec_args) if not _holds_input(s)]
        if not baked:
            return args
        same = all(type(args[i]) is type(spec_args[i]) and args[i] == spec_args[i]
                   for i in baked)
        fed = len(spec_args) - len(baked) + sum(map(_holds_input, spec_kwargs.values()))
        if len(args) + len(kwargs) == fed and not same:
            return args          # as many values as tensor arguments: the tensor-only form
        if not same:
            i = next(i for i in baked if type(args[i]) is not type(spec_args[i])
                     or args[i] != spec_args[i])
            raise TypeError(f"ConcreteFunction {self.name}: argument {i} was traced as the "
                            f"Python value {spec_args[i]!r}, which is baked in; got "
                            f"{args[i]!r}. Call it with the tensor arguments only, or trace "
                            "this value with get_concrete_function")
        return tuple(a for i, a in enumerate(args) if i not in baked)

    def _with_keywords(self, args, kwargs):
        """Positional `args` followed by the tensor arguments given by name (as TF's
        concrete functions take them: `cf(x=t)`), in the trace's argument order."""
        spec_args, spec_kwargs = self.structured_input_signature
        names = [a.name if isinstance(a, sig.TensorSpec) else None
                 for a in spec_args if _holds_input(a)]
        names += [k for k, v in spec_kwargs.items() if _holds_input(v)]
        rest = names[len(args):]
        unknown = sorted(set(kwargs) - set(rest))
        missing = [n for n in rest if n not in kwargs]
        if unknown or missing:
            named = ", ".join(repr(n) for n in names if n) or "none"
            problem = (f"got unexpected keyword argument(s) {', '.join(map(repr, unknown))}"
                       if unknown else f"is missing argument(s) {missing}")
            raise TypeError(f"ConcreteFunction {self.name} {problem}; its tensor arguments "
                            f"by name are {named} (Python values are baked in)")
        return tuple(args) + tuple(kwargs[n] for n in rest)


def _tracing_or_taping():
    from .function import _tracing_or_taping as busy
    return busy()


def _holds_input(v):
    """True for a signature entry fed by arguments: a spec, a variable or a nest of them."""
    if isinstance(v, sig.TensorSpec) or hasattr(v, "_resolve_in"):
        return True
    if isinstance(v, dict):
        return any(_holds_input(x) for x in v.values())
    return isinstance(v, (list, tuple)) and any(_holds_input(x) for x in v)


def _capture_value(src, device):
    if type(src) is not Tensor:
        return src
    return src._dev if device and src._dev is not None else src._np


def _unshared(out, leaves):
    """`out`, copied when it is an argument's array or a view of one (an input returned as
    is, reshaped or sliced): a Tensor is immutable, so it must not change when the caller
    later writes into the numpy array it passed. A fresh result is returned as is."""
    if type(out) is not ndarray:
        return out
    if out.base is None:
        for a in leaves:
            if a is out:
                return out.copy()
        return out
    for a in leaves:
        if type(a) is ndarray and may_share_memory(out, a):
            return out.copy()
    return out


def _caller(run, captures, structure, device=False):
    """call(leaves) -> the returned structure of Tensors, for `run` over leaves + captures.
    A single output is wrapped inline (no _unflatten walk, no Tensor._concrete call).
    `device`: the outputs are device arrays, wrapped as device-backed tensors."""
    new = Tensor.__new__
    if device:
        wrap = Tensor._on_device
        if type(structure) is _Slot:
            i = structure.index
            if not captures:
                return lambda leaves: wrap(run(leaves)[i])
            return lambda leaves: wrap(run(leaves + captures)[i])
        return lambda leaves: _unflatten(structure, run(leaves + captures), wrap)
    if type(structure) is not _Slot:
        def call_many(leaves):
            outs = run(leaves + captures) if captures else run(leaves)
            return _unflatten(structure, [_unshared(o, leaves) for o in outs])
        return call_many
    i = structure.index
    if captures:
        def call_captures(leaves):
            t = new(Tensor)
            t._np = _unshared(run(leaves + captures)[i], leaves)
            t._sym = t._graph = t._dev = None
            return t
        return call_captures

    def call(leaves):
        t = new(Tensor)
        t._np = _unshared(run(leaves)[i], leaves)
        t._sym = t._graph = t._dev = None
        return t
    return call


def _holding_variable_locks(run, graph):
    """`run`, holding the locks of every variable the graph reads or writes for the whole
    run, so that a call's reads and updates are one step relative to other threads (see
    variables.py). Taken in creation order, so overlapping sets never deadlock. A graph
    with no variables runs as is."""
    captured = {v._number: v._lock for _, v in graph.captures if hasattr(v, "_lock")}
    passed = [i for i, v in enumerate(graph.inputs) if isinstance(v.type, ResourceType)]
    if not captured and not passed:
        return run
    locks = [lock for _, lock in sorted(captured.items())]
    if len(locks) == 1 and not passed:
        lock = locks[0]

        def run_one(args):
            with lock:
                return run(args)
        return run_one

    def locks_for(args):        # variables passed as arguments differ from call to call
        mine = dict(captured)
        for i in passed:
            mine[args[i]._number] = args[i]._lock
        return [lock for _, lock in sorted(mine.items())]

    def run_locked(args):
        held = locks_for(args) if passed else locks
        for lock in held:
            lock.acquire()
        try:
            return run(args)
        finally:
            for lock in reversed(held):
                lock.release()
    return run_locked


def _flatten_args(a, leaves):
    if isinstance(a, (list, tuple)):
        for x in a:
            _flatten_args(x, leaves)
    elif isinstance(a, dict):
        for k in sorted(a, key=sig._sort_key):
            _flatten_args(a[k], leaves)
    else:
        leaves.append(a)
