"""The kernel cache runs only what this user's graphc wrote (issue 12, item 1).

Each test plants what an attacker (or a crash) could leave in the cache, then starts a new
process (tests/reliability/cache_child.py) that must ignore it, compile the kernel again, get
the right result, warn once naming the file, and leave the cache repaired for the next one.
"""
import importlib.util
import json
import os
import pathlib
import pickle
import subprocess
import sys
from importlib._bootstrap_external import _code_to_timestamp_pyc

import numpy as np
import pytest

pytest.importorskip("numba")

REPO = pathlib.Path(__file__).resolve().parents[2]
CHILD = pathlib.Path(__file__).with_name("cache_child.py")


@pytest.fixture
def dirs(tmp_path):
    """(cache root, fake HOME) for child processes; the HOME shows any numba cache leak."""
    root, home = tmp_path / "cache", tmp_path / "home"
    root.mkdir(mode=0o700)
    home.mkdir()
    return root, home


def run_child(dirs, fn="tanh", fault=None):
    """A new process computing `fn` with kernels forced on; its report, checked for a right
    result from a kernel that really ran."""
    root, home = dirs
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHC_CACHE_DIR=str(root), HOME=str(home),
               GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel")
    for name in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "GRAPHC_DEBUG"):
        env.pop(name, None)
    args = [sys.executable, str(CHILD), fn] + ([fault] if fault else [])
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["error"] is None and report["kernel_calls"] > 0, report
    np.testing.assert_allclose(report["y"], report["want"], rtol=1e-6)
    assert not (home / ".cache" / "numba").exists(), "numba cached code outside graphc's dir"
    return report


def machine_code(report):
    folder = pathlib.Path(report["module"]).parent / "__pycache__"
    return sorted(p for p in folder.iterdir() if p.suffix in (".nbc", ".nbi"))


def assert_warned_once_about(report, path):
    about = [w for w in report["warnings"] if str(path) in w]
    assert len(about) == 1, report["warnings"]


def test_warm_cache_is_used_without_warnings(dirs):
    first = run_child(dirs)
    second = run_child(dirs)
    assert first["status"] == "miss" and first["machine_code_hits"] == 0
    assert second["status"] == "hit" and second["machine_code_hits"] > 0
    assert first["warnings"] == second["warnings"] == []
    key = dirs[0] / "hmac.key"
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == 32


def test_utf7_code_in_comments_is_ignored_and_rebuilt(dirs, tmp_path):
    module = pathlib.Path(run_child(dirs)["module"])
    marker = tmp_path / "injected"
    lines = module.read_bytes().split(b"\n")
    # UTF-7 '+AAo-' is a newline: under the coding line, the comment below is code
    hidden = b"# +AAo-" + f"open({str(marker)!r}, 'w').close()".encode() + b"+AAo-\n"
    tampered = b"\n".join([lines[0], b"# -*- coding: utf-7 -*-"] + lines[1:]) + hidden
    module.write_bytes(tampered)
    # control: imported as Python would import it, the file runs the hidden line
    exec(compile(tampered, str(module), "exec"), {"__graphc_cache__": None})  # noqa: S102
    assert marker.exists()
    marker.unlink()

    second = run_child(dirs)
    assert not marker.exists(), "the tampered kernel module ran"
    assert second["status"] == "rebuilt" and second["stats"]["rebuilt"] == 1
    assert_warned_once_about(second, module)
    assert b"utf-7" not in module.read_bytes()
    third = run_child(dirs)
    assert (third["status"], third["warnings"]) == ("hit", [])
    assert third["machine_code_hits"] > 0


