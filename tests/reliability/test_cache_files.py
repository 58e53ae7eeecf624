"""Kernel cache directories, choices.json and failed writes (issue 12, item 1), in process.

`fresh` gives each test its own cache root and forgets what this process knew about cache
roots, choices and loaded kernels, so a call behaves as in a new process.
"""
import errno
import json
import os
import shutil
import threading
import types
import warnings

import numpy as np
import pytest

import graphc as gc
from graphc.kernels import cache, cache_trust
from graphc.kernels.cpu import kernel as cpu_kernel
from graphc.kernels.cache_trust import KernelCacheWarning

pytest.importorskip("numba")


@pytest.fixture
def fresh(tmp_path, monkeypatch, numba_forced):
    root = tmp_path / "cache"
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(root))

    def new_process():
        monkeypatch.setattr(cache, "_ROOTS", {})
        monkeypatch.setitem(cache._state, "dir", None)
        monkeypatch.setitem(cache._state, "choices", None)
        monkeypatch.setattr(cpu_kernel, "_KERNELS", {})
    new_process()
    return types.SimpleNamespace(root=root, new_process=new_process, forced=numba_forced)


X = np.linspace(0.25, 2.0, 7, dtype=np.float32)


def run(fresh, expect_kernel=True):
    """One new function calling a kernel: its result is checked, its cache warnings returned."""
    f = gc.function(lambda x: gc.tanh(x * 0.5) * 2.0 - x, backend="numba")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if expect_kernel:
            with fresh.forced.expect(kernels=True):
                y = f(X)
        else:
            y = f(X)
    np.testing.assert_allclose(y.numpy(), np.tanh(X * 0.5) * 2 - X, rtol=1e-6, atol=1e-7)
    return [str(w.message) for w in caught if issubclass(w.category, KernelCacheWarning)]


def listing(path):
    return sorted((d, tuple(sorted(names))) for d, _, names in os.walk(path, followlinks=True))


LEVELS = {"root": "", "kernels": "kernels", "machine code": "kernels/__pycache__"}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("fault", ["writable by others", "foreign owner", "symlink"])
def test_untrusted_directory_level_is_never_used(fresh, tmp_path, level, fault):
    assert run(fresh) == []
    fresh.new_process()
    path = fresh.root / LEVELS[level]
    if fault == "writable by others":
        os.chmod(path, 0o777)
    elif fault == "foreign owner":
        os.chown(path, 12345, 12345)
    else:                      # the same files, in a directory of someone else's
        elsewhere = tmp_path / "elsewhere"
        shutil.copytree(path, elsewhere, symlinks=True)
        os.chown(elsewhere, 12345, 12345)
        shutil.rmtree(path)
        os.symlink(elsewhere, path)
    before = listing(path)
    (warning,) = run(fresh)
    assert str(path) in warning and "private directory" in warning
    assert {"writable by others": "writable by others", "foreign owner": "owned by uid 12345",
            "symlink": "symbolic link" if level != "root" else "owned by uid 12345"}[fault] \
        in warning
    assert listing(path) == before, "something was written into an untrusted directory"
    used = cache.cache_dir()
    assert not used.startswith(str(fresh.root)) and not os.stat(used).st_mode & 0o077
    assert os.path.isfile(os.path.join(used, "kernels", os.path.basename(
        cache._module_path(next(iter(cpu_kernel._KERNELS))))))


def test_root_may_be_a_symlink_to_a_directory_of_ours(fresh, tmp_path):
    real = tmp_path / "real-cache"
    real.mkdir(mode=0o700)
    fresh.root.symlink_to(real)
    assert run(fresh) == []
    assert cache.cache_dir() == str(real) and os.listdir(real / "kernels")


def test_no_cache_directory_at_all_is_not_an_error(fresh, monkeypatch):
    def no_directory():
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cache, "_root", no_directory)
    assert cache.get_choice("some-kernel", "4") is None
    cache.put_choice("some-kernel", "4", {"choice": "numpy"})       # nothing to raise


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_module_file_that_is_not_a_regular_file_is_rebuilt(fresh, tmp_path, kind):
    run(fresh)
    (key,) = cpu_kernel._KERNELS
    module = cache._module_path(key)
    copy = tmp_path / "copy.py"
    shutil.copy(module, copy)          # sealed by graphc, but not in the cache's own file
    os.remove(module)
    if kind == "symlink":
        os.symlink(copy, module)
    else:
        os.mkfifo(module, 0o600)       # reading it must not block
    fresh.new_process()
    (warning,) = run(fresh)
    assert module in warning
    assert not os.path.islink(module) and cpu_kernel._KERNELS[key].status == "rebuilt"


