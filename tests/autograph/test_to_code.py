"""to_code output: valid, readable, stable; the docs show real output; the CLI prints it."""
import linecache
import pathlib
import re
import subprocess
import sys

import pytest

import graphc as gc
from graphc.cli import main as cli_main
from .corpus import CORPUS

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_to_code_is_stable_and_has_no_internal_noise():
    for fn, _ in CORPUS:
        a, b = gc.autograph.to_code(fn), gc.autograph.to_code(fn)
        assert a == b
        assert "__graphc" not in a and "graphc_factory" not in a
        assert a.startswith(f"def {fn.__name__}(")
        compile(a, "<to_code>", "exec")


def test_to_code_of_straight_line_code_is_the_code():
    def plain(x, y):
        z = x * y
        return z + 1.0
    assert gc.autograph.to_code(plain) == "def plain(x, y):\n    z = x * y\n    return z + 1.0\n"


def test_to_code_accepts_gc_functions_methods_and_lambdas():
    @gc.function
    def decorated(x):
        return x if x > 0 else -x
    src = gc.autograph.to_code(decorated)
    assert src.startswith("def decorated(x):") and "@gc.function" not in src
    assert "ag__.if_exp" in src
    sq = lambda v: v * v if v > 0 else v  # noqa: E731
    assert gc.autograph.to_code(sq).startswith("lambda v: ag__.if_exp(")


def test_to_graph_runs_eagerly_like_the_original():
    def f(x):
        while x < 10.0:
            x = x * 3.0
        return x
    g = gc.autograph.to_graph(f)
    assert float(g(gc.constant(2.0))) == f(2.0) == 18.0


def test_docs_show_real_to_code_output():
    text = (ROOT / "docs" / "autograph.md").read_text()
    block = re.search(r"```python\n(def sum_until_negative.*?)print\(", text, re.S).group(1)
    shown = re.search(r"prints\n\n```text\n(.*?)```", text, re.S).group(1)
    name = "<docs-autograph-example>"
    linecache.cache[name] = (len(block), None, block.splitlines(True), name)
    ns = {"gc": gc}
    exec(compile(block, name, "exec"), ns)
    assert gc.autograph.to_code(ns["sum_until_negative"]) == shown


# -- the command line -------------------------------------------------------------------
SCRIPT = """import graphc as gc

LIMIT = 3


def break_on_negative(x, n):
    s = 0.0
    for i in range(n):
        if x[i] < 0:
            break
        s = s + x[i]
    return s
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "user_script.py"
    path.write_text(SCRIPT)
    return str(path)


def test_cli_prints_converted_source(capsys, script):
    assert cli_main(["to-code", f"{script}::break_on_negative"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def break_on_negative(x, n):") and "ag__.for_stmt" in out
    assert cli_main(["to-code", "tests.autograph.corpus:Scaler.__call__"]) == 0
    assert "def __call__(self, x):" in capsys.readouterr().out


def test_cli_bad_targets_give_one_line_and_status_2(capsys, script):
    for target in (f"{script}::no_such_function", "missing_dir/missing.py::f",
                   "no_such_module_xyz:f", script, f"{script}::LIMIT"):
        assert cli_main(["to-code", target]) == 2, target
        err = capsys.readouterr().err
        assert err.startswith("graphc to-code: error:") and err.count("\n") == 1, err


def test_cli_help_documents_the_command():
    r = subprocess.run([sys.executable, "-m", "graphc", "to-code", "--help"], cwd=ROOT,
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0
    assert "PATH.py::FUNC" in r.stdout and "module.sub:FUNC" in r.stdout
    assert "status 2" in r.stdout


def test_to_code_without_source_raises_oserror_saying_why():
    ns = {}
    exec("def made(x):\n    return x\n", ns)
    with pytest.raises(OSError, match="no source"):
        gc.autograph.to_code(ns["made"])
    with pytest.raises(TypeError, match="not a Python function"):
        gc.autograph.to_code(3)
