"""graphc.dask.DataParallel: gradients on shards where the data lives, one update on the client.

Per step: the client sends every worker the gradient graph's payload (bytes, loaded once per
worker process) and the current values of the variables it reads (arrays); each worker runs
it on its shard; the client averages losses and gradients weighted by shard size and calls
`optimizer.apply_gradients` once. Shards are scattered once and reused while the same
arrays (same object, same contents) come back.
"""
import threading
import zlib

import numpy as np

from ..errors import GraphcError
from ..runtime.concrete import _Slot
from ..runtime.dispatch import constant
from ..runtime.function import Function
from ..runtime.signature import TensorSpec
from .. import dtypes as _dt
from . import payload

SCATTER_TIMEOUT = 120     # seconds; a worker that died since it was listed: the one retry relists


def shard_outputs(data, digest, backend, values, x, y):
    """Worker side: the gradient graph's flat outputs on one shard (module level, so a task
    names it by import path; the graph itself comes as bytes)."""
    return payload.load(data, digest, backend).run([x, y], values)


class DataParallel:
    """Train `model` with `optimizer` on `step_fn(model, x, y)` (a scalar mean loss) across
    the workers of a dask.distributed `client` (None: the current default client)."""

    def __init__(self, model, optimizer, step_fn, client=None, backend="auto"):
        from distributed import default_client
        self.model, self.optimizer, self.step_fn = model, optimizer, step_fn
        self.client = default_client() if client is None else client
        self.backend = backend
        self._lock = threading.Lock()
        self._traced = {}          # (x spec key, y spec key) -> (payload, digest, variables, cf)
        self._scattered = None     # (x, y, checksums, workers, [(n, x future, y future)])
        name = getattr(step_fn, "_name", getattr(step_fn, "__name__", "step_fn"))
        self._name = name

        def grads(x, y):
            from ..runtime.autodiff.tape import GradientTape
            with GradientTape() as tape:
                loss = step_fn(model, x, y)
            return loss, tape.gradient(loss, list(model.trainable_variables))
        grads.__name__ = f"{name}_grads"
        self._grads = Function(grads, backend=backend)

    def fit_batch(self, x, y):
        """One step on the whole batch (x, y), split along axis 0 into one shard per worker;
        returns the whole-batch loss before the update (a scalar tensor)."""
        x, y = _array(x, "x", self._name), _array(y, "y", self._name)
        if x.ndim == 0 or x.shape[:1] != y.shape[:1] or x.shape[0] == 0:
            raise ValueError(f"DataParallel.fit_batch({self._name}): x {list(x.shape)} and y "
                             f"{list(y.shape)} must have the same non-zero batch size along "
                             "axis 0")
        with self._lock:       # one step at a time: each reads the variables the last wrote
            data, digest, variables, cf = self._trace(x, y)
            values = [np.asarray(v.numpy()) for v in variables]
            try:
                results = self._run(x, y, data, digest, values)
            except GraphcError:
                raise
            except Exception:  # noqa: BLE001 - a lost worker took its shards: once more
                self._scattered = None
                results = self._run(x, y, data, digest, values)
            return self._apply(cf, results, x.shape[0])

    # -- steps -------------------------------------------------------------------------------
    def _trace(self, x, y):
        key = (x.dtype, x.shape[1:], y.dtype, y.shape[1:])
        got = self._traced.get(key)
        if got is None:
            specs = [TensorSpec((None,) + a.shape[1:], _dt.from_numpy(a.dtype)) for a in (x, y)]
            cf = self._grads.get_concrete_function(*specs)
            data, digest, variables = payload.dumps(cf)
            got = self._traced[key] = (data, digest, variables, cf)
        return got

    def _shards(self, x, y):
        workers = sorted(self.client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError(f"DataParallel.fit_batch({self._name}): the Dask cluster has "
                               "no workers")
        sums = (_checksum(x), _checksum(y))
        s = self._scattered
        if s is not None and s[0] is x and s[1] is y and s[2] == sums and s[3] == workers:
            return s[4]
        parts = []
        bounds = np.linspace(0, x.shape[0], min(len(workers), x.shape[0]) + 1).astype(int)
        for w, lo, hi in zip(workers, bounds[:-1], bounds[1:]):
            fx, fy = self.client.scatter([x[lo:hi], y[lo:hi]], workers=[w], hash=False,
                                         timeout=SCATTER_TIMEOUT)
            parts.append((w, int(hi - lo), fx, fy))
        self._scattered = (x, y, sums, workers, parts)
        return parts

    def _run(self, x, y, data, digest, values):
        parts = self._shards(x, y)
        futures = [self.client.submit(shard_outputs, data, digest, self.backend, values, fx, fy,
                                      workers=[w], allow_other_workers=True, pure=False)
                   for w, _, fx, fy in parts]
        outs = self.client.gather(futures)
        return [(n, o) for (_, n, _, _), o in zip(parts, outs)]

    def _apply(self, cf, results, total):
        loss_slot, grad_slots = cf._structure
        loss = sum(n * np.float64(o[loss_slot.index]) for n, o in results) / total
        pairs = []
        for slot, v in zip(grad_slots, self.model.trainable_variables):
            if type(slot) is not _Slot:
                pairs.append((None, v))
                continue
            g = sum((n / total) * o[slot.index].astype(np.float64) for n, o in results)
            pairs.append((constant(np.asarray(g, v.dtype.np)), v))
        loss_dtype = cf.graph.outputs[loss_slot.index].type.dtype.np
        result = constant(np.asarray(loss, loss_dtype))
        self.optimizer.apply_gradients(pairs)
        return result


def _array(a, what, name):
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    if _dt.from_numpy(a.dtype) is None:
        raise TypeError(f"DataParallel.fit_batch({name}): {what} has dtype {a.dtype}, not a "
                        "graphc dtype")
    return a


def _checksum(a):
    """CRC-32 of the bytes: an array changed in place since it was scattered is sent again."""
    return zlib.crc32(memoryview(np.ascontiguousarray(a)).cast("B"))
