"""Oracle and counterexample scripts (``--scripts DIR``, agentrelbench 0.1.0's layout).

One folder per task id, anywhere under DIR, holding ``oracle.script.json`` and
``counterexamples/*.script.json``. Each file is ``{"expected": {...}, "script":
[turns]}``; a turn is ``{"tool_calls": [{"name", "arguments"}]}`` or ``{"content":
text}``. A script becomes a :class:`~eog_core.local.ScriptedModel` script (a list of
tool-call lists and a final text), played through ``run``'s agent loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core.errors import SchemaError

__all__ = [
    "ORACLE_FILE",
    "SCRIPT_SUFFIX",
    "Script",
    "TaskScripts",
    "index_scripts",
    "load_script",
    "load_task_scripts",
]

ORACLE_FILE = "oracle.script.json"
SCRIPT_SUFFIX = ".script.json"
COUNTEREXAMPLES = "counterexamples"
_FINAL_TEXT = "Done."


@attrs.frozen(kw_only=True)
class Script:
    """One scripted trajectory: its name (the file's stem), what its author expects, its turns."""

    name: str
    path: Path
    expected: Mapping[str, Any]
    turns: tuple[list[dict[str, Any]] | str, ...]

    @property
    def expects_success(self) -> bool:
        """Whether its author expects EOG's verdict to pass (``expected.eog_success``): true
        for an oracle; for a counterexample only where it says so (agentrelbench ships a few
        that pass EOG and fail on damage alone)."""
        return self.expected.get("eog_success") is True

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call of the script, in order (what a prefix replays)."""
        return [call for turn in self.turns if isinstance(turn, list) for call in turn]

    def model_script(self) -> list[list[dict[str, Any]] | str]:
        """The turns as the scripted model plays them, ending in a final text (a script
        that ends in tool calls would otherwise repeat its last turn)."""
        turns: list[list[dict[str, Any]] | str] = list(self.turns)
        if not turns or not isinstance(turns[-1], str):
            turns.append(_FINAL_TEXT)
        return turns


@attrs.frozen(kw_only=True)
class TaskScripts:
    """A task's oracle (or None) and counterexamples (sorted by name)."""

    folder: Path
    oracle: Script | None
    counterexamples: tuple[Script, ...]


def _turn(obj: Any, where: str, source: str) -> list[dict[str, Any]] | str:
    if isinstance(obj, Mapping) and isinstance(obj.get("content"), str) and "tool_calls" not in obj:
        text: str = obj["content"]
        return text
    calls = obj.get("tool_calls") if isinstance(obj, Mapping) else None
    if not isinstance(calls, list) or not calls:
        raise SchemaError(
            'a turn is {"tool_calls": [...]} (at least one) or {"content": text}',
            path=where,
            source=source,
        )
    turn = []
    for i, call in enumerate(calls):
        arguments = call.get("arguments", {}) if isinstance(call, Mapping) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = None
        if (
            not isinstance(call, Mapping)
            or not isinstance(call.get("name"), str)
            or not isinstance(arguments, Mapping)
        ):
            raise SchemaError(
                "a tool call is {name: string, arguments: object}",
                path=f"{where}.tool_calls[{i}]",
                source=source,
            )
        turn.append({"name": call["name"], "arguments": dict(arguments)})
    return turn


def load_script(path: Path) -> Script:
    """Read one ``*.script.json``; a SchemaError naming the file and JSON path when malformed."""
    source = str(path)
    try:
        obj = json.loads(path.read_bytes())
    except OSError as exc:
        raise SchemaError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    except ValueError as exc:
        raise SchemaError(f"not JSON ({exc})", source=source) from None
    if not isinstance(obj, Mapping) or not isinstance(obj.get("script"), list):
        raise SchemaError('a script file is {"expected": {...}, "script": [turns]}', source=source)
    expected = obj.get("expected", {})
    if not isinstance(expected, Mapping):
        raise SchemaError("expected must be an object", path="$.expected", source=source)
    turns = tuple(_turn(t, f"$.script[{i}]", source) for i, t in enumerate(obj["script"]))
    return Script(
        name=path.name.removesuffix(SCRIPT_SUFFIX), path=path, expected=expected, turns=turns
    )


def load_task_scripts(folder: Path) -> TaskScripts:
    """The scripts of one task folder (either part may be absent)."""
    oracle = folder / ORACLE_FILE
    found = sorted((folder / COUNTEREXAMPLES).glob("*" + SCRIPT_SUFFIX))
    return TaskScripts(
        folder=folder,
        oracle=load_script(oracle) if oracle.is_file() else None,
        counterexamples=tuple(load_script(path) for path in found),
    )


def index_scripts(root: Path) -> dict[str, Path]:
    """Folder name -> folder, for every folder under ``root`` holding scripts.

    Raises SchemaError for a root that is not a folder or two script folders of one name.
    """
    if not root.is_dir():
        raise SchemaError("--scripts is not a folder", source=str(root))
    found: dict[str, Path] = {}
    for folder in sorted([root, *(p for p in root.rglob("*") if p.is_dir())]):
        if not (folder / ORACLE_FILE).is_file() and not (folder / COUNTEREXAMPLES).is_dir():
            continue
        if folder.name in found:
            raise SchemaError(
                f"two script folders are named {folder.name!r}: {found[folder.name]} and {folder}",
                source=str(root),
            )
        found[folder.name] = folder
    return found
