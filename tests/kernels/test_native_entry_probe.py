"""The native hot entry (runtime/native_entry.py) under misuse, from a probe for crashes,
leaks and wrong answers: a bound method outliving its entry class, two installs of one
entry racing, functions made and dropped (their machine code), calls with very many
arguments. Each compares with eager where there is an answer to compare."""
import gc as pygc
import weakref

import numpy as np
import pytest

import graphc as gc

from test_loop_call_entry import branchy
# the same marks (kernel cache, skip where no native entries) and GRAPHC_NATIVE_ENTRY=2
from test_native_entry import (_native, _same, _values, _warm, native_after_two,  # noqa: F401
                               pytestmark)


def test_a_bound_method_keeps_its_entry_alive(numba_forced):
    # `f.__call__` taken while the entry is native is a builtin method; it held only a
    # pointer to the entry's method def, freed with the entry class once the function
    # dropped its entries (a kernel that failed, an evicted trace, many shapes): calling
    # it then read freed memory (a segfault in a fresh process)
    f = gc.function(branchy, backend="numba")
    v = _values()
    _warm(f, v)
    want = branchy(gc.constant(v)).numpy()
    call = f.__call__
    entry = weakref.ref(type(f))
    f._trace_changed()                       # what a failed kernel's watcher does
    pygc.collect()
    assert type(f) is not entry()
    assert entry() is not None, "the bound method does not keep its entry class alive"
    junk = [bytearray(64) for _ in range(20000)]     # reuse freed memory, if any was freed
    for _ in range(3):
        _same(call(v).numpy(), want)
    del junk


def test_a_second_upgrade_leaves_the_first_native_entry_in_place(numba_forced):
    # two threads can both count an entry's last Python call (`_left[0] -= 1` is not
    # atomic) and both install it: the second install replaced `_native_keep`, freeing the
    # objects the first one's code reads by address while other threads still ran it
    f = gc.function(branchy, backend="numba")
    v = _values()
    _warm(f, v)
    cls = type(f)
    keep, call = cls._native_keep, cls.__dict__["__call__"]
    cls.py_call.__globals__["_upgrade"]()
    assert cls._native_keep is keep and cls.__dict__["__call__"] is call
    _same(f(v).numpy(), branchy(gc.constant(v)).numpy())
    assert _native(f)


def test_a_dropped_functions_machine_code_is_freed(numba_forced, monkeypatch):
    # one engine for all entries kept every entry's module and code for good: ~60 KB per
    # function made, called natively and dropped (800 of them: +48 MB of RSS)
    from llvmlite.binding.executionengine import ExecutionEngine
    pygc.collect()                       # earlier tests' entries: disposed before counting
    disposed = []
    dispose = ExecutionEngine._dispose
    monkeypatch.setattr(ExecutionEngine, "_dispose",
                        lambda self: (disposed.append(1), dispose(self))[1])
    v = _values()
    want = branchy(gc.constant(v)).numpy()
    for _ in range(3):
        f = gc.function(branchy, backend="numba")
        _warm(f, v)
        _same(f(v).numpy(), want)
        entry = weakref.ref(type(f))
        del f
        pygc.collect()
        assert entry() is None
    assert len(disposed) >= 3, "a dropped entry's machine code stays"


_MANY_ARGS = """
import faulthandler, threading
faulthandler.enable()
import numpy as np
import graphc as gc

f = gc.function(lambda x: gc.tanh(x) * 2.0, backend="numba")
v = np.ones(8, np.float32)
for _ in range(4):
    f(v)
assert type(type(f).__dict__["__call__"]).__name__ == "method_descriptor"

def many(n, kw):
    try:
        f(v, **{f"k{i}": v for i in range(n)}) if kw else f(*[v] * n)
    except TypeError as e:
        print(type(e).__name__)

threading.stack_size(256 * 1024)
for kw in (False, True):
    t = threading.Thread(target=many, args=(60000, kw))
    t.start()
    t.join()
many(3, False)
"""


def test_a_call_with_very_many_arguments_gets_the_python_entrys_error(kernel_env):
    # the call the native entry hands on copied its arguments to a stack array as long as
    # the call: 60,000 arguments overflowed a 256 KB thread stack, 2,000,000 the main
    # thread's (a segfault where the Python entry raises TypeError)
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(gc.__file__))     # this graphc, not an installed one
    env = dict(os.environ, GRAPHC_NATIVE_ENTRY="2",
               PYTHONPATH=os.pathsep.join([root] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    r = subprocess.run([sys.executable, "-c", _MANY_ARGS], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["TypeError"] * 3, r.stdout
