"""``eog-core validate`` and ``eog-core convert``: task files in, reports and rows out."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eog_core._json import decode_json
from eog_core.cli._common import EXIT_FAILED, EXIT_INPUT, EXIT_OK, emit_json, progress, table
from eog_core.errors import SchemaError
from eog_core.tasks import (
    DatabaseStateVerifier,
    Task,
    ToolSnapshot,
    iter_tasks,
    load_tool_snapshots,
    merge_tools,
    to_nemo_row,
)

__all__ = ["add_parsers"]

_NUMERIC = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")


def add_parsers(commands: Any) -> None:
    validate = commands.add_parser(
        "validate", help="check task files, directories and .jsonl rows",
        description="Parse tasks and report counts, verifier kinds and the data defects that "
                    "score wrongly upstream. Exits 1 when any task is invalid.",
        epilog="example: eog-core validate tasks/ rows.jsonl --tools tools/",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    validate.add_argument("paths", nargs="+", type=Path, help="task .json files, directories, .jsonl files")
    validate.add_argument("--tools", type=Path, help="directory of tool snapshots (*.json) to check tool names against")
    validate.add_argument("--json", action="store_true", help="machine output")
    validate.set_defaults(handler=run_validate)

    convert = commands.add_parser(
        "convert", help="tasks -> Responses-API rows (the format harnesses consume)",
        description="Write one row per task: system + user input, the task's tools with cleaned "
                    "JSON schemas, and the verifier metadata.",
        epilog="example: eog-core convert tasks/ --tools tools/ -o rows.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    convert.add_argument("paths", nargs="+", type=Path)
    convert.add_argument("--tools", type=Path, required=True, help="directory of tool snapshots")
    convert.add_argument("-o", "--output", type=Path, required=True, help="the .jsonl file to write")
    convert.add_argument("--json", action="store_true", help="print a JSON summary")
    convert.set_defaults(handler=run_convert)


def _each_task(paths: list[Path]) -> Iterator[Task | SchemaError]:
    """Every task of the paths; a malformed one is yielded as its error, and reading goes on."""
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl")) if path.is_dir() else [path]
        if path.is_dir() and not files:
            yield SchemaError("no .json or .jsonl task files in directory", source=str(path))
        for file in files:
            if file.suffix == ".jsonl":
                yield from _each_row(file)
            else:
                try:
                    yield from iter_tasks(file)
                except SchemaError as exc:
                    yield exc


def _each_row(file: Path) -> Iterator[Task | SchemaError]:
    try:
        lines = file.read_bytes().splitlines(keepends=True)
    except OSError as exc:
        yield SchemaError(f"cannot read file: {exc.strerror or exc}", source=str(file))
        return
    offset = 0
    for number, line in enumerate(lines, start=1):
        start, offset = offset, offset + len(line)
        if not line.strip():
            continue
        where = f"{file}:{number}"
        try:
            yield Task.from_upstream(decode_json(line, source=where, start=start), source=where)
        except SchemaError as exc:
            yield exc


def _findings(task: Task, snapshots: dict[str, ToolSnapshot] | None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    names = Counter(v.name for v in task.verifiers if v.name)
    for name, count in names.items():
        if count > 1:
            found.append({"kind": "duplicate_verifier_name", "detail": f"{name!r} x{count} (upstream keeps the last)"})
    gyms = {g.name for g in task.gym_servers}
    for index, verifier in enumerate(task.verifiers):
        if verifier.gym_name and verifier.gym_name not in gyms:
            found.append({"kind": "verifier_gym_not_in_task",
                          "detail": f"$.verifiers[{index}] gym {verifier.gym_name!r} (upstream skips it)"})
        if isinstance(verifier, DatabaseStateVerifier):
            expected = verifier.validation_config.expected_value
            if isinstance(expected, str) and _NUMERIC.fullmatch(expected):
                found.append({"kind": "numeric_string_expectation",
                              "detail": f"$.verifiers[{index}] expects {expected!r} (never == a number upstream)"})
    for gym in task.gym_servers:
        for key in gym.context:
            if key != key.strip() or not key.strip():
                found.append({"kind": "context_header_whitespace", "detail": f"gym {gym.name!r} header {key!r}"})
    if snapshots is not None:
        missing = merge_tools(task, snapshots).missing
        if missing:
            found.append({"kind": "tool_not_in_snapshots", "detail": ", ".join(missing)})
    return found


def run_validate(args: argparse.Namespace) -> int:
    snapshots = load_tool_snapshots(args.tools) if args.tools else None
    tasks: list[Task] = []
    errors: list[SchemaError] = []
    findings: dict[str, list[dict[str, Any]]] = {}
    for item in progress(_each_task(args.paths), "validating"):
        if isinstance(item, SchemaError):
            errors.append(item)
            continue
        tasks.append(item)
        if found := _findings(item, snapshots):  # keyed per row: one id may recur across modes
            findings[f"#{len(tasks)} {item.task_id or '?'} ({item.mode or '?'})"] = found
    per_group = Counter((t.domain or "?", t.mode or "?") for t in tasks)
    kinds = Counter(v.verifier_type for t in tasks for v in t.verifiers)
    totals = Counter(f["kind"] for found in findings.values() for f in found)
    if args.json:
        emit_json({"valid": len(tasks), "invalid": len(errors),
                   "errors": [{"source": e.source, "path": e.path, "message": e.reason} for e in errors],
                   "by_domain_mode": [{"domain": d, "mode": m, "tasks": n} for (d, m), n in sorted(per_group.items())],
                   "verifier_kinds": dict(kinds), "finding_counts": dict(totals), "findings": findings})
        return EXIT_FAILED if errors else EXIT_OK
    print(f"{len(tasks)} valid task(s), {len(errors)} invalid\n")
    if per_group:
        print(table(["domain", "mode", "tasks"], [(d, m, n) for (d, m), n in sorted(per_group.items())]))
        print("\nverifier kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    if totals:
        print("\nfindings:")
        for task_id, found in findings.items():
            for finding in found:
                print(f"  {task_id}: {finding['kind']}: {finding['detail']}")
        print("totals: " + ", ".join(f"{k} {n}" for k, n in sorted(totals.items())))
    for error in errors:
        print(f"invalid: {error}", file=sys.stderr)
    return EXIT_FAILED if errors else EXIT_OK


def run_convert(args: argparse.Namespace) -> int:
    snapshots = load_tool_snapshots(args.tools)
    rows, errors = [], []
    for item in progress(_each_task(args.paths), "converting"):
        if isinstance(item, SchemaError):
            errors.append(item)
        else:
            rows.append(to_nemo_row(item, snapshots))
    if errors:
        for error in errors:
            print(f"invalid: {error}", file=sys.stderr)
        print(f"nothing written: {len(errors)} invalid task(s)", file=sys.stderr)
        return EXIT_INPUT
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    if args.json:
        emit_json({"rows": len(rows), "output": str(args.output)})
    else:
        print(f"wrote {len(rows)} row(s) to {args.output}")
    return EXIT_OK
