"""The fast lane's list names real tests, and what it keeps covers every package."""

from __future__ import annotations

import ast
from pathlib import Path

import eog_core
from tests.lanes import SAMPLED, SLOW

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def test_every_slow_entry_names_a_folder_a_file_or_a_test_that_exists() -> None:
    for entry in SLOW:
        where, _, name = entry.partition("::")
        path = REPO / where
        assert path.exists(), f"tests/lanes.py: {entry} names no file or folder"
        if name:
            assert name.split("[")[0].split("::")[0] in _test_names(path), (
                f"tests/lanes.py: {entry} names no test of {where}"
            )


def test_every_sampled_case_set_exists() -> None:
    for prefix, every in SAMPLED.items():
        where, _, name = prefix.partition("::")
        assert every > 1
        assert name.rstrip("[") in _test_names(REPO / where), f"tests/lanes.py: {prefix}"


def _fast_files(folder: Path) -> list[Path]:
    return [
        path
        for path in folder.rglob("test_*.py")
        if not any(
            f"{path.relative_to(REPO).as_posix()}".startswith(entry)
            for entry in SLOW
            if "::" not in entry
        )
        and any(n.startswith("test") for n in _test_names(path))
    ]


def test_the_fast_lane_keeps_tests_of_every_package() -> None:
    packages = sorted(
        p.name
        for p in Path(eog_core.__file__).parent.iterdir()
        if p.is_dir() and not p.name.startswith("_") and (TESTS / p.name).is_dir()
    )
    assert len(packages) >= 9  # cli, fleet, gateway, gym, local, metrics, report, run, tasks, ...
    bare = [name for name in packages if not _fast_files(TESTS / name)]
    assert not bare, f"the fast lane has no test file of {bare}"
