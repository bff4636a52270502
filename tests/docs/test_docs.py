"""Every Python block of the README and of docs/embedding.md runs against the local gym."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks(name: str) -> list[str]:
    return BLOCK.findall((REPO / name).read_text(encoding="utf-8"))


DOC_BLOCKS = [(name, i, code) for name in ("README.md", "docs/embedding.md", "docs/quickstart.md")
              for i, code in enumerate(blocks(name)) if "asyncio.run(" in code]


def test_the_documents_have_runnable_examples() -> None:
    assert {name for name, _, _ in DOC_BLOCKS} == {"README.md", "docs/embedding.md", "docs/quickstart.md"}
    assert len([b for b in DOC_BLOCKS if b[0] == "docs/embedding.md"]) == 3


@pytest.mark.parametrize(("name", "index", "code"), DOC_BLOCKS, ids=[f"{n}#{i}" for n, i, _ in DOC_BLOCKS])
def test_example_runs(name: str, index: int, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "-W", "error", str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, f"{name} block {index} failed:\n{done.stdout}\n{done.stderr}"
