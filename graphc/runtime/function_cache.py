"""gc.function's kept traces: recording a new one, and evicting those keyed by an object
that died (their key can never be hit again)."""
import weakref

from .function_args import _has_none_dim, _identity_refs


class TraceCache:
    """The trace-table half of Function (its state is set up in Function.__init__)."""

    def _keep(self, key, cf):
        self._traced += 1
        self._concrete.append(cf)
        warning = None
        if self._last_key is not None:
            warning = self._retrace_warning(self._last_key, key)
        self._last_key = key                       # survives eviction, for the warning
        self._keys.append(key)
        self._cache[key] = cf
        for ref in (r for part in key for r in _identity_refs(part)):
            if isinstance(ref.ref, weakref.ref):
                weakref.finalize(ref.ref(), self._evict, key)
        if any(_has_none_dim(k) for k in key):
            self._general.append((key, cf))
        return warning

    def _evict(self, key):
        """An object keyed by identity died: its traces can never be hit again, so they
        leave the cache and concrete_functions() (tracing_count still counts them). Runs
        in whichever thread drops the object, maybe one in the middle of _keep (a garbage
        collection there): then _keep's end does it, with the lists consistent again."""
        self._dead.append(key)
        with self._lock:
            if not self._publishing:
                self._drain_evictions()

    def _drain_evictions(self):
        while self._dead:
            self._evict_now(self._dead.pop())

    def _evict_now(self, key):
        cf = self._cache.pop(key, None)
        for k in [k for k, v in self._cache.items() if v is cf]:
            del self._cache[k]
        keep = [i for i, c in enumerate(self._concrete) if c is not cf]
        self._concrete = [self._concrete[i] for i in keep]
        self._keys = [self._keys[i] for i in keep]
        self._general = [(k, c) for k, c in self._general if c is not cf]
        # fingerprints never hold objects keyed by identity, but a stale entry must not
        # outlive its trace whatever the reason: swapped whole, as other threads read them
        self._fast = {k: c for k, c in self._fast.items() if c is not cf}
        self._entries = {}
        self._use_entry(None)
        if self._hot[1] is cf:
            self._hot = (None, None, False)
