"""Every Python block of the docs runs, and so does every command of the quickstart."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks(name: str) -> list[str]:
    return BLOCK.findall((REPO / name).read_text(encoding="utf-8"))


# A block whose first line is ``# extra: <name>`` needs that optional extra: it runs in
# the adapter's nox session (tests_integrations/), not here.
DOC_BLOCKS = [(name, i, code) for name in ("README.md", "docs/embedding.md", "docs/quickstart.md")
              for i, code in enumerate(blocks(name))
              if "asyncio.run(" in code and not code.startswith("# extra:")]


def test_the_documents_have_runnable_examples() -> None:
    assert {name for name, _, _ in DOC_BLOCKS} == {"README.md", "docs/embedding.md", "docs/quickstart.md"}
    assert len([b for b in DOC_BLOCKS if b[0] == "docs/embedding.md"]) == 1
    extras = {code.splitlines()[0] for name in ("docs/embedding.md", "docs/scale-out.md")
              for code in blocks(name) if code.startswith("# extra:")}
    assert extras == {"# extra: nemo-gym", "# extra: stirrup", "# extra: inspect", "# extra: ray"}


@pytest.mark.parametrize(("name", "index", "code"), DOC_BLOCKS, ids=[f"{n}#{i}" for n, i, _ in DOC_BLOCKS])
def test_example_runs(name: str, index: int, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "-W", "error", str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, f"{name} block {index} failed:\n{done.stdout}\n{done.stderr}"


SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def quickstart_commands() -> list[str]:
    """The quickstart's shell lines, minus the installation (the test runs in this environment)."""
    text = (REPO / "docs/quickstart.md").read_text(encoding="utf-8")
    lines = [line.strip() for block in SHELL_BLOCK.findall(text) for line in block.splitlines()]
    return [line.removeprefix("python -m pip install . && ") for line in lines if line]


def test_the_quickstart_commands_run_from_a_clone_without_the_data(tmp_path: Path) -> None:
    """Each command, in order, from a folder holding only the repository's examples/."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    commands = quickstart_commands()
    assert any("verify" in c for c in commands) and any("score" in c for c in commands)
    for command in commands:
        words = shlex.split(command)
        assert words[0] in ("eog-core", "python"), command
        argv = [sys.executable, *(["-m", "eog_core"] if words[0] == "eog-core" else []), *words[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