# -- choices.json --------------------------------------------------------------------------

def _choices_file(fresh):
    return fresh.root / "choices.json"


def _sealed_choices(fresh):
    payload, present = cache._root().read(str(_choices_file(fresh)))
    assert present and payload is not None, "choices.json is not sealed by graphc"
    return json.loads(payload)


@pytest.mark.parametrize("sealed", [False, True], ids=["planted", "sealed"])
@pytest.mark.parametrize("damage", ["[]", "{KEY: []}", "{KEY: {CLS: 5}}", "{KEY: 'x'}",
                                    "{KEY: {CLS: {'choice': 'kernel', 'variant': []}}}",
                                    "{KEY: {CLS: {'choice': 'kernel', 'kernel_s': 'fast'}}}",
                                    "{KEY: {CLS: {'choice': 'gpu'}}}", "'not json'"])
def test_damaged_choices_are_dropped_and_measured_again(fresh, monkeypatch, damage, sealed):
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "measure")
    run(fresh)
    ((key, classes),) = _sealed_choices(fresh).items()
    (cls,) = classes
    data = eval(damage, {"KEY": key, "CLS": cls})  # noqa: S307 - the test's own literals
    if sealed and isinstance(data, dict):   # beside an entry that is fine
        data = {"other-kernel": {"4": {"choice": "numpy"}}, **data}
    text = json.dumps(data).encode() if damage != "'not json'" else b"{not json"
    if sealed:              # what a graphc bug (or an older graphc) could have written
        text = cache_trust.seal(cache._root().key, "choices.json", text)
    _choices_file(fresh).write_bytes(text)
    fresh.new_process()
    (warning,) = run(fresh)
    assert str(_choices_file(fresh)) in warning
    # the next call finds it repaired; the measured choice may be the numpy rules (a loaded
    # machine timed the 7-element kernel slower), and then no kernel runs on that call
    assert run(fresh, expect_kernel=False) == []
    assert cache.get_choice(key, cls)["choice"] in ("kernel", "numpy")
    entry = _sealed_choices(fresh)[key][cls]
    assert entry["kernel_s"] > 0 and entry["numpy_s"] > 0       # measured again, not read
    if sealed and damage.startswith("{"):
        assert _sealed_choices(fresh)["other-kernel"] == {"4": {"choice": "numpy"}}


# -- failed writes ---------------------------------------------------------------------------

def test_failed_atomic_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "file"
    target.write_bytes(b"old")

    def full_disk(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cache_trust, "_write_all", full_disk)
    with pytest.raises(OSError, match="No space"):
        cache_trust.write_atomic(str(target), b"new")
    assert os.listdir(tmp_path) == ["file"] and target.read_bytes() == b"old"


def test_machine_code_that_cannot_be_saved_still_runs(fresh, monkeypatch):
    real_load = cpu_kernel.Kernel.load

    def load_then_fill_disk(kernel):
        real_load(kernel)           # the module is written; numba's save then fails
        monkeypatch.setattr(cache_trust, "_write_all", _no_space)
    monkeypatch.setattr(cpu_kernel.Kernel, "load", load_then_fill_disk)
    (warning,) = run(fresh)
    assert "cannot write" in warning and str(fresh.root) in warning
    machine = fresh.root / "kernels" / "__pycache__"
    assert [n for n in os.listdir(machine)] == []           # nothing, not even a temp file
    assert not [n for n in os.listdir(fresh.root / "kernels") if n.startswith(".tmp")]


def _no_space(fd, data):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_threads_loading_kernels_at_once_share_one_cache(fresh):
    ops = [(gc.exp, np.exp), (gc.sin, np.sin), (gc.sqrt, np.sqrt), (gc.log1p, np.log1p)]
    fns = [lambda x, op=op: op(x * 0.5) - x for op, _ in ops]
    results, errors = [None] * 4, []

    def call(k):
        try:
            results[k] = gc.function(fns[k], backend="numba")(X).numpy()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fresh.forced.expect(kernels=True):
            threads = [threading.Thread(target=call, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert errors == [] and not [w for w in caught if w.category is KernelCacheWarning]
    for k in range(4):
        np.testing.assert_allclose(results[k], ops[k][1](X * 0.5) - X, rtol=1e-6, atol=1e-7)
    assert len(cpu_kernel._KERNELS) == 4
    for key, kernel in cpu_kernel._KERNELS.items():
        payload, _ = cache._root().read(cache._module_path(key))
        assert payload is not None and kernel.status == "miss"
