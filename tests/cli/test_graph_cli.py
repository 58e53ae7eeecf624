"""`graphc graph`: tracing a file or module function with --arg specs, in process and once
through `python -m graphc`."""
import os
import subprocess
import sys

import pytest

import graphc as gc
from graphc.cli import UsageError, main
from graphc.cli import graph as graph_cli

SAMPLE = '''
import graphc as gc

def chain(x, b):
    y = x * 1.0 + b
    return gc.exp(y) + gc.exp(y)

@gc.function
def count(n):
    return gc.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), [0, 0])[1]

class Model:
    @staticmethod
    def step(x):
        return gc.reshape(x, gc.shape(x)) * 2.0

def scale(x, k, mode):
    if mode == "double":
        return x * (2.0 * k)
    return x - k

NOT_A_FUNCTION = 3
'''


@pytest.fixture(autouse=True)
def no_backend_report(monkeypatch):
    """Keep these tests about the CLI: the numba backend's report is tested on its own and
    once below; here its hook points at a module that does not exist."""
    monkeypatch.setattr(graph_cli, "BACKEND_REPORT_HOOK", ("graphc._no_such_backend", "describe"))


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "sample_mod.py"
    path.write_text(SAMPLE)
    return path


def run_cli(capsys, *argv):
    code = main(["graph", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_traced_and_optimized_graphs(sample, capsys):
    code, out, err = run_cli(capsys, f"{sample}::chain", "--arg", "float32[4,3]",
                             "--arg", "float32[3]")
    assert code == 0 and err == ""
    traced, optimized = out.rstrip("\n").split("\n\n")[:2]
    assert traced.startswith("// traced graph (6 ops)\ngraph chain(%x: float32[4,3], "
                             "%b: float32[3]) {")
    assert traced.count("exp(") == 2 and "multiply" in traced
    assert optimized == """\
// optimized graph (3 ops)
graph chain(%x: float32[4,3], %b: float32[3]) {
  %add_0: float32[4,3] = add(%x, %b)
  %exp_0: float32[4,3] = exp(%add_0)
  %add_1: float32[4,3] = add(%exp_0, %exp_0)
  return %add_1
}"""


def test_gc_function_with_unknown_dims_and_scalars(sample, capsys):
    code, out, _ = run_cli(capsys, f"{sample}::count", "--arg", "int32[]")
    assert code == 0 and "graph count(%n: int32[])" in out and "while(" in out
    code, out, _ = run_cli(capsys, f"{sample}::Model.step", "--arg", "float64[?,2]")
    assert code == 0 and "graph step(%x: float64[?,2])" in out
    code, out, _ = run_cli(capsys, f"{sample}::Model.step", "--arg", "float64[5,2]")
    optimized = out.split("// optimized graph")[1]
    assert optimized.startswith(""" (2 ops)
graph step(%x: float64[5,2]) {
  %constant_0: float64[] = constant() {value=2.}
  %multiply_0: float64[5,2] = multiply(%x, %constant_0)
  return %multiply_0
}""")


def test_module_form(sample, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(sample.parent))
    code, out, _ = run_cli(capsys, "sample_mod:chain", "--arg", "float32[2]", "--arg",
                           "float32[None]")
    assert code == 0 and "graph chain(%x: float32[2], %b: float32[?])" in out


def test_dump_option_prints_the_pass_to_stderr(sample, capsys):
    code, out, err = run_cli(capsys, f"{sample}::chain", "--arg", "float32[3]", "--arg",
                             "float32[3]", "--dump", "cse")
    assert code == 0 and err.startswith("// graphc: graph chain after pass cse\n")


@pytest.mark.parametrize("argv, message", [
    (["{d}/missing.py::f"], "no such file: {d}/missing.py"),
    (["{s}::nope", "--arg", "float32[3]"], "no function 'nope' in {s}"),
    (["{s}::NOT_A_FUNCTION"], "'NOT_A_FUNCTION' in {s} is a int, not a function"),
    (["{s}::"], "no function name after the separator"),
    (["{s}"], "expected PATH.py::FUNC or module.sub:FUNC"),
    (["no_such_module_xyz:f"], "no module named 'no_such_module_xyz'"),
    (["{s}::chain", "--arg", "float32"], "bad --arg spec 'float32': expected dtype[d0,d1,...]"),
    (["{s}::chain", "--arg", "float33[3]"], "unknown dtype 'float33'"),
    (["{s}::chain", "--arg", "float32[3,-1]"], "dimension '-1' must be a non-negative int"),
    (["{s}::chain", "--arg", "float32[3]"], "tracing {s}::chain with (float32[3]) failed: "
                                            "TypeError"),
    (["{s}::chain", "--arg", "float32[3]", "--arg", "float32[4]"],
     "failed: ValueError: add: incompatible shapes for broadcasting: [3] and [4]"),
    (["{s}::chain", "--dump", "nonsense"], "--dump 'nonsense': no such pass"),
])
def test_errors_are_one_line_with_status_2(sample, capsys, argv, message):
    fmt = dict(d=sample.parent, s=sample)
    code, out, err = run_cli(capsys, *[a.format(**fmt) for a in argv])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("graphc graph: error: ")
    assert message.format(**fmt) in err


def test_a_broken_user_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import graphc as gc\nraise RuntimeError('boom at import')\n")
    code, _, err = run_cli(capsys, f"{bad}::f")
    assert code == 2 and err.count("\n") == 1
    assert "importing" in err and "RuntimeError: boom at import" in err


def test_python_literal_args_are_baked_in(sample, capsys):
    code, out, _ = run_cli(capsys, f"{sample}::scale", "--arg", "float32[2]", "--arg", "3",
                           "--arg", "'double'")
    assert code == 0 and "constant() {value=6.}" in out and "subtract" not in out
    code, out, _ = run_cli(capsys, f"{sample}::scale", "--arg", "float32[2]", "--arg", "0.5",
                           "--arg", "None")
    assert code == 0 and "subtract(%x, %constant_0)" in out and "{value=0.5}" in out
    code, _, err = run_cli(capsys, f"{sample}::scale", "--arg", "[1, 2]")
    assert code == 2 and "bad --arg spec '[1, 2]'" in err and "Python literal" in err


def test_parse_spec():
    s = graph_cli.parse_spec(" int64[ ?, 3 ,None] ")
    assert s.shape == (None, 3, None) and s.dtype is gc.int64
    assert graph_cli.parse_spec("bool[]").shape == ()
    assert graph_cli.parse_spec("True") is True and graph_cli.parse_spec("-2") == -2
    with pytest.raises(UsageError, match=r"dimension '3\.5'"):
        graph_cli.parse_spec("float32[3.5]")


def test_plain_functions_are_wrapped_and_gc_functions_kept(sample):
    f = graph_cli.load_function(f"{sample}::chain")
    g = graph_cli.load_function(f"{sample}::count")
    assert isinstance(f, gc.Function) and isinstance(g, gc.Function)
    assert g.python_function.__name__ == "count"


def test_backend_report_hook(monkeypatch, sample, capsys):
    import types
    fake = types.ModuleType("graphc.kernels.cpu.backend")
    fake.describe = lambda graph: f"// fusion groups of {graph.name}: 1\n"
    monkeypatch.setitem(sys.modules, "graphc.kernels.cpu.backend", fake)
    monkeypatch.setattr(graph_cli, "BACKEND_REPORT_HOOK", ("graphc.kernels.cpu.backend", "describe"))
    code, out, _ = run_cli(capsys, f"{sample}::chain", "--arg", "float32[3]", "--arg",
                           "float32[3]")
    assert code == 0 and out.rstrip().endswith("// fusion groups of chain: 1")


def test_help_documents_the_spec_syntax(capsys):
    with pytest.raises(SystemExit) as e:
        main(["graph", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    for text in ("PATH.py::FUNC", "module.sub:FUNC", "--arg", "dtype[d0,d1,...]", "--dump",
                 "exit with status 2"):
        assert text in out


def test_python_dash_m_subprocess(sample):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    ok = subprocess.run([sys.executable, "-m", "graphc", "graph", f"{sample}::chain", "--arg",
                         "float32[2,3]", "--arg", "float32[3]"], capture_output=True,
                        text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "// optimized graph" in ok.stdout and "graph chain(%x: float32[2,3]" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "graphc", "graph", f"{sample}::chain", "--arg",
                          "float32[2,x]"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "graphc graph: error: bad --arg spec 'float32[2,x]': dimension 'x' must be a "
        "non-negative int, ? or None"]


def test_the_real_numba_report_follows_the_optimized_graph(monkeypatch, sample, capsys):
    cpu = pytest.importorskip("graphc.kernels.cpu.backend")
    if not hasattr(cpu, "describe"):
        pytest.skip("the numba backend has no describe() yet")
    monkeypatch.setattr(graph_cli, "BACKEND_REPORT_HOOK", ("graphc.kernels.cpu.backend", "describe"))
    code, out, _ = run_cli(capsys, f"{sample}::chain", "--arg", "float32[3]", "--arg",
                           "float32[3]")
    sections = out.split("\n\n")
    assert code == 0 and len(sections) >= 3 and sections[1].startswith("// optimized graph")
    assert sections[2].strip()


def test_a_reader_that_stops_early_gets_no_traceback(sample):
    """`graphc graph ... | head -1`: the writer stops quietly with status 141 (SIGPIPE)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.Popen([sys.executable, "-m", "graphc", "graph", f"{sample}::chain",
                             "--arg", "float32[2,3]", "--arg", "float32[3]"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.readline()
    proc.stdout.close()                  # the reader goes away after one line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 141)   # 0: all was written before the close
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
