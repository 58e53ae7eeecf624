"""The native hot entry (runtime/native_entry.py) under misuse: what outlives an entry
class, installs racing each other, ... Each test holds something the machine code reads by
address and checks it is still alive (and gives eager's answer) when it is used."""
import gc as pygc
import weakref

import numpy as np
import pytest

import graphc as gc
from graphc.runtime import native_layout

from test_loop_call_entry import branchy
from test_native_entry import _native, _same, _values, _warm

pytestmark = [pytest.mark.usefixtures("kernel_env"),
              pytest.mark.skipif(native_layout._probe() is None or not native_layout._supported(),
                                 reason="no native entries on this interpreter")]


@pytest.fixture(autouse=True)
def native_after_two(monkeypatch):
    monkeypatch.setenv("GRAPHC_NATIVE_ENTRY", "2")


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
