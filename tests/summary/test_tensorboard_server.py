"""End to end: a real TensorBoard server (on 127.0.0.1, port chosen by the OS, stopped by
the test) serves what graphc wrote through its HTTP data API."""
import json
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

import graphc as gc

pytest.importorskip("tensorboard", reason="needs the tensorboard extra: "
                    "pip install 'graphc[tensorboard]'")

STARTUP_LIMIT_S = 90


def _write_logs(logdir):
    @gc.function(backend="numpy")
    def train_step(x, step):
        loss = gc.reduce_mean(x * x)
        gc.summary.scalar("loss", loss, step=step)
        return loss

    w = gc.summary.create_file_writer(logdir)
    with w.as_default():
        gc.summary.scalar("eager_lr", 0.5, step=0)
        gc.summary.trace_on(graph=True, profiler=True)
        losses = [float(train_step(np.full(3, s, np.float32), np.int64(s))) for s in range(4)]
        gc.summary.trace_export("train_trace", step=0)
    w.close()
    return losses


def _get(port, path, **query):
    url = f"http://127.0.0.1:{port}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=20) as r:
        return r.read().decode()


def test_tensorboard_serves_graphc_logs(tmp_path):
    losses = _write_logs(tmp_path / "logs")
    err = open(tmp_path / "tb.err", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(tmp_path / "logs"),
         "--port", "0", "--host", "127.0.0.1", "--load_fast", "false", "--reload_interval", "1"],
        stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline, port = time.monotonic() + STARTUP_LIMIT_S, None
        while port is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            err.seek(0)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", err.read())
            port = m and int(m.group(1))
        assert port, f"tensorboard did not start: {open(tmp_path / 'tb.err').read()[-2000:]}"
        while json.loads(_get(port, "/data/runs")) != ["."]:
            assert time.monotonic() < deadline, "tensorboard never listed the run"
            time.sleep(0.3)
        points = json.loads(_get(port, "/data/plugin/scalars/scalars", run=".", tag="loss"))
        assert [p[1] for p in points] == [0, 1, 2, 3]
        np.testing.assert_allclose([p[2] for p in points], losses, rtol=1e-6)
        assert json.loads(_get(port, "/data/plugin/scalars/scalars", run=".",
                               tag="eager_lr"))[0][1:] == [0, 0.5]
        info = json.loads(_get(port, "/data/plugin/graphs/info"))
        assert info["."]["run_graph"] is True and "train_trace" in info["."]["tags"]
        graph = _get(port, "/data/plugin/graphs/graph", run=".", conversions="false")
        for node in ("x", "reduce_sum_0", "summary_scalar_0"):
            assert f'name: "{node}"' in graph
        meta = _get(port, "/data/plugin/graphs/run_metadata", run=".", tag="train_trace")
        assert 'node_name: "summary_scalar_0"' in meta
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()
