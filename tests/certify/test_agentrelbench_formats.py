"""agentrelbench 0.1.0's shipped formats through ``certify``'s loaders: its 33 task folders
(``suite/tasks`` and ``suite/tasks-escalated``), their ``task.json`` files and their oracle and
counterexample scripts (``nox -s agentrelbench`` installs it from PyPI and requires it).

Skipped where agentrelbench is not installed, unless ``EOG_REQUIRE_AGENTRELBENCH=1`` (the nox
session sets it; the default suite under ``CI=true`` runs without the package).
"""

from __future__ import annotations

import json
import os
from importlib import resources
from importlib.util import find_spec
from pathlib import Path

import pytest

from eog_core.certify import TaskSource, index_scripts, load_sources, load_task_scripts, sha256_hex

if find_spec("agentrelbench") is None:
    if os.environ.get("EOG_REQUIRE_AGENTRELBENCH") == "1":
        pytest.fail("agentrelbench is not installed (nox -s agentrelbench installs 0.1.0)")
    pytest.skip("agentrelbench is not installed (nox -s agentrelbench)", allow_module_level=True)

SUITE = Path(str(resources.files("agentrelbench"))) / "suite"
PARTS = {"tasks": 20, "tasks-escalated": 13}
"""Task folders per part of the suite, as agentrelbench 0.1.0 ships them."""


def task_folders() -> dict[str, Path]:
    return {
        task.parent.name: task.parent
        for part in PARTS
        for task in (SUITE / part).rglob("task.json")
    }


@pytest.fixture(scope="module")
def sources() -> list[TaskSource]:
    return load_sources([SUITE / part for part in PARTS], seed_root=SUITE)


def test_the_33_task_folders_load_as_tasks_named_by_their_folders(
    sources: list[TaskSource],
) -> None:
    folders = task_folders()
    assert len(folders) == sum(PARTS.values()) == 33
    for part, count in PARTS.items():
        assert len(load_sources([SUITE / part], seed_root=SUITE)) == count
    assert sorted(s.task.task_id or "" for s in sources) == sorted(folders)
    for source in sources:
        task_file = folders[source.task.task_id or ""] / "task.json"
        assert source.file == str(task_file)
        assert source.sha256 == sha256_hex(task_file.read_bytes())
        assert source.task.verifiers, source.file
        assert "task_id" not in json.loads(task_file.read_bytes())  # the folder names it
        for gym in source.task.gym_servers:
            seed = source.seed_files[gym.name]
            assert seed["sha256"] == sha256_hex(Path(seed["path"]).read_bytes())


def test_every_script_parses_and_calls_only_its_task_s_tools(sources: list[TaskSource]) -> None:
    indexed = index_scripts(SUITE)
    assert indexed == task_folders()
    read = 0
    for source in sources:
        scripts = load_task_scripts(indexed[source.task.task_id or ""])
        assert scripts.oracle is not None and scripts.oracle.expects_success
        assert scripts.oracle.tool_calls, scripts.oracle.path
        on_disk = sorted((scripts.folder / "counterexamples").glob("*.script.json"))
        assert [s.path for s in scripts.counterexamples] == on_disk
        selected = set(source.task.selected_tools or ())
        for script in (scripts.oracle, *scripts.counterexamples):
            read += 1
            assert script.turns, script.path
            assert isinstance(script.model_script()[-1], str)  # the scripted model ends in text
            assert {call["name"] for call in script.tool_calls} <= selected, script.path
    assert read == len(list(SUITE.rglob("*.script.json"))) == 132
    expecting_success = [
        s.name
        for source in sources
        for s in load_task_scripts(indexed[source.task.task_id or ""]).counterexamples
        if s.expects_success
    ]
    assert sorted(expecting_success) == sorted(["alt_narrow_filter", "case_only_filter"] * 2)
