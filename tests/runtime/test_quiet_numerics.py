"""Ops that make inf/nan do so silently, as in TF: no numpy RuntimeWarning from graphc's op
rules (eager, numpy backend, numba's numpy steps), while the user's own numpy code keeps
its warnings. Run in a child process started with `-W error::RuntimeWarning`: pytest puts
its own warning filters in front of graphc's for every test."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import numpy as np
    import graphc as gc
    x = gc.constant([np.inf, -1.0, 0.0, 1e38])

    def edge(x):
        return [gc.sin(x), gc.cos(x), gc.log(x), gc.sqrt(x), x - x, x * 10.0, 1.0 / (x * 0.0),
                gc.cast(x, gc.int32), gc.reduce_sum(x - x), x ** 2.0]

    eager = [t.numpy() for t in edge(x)]
    for backend in ("numpy", "numba"):
        got = [t.numpy() for t in gc.function(edge, backend=backend)(x)]
        for a, b in zip(eager, got):
            np.testing.assert_array_equal(a, b)
    print("quiet", np.isnan(eager[0][0]), eager[7][0])
    try:
        np.sin(np.inf)                  # the user's own numpy still warns
    except RuntimeWarning:
        print("user warning kept")
""")


def test_no_runtime_warnings_from_graphc_ops():
    env = dict(os.environ, PYTHONPATH=ROOT, GRAPHC_NUMBA_MIN_SIZE="0")
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", CHILD],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "quiet True -2147483648" in done.stdout
    assert "user warning kept" in done.stdout
