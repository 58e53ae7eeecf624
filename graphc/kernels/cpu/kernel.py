"""A fused group's kernel module: loaded once per process (by key), with its serial and
parallel entry points, fast-trig variants and the parallel variant's serial machine code."""
import sys
import threading

import numpy as np

from ... import config
from .. import cache
from ..stats import COUNTS
from . import codegen, codegen_chunks
from .codegen_parallel import ALL, RANGE_TYPES, arg_types, serial_address
from .launch import PARALLEL, enter, region_threads

_KERNELS = {}     # key -> Kernel, shared by every graph in the process
_KERNELS_LOCK = threading.Lock()   # the compile thread loads kernels too


class Kernel:
    """A generated module's two entry points, its source and how it was obtained."""

    def __init__(self, key, spec, source, label):
        self.key, self.spec, self.source, self.label = key, spec, source, label
        self.status = None
        self.error = None
        self.serial = self.parallel = None
        self.fast = None        # (serial, parallel) fast-trig variants, if the group has trig
        self.redone = 0         # calls where a trig argument missed the fast range
        self.checked = False    # the fast variant checks per chunk: only chunks are redone
        self.slow_chunks = 0    # ... and this many chunks took the whole-range path
        self.addresses = {}     # (fast?, argument flags) -> a serial variant's machine code
        self.serial_code = {}   # fast? -> the serial variant's numba dispatcher

    def load(self):
        mod, self.status = cache.load_module(self.key, self.source)
        self.serial = getattr(mod, KERNEL_NAME)
        self.parallel = getattr(mod, KERNEL_NAME + "_par")
        if hasattr(mod, KERNEL_NAME + "_fast"):
            self.fast = (getattr(mod, KERNEL_NAME + "_fast"),
                         getattr(mod, KERNEL_NAME + "_fast_par"))
            self.checked = getattr(mod, codegen_chunks.CHECKED_FLAG, False)
            self.serial_code[True] = self.fast[0]
        self.serial_code[False] = self.serial
        if config.debug_level() >= 3:
            print(f"// graphc kernel for {self.label} (cache {self.status}, key {self.key[:12]})\n"
                  f"{self.source}", file=sys.stderr)

    def run(self, par, args):
        """Run the kernel; with fast trig, redo with the whole-range one if an argument missed
        (every output is rewritten in full, so the redo leaves no trace of the fast try; a
        chunked kernel's redo rewrites just the chunks where an argument missed, reading
        inputs the fast try did not touch: outputs never share memory with inputs)."""
        if par:
            threads = region_threads()      # the cores free now (launch.py)
            if threads > 1:
                with PARALLEL:              # one parallel region at a time
                    enter(threads)
                    return self._run(True, args)
        return self._run(False, args)

    def _run(self, par, args):
        COUNTS._kernel_calls += 1
        if self.fast is None:
            self._variant(self.serial, self.parallel, par, args)
            return
        slow = self._variant(*self.fast, par, args, fast=True)
        if slow:        # the whole-range variant compiles here the first time it is needed
            redone = self._variant(self.serial, self.parallel, par, args)
            if self.checked:
                self.slow_chunks += redone      # it redid only the chunks that missed
            else:
                self.redone += 1

    def _variant(self, serial, parallel, par, args, fast=False):
        if par:
            return parallel(*args, self.address(fast, args))
        return serial(*args, 0, ALL)

    def address(self, fast, args):
        """The machine code of the serial (or fast serial) variant for these arguments'
        numba types, which the parallel variant runs on blocks (codegen_parallel.py);
        looked up by the arrays' flags (layout, writeable: what those types depend on
        besides the kernel's fixed dtypes and ranks)."""
        key = (fast, *[a.flags.num for a in args if type(a) is np.ndarray])
        addr = self.addresses.get(key)
        if addr is None:
            addr = self.addresses[key] = serial_address(self.serial_code[fast],
                                                        arg_types(args) + RANGE_TYPES)
        return addr

    def serial_call(self, *args):
        return self.serial(*args, 0, ALL)

    def parallel_call(self, *args):
        return self.parallel(*args, self.address(False, args))


# One fixed function name: the module text (and so its cache entry) depends only on the key,
# not on which group of which graph asked for it first.
KERNEL_NAME = "fused_kernel"


def get_kernel(spec, label):
    key = cache.kernel_key(spec.canonical())
    k = _KERNELS.get(key)
    if k is not None:
        return k
    with _KERNELS_LOCK:
        k = _KERNELS.get(key)
        if k is None:
            k = Kernel(key, spec, codegen.generate(spec, KERNEL_NAME), label)
            try:
                k.load()
            except Exception as e:  # noqa: BLE001 - an unusable cache entry: numpy, not a crash
                k.error = f"kernel module failed to load: {type(e).__name__}: {e}"
            _KERNELS[key] = k
    return k
