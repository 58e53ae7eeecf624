"""gc.function: trace once per input signature, cache the graph, run it on every call."""
import functools
import operator
import threading
import weakref

from numpy import ndarray

from .. import config
from ..errors import RetracingWarning
from . import context, signature as sig
from .concrete import trace
from .tensor import Tensor
from .autodiff.tape import eager_tape_recording
from .function_args import (_ParamInfo, _as_tensors, _changing_scalars, _check_input_signature,
                            _conform, _generalize_all)
from .function_cache import TraceCache
from .function_retrace import _retrace_message, _variables_again
from .fingerprint import PY, PY_KEYED, SLOW, VAR, float_bits, sequence_fingerprint
from .function_entry import HotEntries
from .variables import Variable

RETRACE_WARN_AFTER = 5
FAST_KEYS_MAX = 4096        # fingerprints kept per function (then the table starts afresh)
_busy = context._busy
_config = config._state


class Function(TraceCache, HotEntries):
    """A Python function compiled per input signature. Create it with `gc.function`."""

    def __init__(self, python_function, input_signature=None, autograph=True,
                 reduce_retracing=False, backend="auto", name=None, _bound_to=None):
        from .backends import check_backend
        self.python_function = python_function
        self._backend = check_backend(backend)
        self._device_leaves = self._backend == "cuda"   # feed device arrays, not host copies
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._name = name or getattr(python_function, "__name__", "function")
        self._bound_to = _bound_to                 # weakref to the instance, for methods
        self._cache = {}                           # exact key -> ConcreteFunction
        self._general = []                         # (key with None dims, ConcreteFunction)
        self._concrete = []                        # every live trace, in trace order
        self._traced = 0                           # traces made, evicted ones included
        self._discarded = 0                        # variable-creating traces, traced again
        self._inlined = set()                      # keys of inlined calls counted, not traced
        self._inline_traces = 0                    # ... how many of them tracing_count adds
        self._last_key = None
        self._scalar_args = set()                  # Python scalar args passed as tensors
        self._keep_scalars = set()                 # ... and those whose tensor trace failed
        self._keys = []                            # keys of the kept traces, in order
        self._instances = {}                       # id(instance) -> bound Function
        self._created_variables = False
        self._warned = False
        self._converted = None
        # Threads: calls that hit the cache take no lock (dict reads and whole-object swaps
        # are atomic). The lock guards the bookkeeping of the miss path and is never held
        # while user code traces; concurrent callers that need one trace wait for the one
        # thread making it (`_in_flight`).
        self._lock = threading.RLock()
        self._in_flight = {}                       # trace key -> (thread id, Event)
        self._dead = []                            # keys to evict (see _evict)
        self._publishing = False
        self._signature = _ParamInfo(python_function, skip_self=_bound_to is not None)
        self._n_simple = self._signature.n_simple
        self._fast = {}                            # fingerprint -> ConcreteFunction or SLOW
        self._hot = (None, None, False)            # the last (fingerprint, trace) hit, and
        #                                            whether its entry was made (_hot_entry)
        self._entry = None                         # the hot fingerprint's entry class
        self._entries = {}                         # fingerprint -> its entry class, or None
        self._plain = type(self)                   # the class without an entry
        self.input_signature = None
        if input_signature is not None:
            self.input_signature = _check_input_signature(input_signature, self._signature)
        functools.update_wrapper(self, python_function, updated=())

    # -- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """The fast path first: when every argument (positional, keyword or default) is a
        concrete tensor, a numpy array, a gc.Variable or a plain Python scalar, the call is
        looked up by a fingerprint of them (dtype and shape; type and value) that an
        earlier call through the general path mapped to its trace (see _call_and_learn).
        It is built inline: a helper call would cost a tenth of the whole cached call.
        A hot fingerprint's calls do not come here first: its generated entry (see
        function_entry.py) replaces this method, and sends here what it does not take."""
        if not _busy[0] and not _config["run_eagerly"]:
            if kwargs or len(args) != self._n_simple:
                values = self._signature.bind(args, kwargs)      # keywords, defaults
                if values is None:
                    return self._call_general(args, kwargs)
            else:
                values = args
            leaves = []
            fp = []
            dev = self._device_leaves
            for a in values:
                t = type(a)
                if t is Tensor:
                    v = a._np if not dev or a._dev is None else a._dev
                    if v is None:
                        break               # a leaked symbolic tensor: the general error
                    leaves.append(v)
                    fp.append(v.dtype)
                    fp.append(v.shape)
                elif t is ndarray:
                    leaves.append(a)
                    fp.append(a.dtype)
                    fp.append(a.shape)
                elif t in PY_KEYED:
                    fp += (PY, t, a)
                elif t is float and not self._reduce_retracing:   # it may pass them as tensors
                    fp += (PY, float, float_bits(a))
                elif t is Variable:
                    leaves.append(a)
                    v = a._meta()
                    fp += (VAR, v.dtype, v.shape)
                elif (t is tuple or t is list) and sequence_fingerprint(a, fp, leaves, dev):
                    pass
                else:
                    break
            else:
                hot = self._hot            # the last fingerprint hit, and its trace
                if hot[0] == fp:
                    if not hot[2]:
                        self._hot_entry(hot)
                    return hot[1]._call_leaves(leaves)
                cf = self._fast.get(tuple(fp))
                if cf is not None and cf is not SLOW:
                    self._hot = (fp, cf, False)
                    self._use_entry(None)
                    return cf._call_leaves(leaves)
                if cf is None:
                    return self._call_and_learn(values, fp, leaves)
        return self._call_general(args, kwargs)

    def _call_general(self, args, kwargs):
        if config._state["run_eagerly"]:
            return self._call_python(args, kwargs)
        if context._busy[0] and _tracing_or_taping():
            return self._call_inline(args, kwargs)   # inside another trace: inline the body
        cf, leaves = self._resolve(args, kwargs)
        return cf._call_leaves(leaves)

    def _call_and_learn(self, values, fp, leaves):
        """A fingerprint seen for the first time: the general path resolves the call; when
        it fed the trace exactly the fast path's leaves (same objects), later calls with
        this fingerprint take the fast path. Otherwise (an input_signature converting a
        Python value or an array to its dtype) they never try again."""
        cf, general = self._resolve_values(values)
        key = tuple(fp)
        if len(general) == len(leaves) and all(map(operator.is_, general, leaves)):
            fast = cf
            self._hot = (fp, cf, False)
            self._use_entry(None)
        else:
            fast = SLOW
        table = self._fast
        if len(table) >= FAST_KEYS_MAX:     # many shapes through one general trace
            table = self._fast = {}
            self._entries = {}
        table[key] = fast
        return cf._call_leaves(general)

    def _resolve(self, args, kwargs):
        """(trace, leaves) for a call: the general path through signature keys."""
        if kwargs or len(args) != self._signature.n_simple:
            return self._resolve_values(self._signature.canonicalize(args, kwargs, self._name))
        return self._resolve_values(args)

    def _resolve_values(self, values):
        _no_specs(self._name, self._signature, values)
        if self.input_signature is not None:
            values = _conform(values, self.input_signature, self._signature, self._name)
        if self._scalar_args:
            values = _as_tensors(values, self._scalar_args)
        leaves = []
        key = tuple([sig.encode(v, leaves, self._device_leaves) for v in values])
        cf = self._cache.get(key)
        if cf is None:
            if self._warned and self._reduce_retracing and self.input_signature is None:
                changing = _changing_scalars(self._last_key, key) - self._keep_scalars
                if changing:
                    return self._resolve_scalar_tensors(values, changing)
            cf = self._lookup_or_trace(key, values)
        return cf, leaves

    def _resolve_scalar_tensors(self, values, changing):
        """reduce_retracing, after the retrace warning: Python floats that keep changing
        are passed as float32 tensors from now on (one trace for all their values). If the
        body cannot take a tensor there, they stay Python values, traced per value."""
        self._scalar_args = self._scalar_args | changing     # swapped whole: other threads
        tensors = _as_tensors(values, changing)
        leaves = []
        key = tuple([sig.encode(v, leaves, self._device_leaves) for v in tensors])
        try:
            cf = self._cache.get(key) or self._lookup_or_trace(key, tensors)
        except (TypeError, ValueError):
            self._scalar_args = self._scalar_args - changing
            self._keep_scalars = self._keep_scalars | changing
            leaves = []
            key = tuple([sig.encode(v, leaves, self._device_leaves) for v in values])
            cf = self._cache.get(key) or self._lookup_or_trace(key, values)
        return cf, leaves

    def _call_inline(self, args, kwargs):
        """A call inside another trace (or an eager tape) runs the body inline, but as TF's
        nested call it must fit the input_signature (Python values converted to its dtypes,
        a wrong shape or dtype an error) and it counts as a trace of this function."""
        values = self._signature.canonicalize(args, kwargs, self._name)
        if self.input_signature is not None:
            values = _conform(values, self.input_signature, self._signature, self._name)
            self._count_inline(INLINE_SIGNATURE)
            args, kwargs = self._signature.rebuild(values)
        else:
            key = _inline_key(values)
            if key is not None:
                self._count_inline(key)
        return self._call_python(args, kwargs)

    def _count_inline(self, key):
        """TF traces a nested call's signature once: count a key no trace serves yet. The
        keys are kept (bounded: a nested call with ever-new shapes under an eager tape) so
        that a later real trace of one replaces its count instead of adding to it."""
        with self._lock:
            if key in self._inlined:
                return
            if key is INLINE_SIGNATURE:
                if self._traced:
                    return
            elif key in self._cache or self._general_for(key) is not None:
                return
            if len(self._inlined) >= INLINED_KEYS_MAX:
                self._inlined = set()   # forgotten keys count again if traced: still monotonic
            self._inlined.add(key)
            self._inline_traces += 1

    def _traced_inlined(self, key):
        """A real trace made for `key`: an inlined call counted for it is now this trace."""
        if self.input_signature is not None:
            key = INLINE_SIGNATURE
        if key in self._inlined:
            self._inlined.discard(key)
            self._inline_traces -= 1

    def _call_python(self, args, kwargs):
        fn = self._python_callable()
        if config._state["run_eagerly"]:
            return fn(*args, **kwargs)
        return self._converted_callable()(*args, **kwargs)

    def _python_callable(self):
        if self._bound_to is None:
            return self.python_function
        inst = self._bound_to()
        if inst is None:
            raise ReferenceError(f"{self._name}: the instance it was bound to no longer exists")
        return functools.partial(self.python_function, inst)

    def _converted_callable(self):
        if self._converted is None:
            if self._autograph:
                from ..autograph import convert_for_function
                self._converted = convert_for_function(self.python_function)
            else:
                self._converted = self.python_function
        if self._bound_to is None:
            return self._converted
        return functools.partial(self._converted, self._bound_to())

    # -- the cache -------------------------------------------------------------------------
    def _lookup_or_trace(self, key, values, generalize=True):
        """The trace for `key`: cached, a more general one, or a new one. Of the threads
        that need the same new trace at once, one traces and the others wait for it."""
        me = threading.get_ident()
        while True:
            with self._lock:
                cf = self._cache.get(key) or self._general_match(key)
                if cf is not None:
                    return cf
                tkey = self._trace_key(key) if generalize else key
                busy = self._in_flight.get(tkey)
                if busy is None and self._traced == 0 and self._in_flight:
                    # the first trace decides whether the function creates its variables
                    # (see _trace): until one succeeds, traces take turns
                    busy = next(iter(self._in_flight.values()))
                if busy is None:
                    done = threading.Event()
                    self._in_flight[tkey] = (me, done)
                    break
                if busy[0] == me:   # this thread's own trace asks for it (recursion)
                    done = None
                    break
            busy[1].wait()          # then look again: its trace, or its error and our turn
        if done is None:
            return self._trace_and_keep(tkey, values, key)
        try:
            return self._trace_and_keep(tkey, values, key)
        finally:
            with self._lock:
                del self._in_flight[tkey]
            done.set()

    def _general_match(self, key):
        cf = self._general_for(key)
        if cf is not None:
            self._cache[key] = cf
        return cf

    def _general_for(self, key):
        """The trace with None dims that serves `key`, or None."""
        for general, cf in self._general:
            if len(general) == len(key) and all(map(sig.matches, general, key)):
                return cf
        return None

    def _trace_key(self, key):
        if self.input_signature is not None:
            return tuple(self.input_signature_key) + key[len(self.input_signature):]
        if self._reduce_retracing:
            for old in reversed(self._keys):
                common = _generalize_all(old, key)
                if common is not None and common != key:
                    return common
        return key

    @property
    def input_signature_key(self):
        return [sig.encode(s, []) for s in self.input_signature]

    def _trace_and_keep(self, key, values, called=None):
        cf = self._trace(key, values)              # user code: no lock held
        with self._lock:
            if self._inlined:
                self._traced_inlined(key)
                if called is not None and called != key:
                    self._traced_inlined(called)
            self._publishing = True
            try:
                warning = self._keep(key, cf)
            finally:
                self._publishing = False
            self._drain_evictions()
        if warning:
            context.warn_at_user_line(warning, RetracingWarning)
        return cf

    def _trace(self, key, values):
        """Trace, applying the create-variables-once rule (a second trace checks it)."""
        fn = self._converted_callable()
        cf, created = trace(fn, self._name, key, values, self._signature, self._backend)
        if created:
            with self._lock:
                if self._created_variables:
                    raise _variables_again(self._name)
                self._created_variables = True
                self._discarded += 1
            cf, created = trace(fn, self._name, key, values, self._signature, self._backend)
            if created:
                raise _variables_again(self._name)
        return cf

    def _retrace_warning(self, old, new):
        if self._warned or self._traced - 1 < RETRACE_WARN_AFTER:
            return None
        self._warned = True
        return _retrace_message(self, old, new)

    # -- introspection ---------------------------------------------------------------------
    @property
    def tracing_count(self):
        """Traces made: a first trace that created variables and was traced again counts
        as one more (TF's count: 2 for the `if self.w is None` idiom's first call)."""
        with self._lock:    # a trace replacing an inlined call's count changes two fields
            # nested (inlined) calls: TF traces and counts them once per key
            return self._traced + self._discarded + self._inline_traces

    def experimental_get_tracing_count(self):
        return self.tracing_count

    def concrete_functions(self):
        return list(self._concrete)

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (tensors or TensorSpecs), tracing it if needed."""
        if not args and not kwargs and self.input_signature is not None:
            args = tuple(self.input_signature)
        values = self._signature.canonicalize(args, kwargs, self._name)
        if self.input_signature is not None:
            values = _conform(values, self.input_signature, self._signature, self._name)
        key = tuple(sig.encode(v, []) for v in values)
        return self._cache.get(key) or self._lookup_or_trace(key, values, generalize=False)

    # -- methods: one cache per instance ---------------------------------------------------
    def __get__(self, instance, owner=None):
        if instance is None or self._bound_to is not None:
            return self
        bound = self._instances.get(id(instance))
        if bound is not None and bound._bound_to() is instance:
            return bound
        with self._lock:        # one bound Function (one cache) per instance, across threads
            bound = self._instances.get(id(instance))
            if bound is not None and bound._bound_to() is instance:
                return bound
            bound = Function(self.python_function, self.input_signature, self._autograph,
                             self._reduce_retracing, self._backend, self._name,
                             _bound_to=weakref.ref(instance))
            self._instances[id(instance)] = bound
            weakref.finalize(instance, self._instances.pop, id(instance), None)
        return bound

    def __repr__(self):
        return f"<gc.function {self._name} (traces: {self.tracing_count})>"


