"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace).

A file with a `backend="cuda"` block runs in a child process on numba-cuda's simulator,
which must be on before numba.cuda is imported (see tests/conftest.py)."""
import linecache
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def run_blocks(path):
    namespace = {"__name__": f"doc_{path.stem}"}
    for i, block in enumerate(python_blocks(path)):
        name = f"{path.name}[block {i}]"
        # give the block a source (as a file would have), so AutoGraph can convert its functions
        linecache.cache[name] = (len(block), None, block.splitlines(True), name)
        code = compile(block, name, "exec")
        exec(code, namespace)


def _needs_cuda(path):
    return any('backend="cuda"' in b for b in python_blocks(path))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_code_blocks_run(path, capsys):
    from cuda_suites import cuda_suites_run_here
    if not _needs_cuda(path) or cuda_suites_run_here():
        run_blocks(path)
        return
    pytest.importorskip("numba_cuda")     # the test extra installs it: CI never skips
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, __file__, str(path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]


if __name__ == "__main__":
    run_blocks(pathlib.Path(sys.argv[1]))
