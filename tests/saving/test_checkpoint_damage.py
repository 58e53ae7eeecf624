"""Damaged checkpoint files: restore raises GraphcError naming the file and assigns nothing;
a killed save never leaves latest_checkpoint naming a checkpoint that fails to restore."""
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import graphc as gc
from graphc.errors import GraphcError


def _model(fill):
    m = gc.Module()
    m.w = gc.Variable(np.full((64, 32), fill, np.float32))
    m.b = gc.Variable(np.full(32, fill, np.float64))
    m.n = gc.Variable(np.int64(fill))
    return m


def _damaged_versions(raw, rng):
    cut = sorted(rng.sample(range(len(raw)), 6))
    flips = rng.sample(range(len(raw)), 12)
    for n in cut:
        yield f"truncated to {n}", raw[:n]
    for i in flips:
        yield f"bit flip at {i}", raw[:i] + bytes([raw[i] ^ (1 << rng.randrange(8))]) + raw[i + 1:]
    yield "pickle payload", pickle.dumps({"w": np.zeros((64, 32), np.float32)})


@pytest.mark.parametrize("which", ["index", "data"])
def test_damaged_file_raises_naming_it_and_assigns_nothing(tmp_path, which):
    path = gc.train.Checkpoint(model=_model(1)).save(tmp_path / "c")
    target = [os.path.join(tmp_path, f) for f in os.listdir(tmp_path)
              if f.startswith("c-1." + which)][0]
    raw = open(target, "rb").read()
    rng = random.Random(0)
    for what, bad in _damaged_versions(raw, rng):
        if which == "index" and bad.rstrip(b" \t\r\n") == raw.rstrip(b"\n"):
            continue            # only the trailing newline changed
        with open(target, "wb") as f:
            f.write(bad)
        fresh = _model(0)
        with pytest.raises(GraphcError) as info:
            gc.train.Checkpoint(model=fresh).restore(path)
        assert target in str(info.value), what
        assert all(not v.numpy().any() for v in fresh.variables), what


# A child process saving over and over with a CheckpointManager (which also deletes old
# checkpoints, numbered from a new start in each run) and rewriting one fixed prefix; every
# variable of checkpoint N holds N, so a restore shows whether it is whole.
_SAVER = textwrap.dedent("""
    import os, sys
    import numpy as np
    import graphc as gc
    m = gc.Module()
    m.big = gc.Variable(np.zeros(300_000, np.float32))
    m.small = [gc.Variable(np.zeros(3, np.int64)) for _ in range(4)]
    ckpt = gc.train.Checkpoint(model=m)
    manager = gc.train.CheckpointManager(ckpt, sys.argv[1], max_to_keep=2)
    print("ready", flush=True)
    for step in range(int(sys.argv[2]), 10 ** 9):
        m.big.assign(np.full(300_000, step % 2 ** 20, np.float32))
        for v in m.small:
            v.assign(np.full(3, step, np.int64))
        manager.save(checkpoint_number=step)
        ckpt.write(os.path.join(sys.argv[1], "fixed"))
""")


def _restore_whole(path):
    m = gc.Module()
    m.big = gc.Variable(np.zeros(300_000, np.float32))
    m.small = [gc.Variable(np.zeros(3, np.int64)) for _ in range(4)]
    gc.train.Checkpoint(model=m).restore(path).assert_consumed()
    step = int(m.small[0].numpy()[0])
    assert (m.big.numpy() == step % 2 ** 20).all()
    assert all((v.numpy() == step).all() for v in m.small)
    return step


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_killed_saves_never_break_the_latest_checkpoint(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(_SAVER)
    ckpt_dir = tmp_path / "ckpts"
    rng = random.Random(1)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(gc.__file__))] + sys.path))
    restored_steps = []
    for run in range(1, 25):
        child = subprocess.Popen([sys.executable, str(script), str(ckpt_dir), str(run * 10 ** 6)],
                                 stdout=subprocess.PIPE, env=env)
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL      # killed, not crashed on its own
        child.stdout.close()
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # a state file naming missing files fails
            latest = gc.train.latest_checkpoint(ckpt_dir)
        if latest is None:
            continue
        step = _restore_whole(latest)
        assert latest.endswith(f"ckpt-{step}")
        restored_steps.append(step)
        if os.path.exists(str(ckpt_dir / "fixed") + ".index"):
            _restore_whole(ckpt_dir / "fixed")
        # the manager of the next run picks up the same list; every listed one restores
        for kept in gc.train.CheckpointManager(gc.train.Checkpoint(), ckpt_dir).checkpoints:
            _restore_whole(kept)
    assert len(restored_steps) >= 12       # most kills land after some save completed
