"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace)."""
import linecache
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_code_blocks_run(path, capsys):
    namespace = {"__name__": f"doc_{path.stem}"}
    for i, block in enumerate(python_blocks(path)):
        name = f"{path.name}[block {i}]"
        # give the block a source (as a file would have), so AutoGraph can convert its functions
        linecache.cache[name] = (len(block), None, block.splitlines(True), name)
        code = compile(block, name, "exec")
        exec(code, namespace)