def _no_specs(fname, params, values):
    """A TensorSpec is no value to run on (TF: ValueError); it traces through
    get_concrete_function. Keyed like a tensor, it would otherwise run with an input missing."""
    def has(v):
        if isinstance(v, sig.TensorSpec):
            return True
        if isinstance(v, (list, tuple)):
            return any(map(has, v))
        return isinstance(v, dict) and any(map(has, v.values()))
    for i, v in enumerate(values):
        if has(v):
            names = [p.name for p in params.params]
            name = names[i] if i < len(names) else str(i)
            raise ValueError(f"{fname}(): argument '{name}' is (or holds) a gc.TensorSpec, which "
                             "has no value to compute with; pass a tensor, or trace for the spec "
                             f"with {fname}.get_concrete_function(spec)")


INLINE_SIGNATURE = object()
INLINED_KEYS_MAX = 4096     # inlined keys remembered per function (then it starts afresh)


def _inline_key(values):
    """The cache key a nested call's arguments would have (symbolic tensors by dtype and
    static shape), or None where it cannot be told (then the call is not counted)."""
    key = []
    for v in values:
        if type(v) is Tensor and v._sym is not None:
            key.append((sig.TENSOR, v.dtype, tuple(v.shape)))
            continue
        try:
            key.append(sig.encode(v, [], False))
        except Exception:               # a symbolic tensor inside a nest, an odd object
            return None
    return tuple(key)


def _tracing_or_taping():
    """This thread is tracing, or an eager GradientTape of its records."""
    return bool(context._tls.stack) or eager_tape_recording()


def function(func=None, input_signature=None, autograph=True, reduce_retracing=False,
             backend="auto", name=None, jit_compile=None):
    """Compile a Python function into graphs traced once per input signature.

    Usable as `@gc.function`, `@gc.function(...)` or `gc.function(fn, ...)`.
    """
    def wrap(fn):
        if not callable(fn):
            hint = (" (an input_signature goes by keyword: "
                    "@gc.function(input_signature=[...]))") if isinstance(fn, (list, tuple)) else ""
            raise TypeError(f"gc.function: expected a Python function to compile, got "
                            f"{type(fn).__name__} {fn!r}{hint}")
        return Function(fn, input_signature, autograph, reduce_retracing, backend, name)
    return wrap if func is None else wrap(func)