class _Touch:
    """Unpickling this creates `path`: a stand-in for os.system in a planted cache file."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def test_pickled_machine_code_is_never_unpickled(dirs, tmp_path):
    first = run_child(dirs)
    marker = tmp_path / "unpickled"
    evil = pickle.dumps(_Touch(marker))
    files = machine_code(first)
    assert files, "no machine code was cached"
    for path in files:              # with a seal line of the right shape but a forged MAC
        path.write_bytes(evil + b"# graphc seal " + b"0" * 64 + b"\n")
        base = path.name.rsplit(".", 2)[0]
        # and numba's own index and data names, which numba's cache would read
        (path.parent / f"{base}.nbi").write_bytes(evil)
        (path.parent / f"{base}.1.nbc").write_bytes(evil)

    second = run_child(dirs)
    assert not marker.exists(), "a planted pickle was loaded"
    assert second["status"] == "hit" and second["machine_code_hits"] == 0
    assert second["warnings"] and len(set(second["warnings"])) == len(second["warnings"])
    assert all(str(path.parent) in w for w in second["warnings"])
    third = run_child(dirs)
    assert not marker.exists()
    assert third["machine_code_hits"] > 0 and third["warnings"] == []


def test_planted_bytecode_is_never_imported(dirs, tmp_path):
    module = pathlib.Path(run_child(dirs)["module"])
    marker = tmp_path / "from-pyc"
    text = module.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n"
    st = module.stat()
    pyc = pathlib.Path(importlib.util.cache_from_source(str(module)))
    pyc.parent.mkdir(exist_ok=True)
    # stamped with the module's own mtime and size: what Python checks before using it
    pyc.write_bytes(_code_to_timestamp_pyc(compile(text, str(module), "exec"),
                                           st.st_mtime, st.st_size))
    second = run_child(dirs)
    assert not marker.exists(), "the planted .pyc was imported"
    assert second["status"] == "hit" and second["warnings"] == []


def test_a_sealed_file_moved_to_another_name_is_not_trusted(dirs):
    tanh = pathlib.Path(run_child(dirs, "tanh")["module"])
    sqrt = pathlib.Path(run_child(dirs, "sqrt")["module"])
    tanh.write_bytes(sqrt.read_bytes())     # graphc's own seal, but for another kernel
    again = run_child(dirs, "tanh")
    assert again["status"] == "rebuilt"
    assert_warned_once_about(again, tanh)


@pytest.mark.parametrize("fault", ["mode", "owner", "symlink", "fifo"])
def test_untrusted_key_file_is_replaced_and_the_cache_rebuilt(dirs, tmp_path, fault):
    first = run_child(dirs)
    key = dirs[0] / "hmac.key"
    old = key.read_bytes()
    sealed_before = {p: p.read_bytes() for p in machine_code(first)}
    if fault == "mode":
        os.chmod(key, 0o644)
    elif fault == "owner":
        os.chown(key, 12345, 12345)
    elif fault == "fifo":               # reading it must not block
        key.unlink()
        os.mkfifo(key, 0o600)
    else:
        elsewhere = tmp_path / "someone-elses.key"
        elsewhere.write_bytes(old)
        os.chmod(elsewhere, 0o600)
        key.unlink()
        key.symlink_to(elsewhere)
    second = run_child(dirs)
    assert_warned_once_about(second, key)
    assert second["status"] == "miss" and second["machine_code_hits"] == 0
    assert not key.is_symlink() and key.stat().st_mode & 0o777 == 0o600
    assert key.stat().st_uid == os.getuid() and key.read_bytes() != old
    # the old files were dropped with the old key: what is there now was sealed anew
    assert all(p.read_bytes() != b for p, b in sealed_before.items() if p.exists())
    third = run_child(dirs)
    assert (third["status"], third["warnings"]) == ("hit", [])


def _temp_files(root):
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names
            if n.startswith(".tmp") or ".tmp." in n]


def test_read_only_cache_compiles_caches_nothing_and_warns_once(dirs):
    report = run_child(dirs, fault="readonly")
    assert report["status"] == "miss"
    (warning,) = report["warnings"]
    assert "cannot write" in warning and str(dirs[0]) in warning
    assert list(dirs[0].iterdir()) == []


def test_read_only_warm_cache_is_still_read(dirs):
    run_child(dirs)
    before = sorted(p for p in dirs[0].rglob("*"))
    report = run_child(dirs, fault="readonly")
    assert report["status"] == "hit" and report["machine_code_hits"] > 0
    assert report["warnings"] == []
    assert sorted(p for p in dirs[0].rglob("*")) == before


def test_full_disk_leaves_no_temporary_files(dirs):
    run_child(dirs, "sqrt")                  # the key and one kernel exist
    report = run_child(dirs, "tanh", fault="enospc")
    assert report["status"] == "miss"
    (warning,) = report["warnings"]
    assert "cannot write" in warning and "No space left" in warning
    assert _temp_files(dirs[0]) == []
    assert not pathlib.Path(report["module"]).exists()
    again = run_child(dirs, "tanh")          # room again: cached as usual
    assert again["status"] == "miss" and again["warnings"] == []
    assert run_child(dirs, "tanh")["status"] == "hit"
