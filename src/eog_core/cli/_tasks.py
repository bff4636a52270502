"""``eog-core validate`` and ``eog-core convert``: task files in, reports and rows out."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import attrs

from eog_core._json import decode_json
from eog_core.certify import StaticFinding, task_findings
from eog_core.cli._common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    add_command,
    emit_json,
    progress,
    table,
)
from eog_core.cli._selection import add_selection_options, selected
from eog_core.errors import SchemaError
from eog_core.fleet import missing_seed_files
from eog_core.tasks import (
    MISSING_MODE,
    TASK_SUFFIXES,
    Task,
    load_task,
    load_tool_snapshots,
    parquet_rows,
    task_from_mapping,
    task_from_row,
    to_nemo_row,
)

__all__ = ["add_parsers"]


def add_parsers(commands: Any) -> None:
    validate = add_command(
        commands,
        "validate",
        help="check task files, directories and .jsonl rows",
        description="Parse tasks and report counts, verifier kinds, the data defects that score "
        "wrongly upstream, and what verify would reject (no verifiers, a verifier "
        "without a query, an unknown comparison or verifier type, a gym the task "
        "lacks). Each finding names its file (and line, for .jsonl) and JSON path. "
        "Exits 1 when a task is invalid or would be rejected.",
        epilog="example: eog-core validate tasks/ rows.jsonl --tools tools/",
    )
    validate.add_argument(
        "paths", nargs="+", type=Path, help="task .json files, directories, .jsonl files"
    )
    validate.add_argument(
        "--tools",
        type=Path,
        help="directory of tool snapshots (*.json) to check tool names against",
    )
    validate.add_argument(
        "--max-findings",
        type=int,
        default=50,
        metavar="N",
        help="print at most N findings and N invalid tasks (default 50; 0: all)",
    )
    validate.add_argument(
        "--json", action="store_true", help="machine output, every finding in full"
    )
    validate.add_argument(
        "--seed-root",
        type=Path,
        metavar="DIR",
        help="also check that each task's seed SQL file is under DIR",
    )
    add_selection_options(validate)
    validate.set_defaults(handler=run_validate)

    convert = add_command(
        commands,
        "convert",
        help="tasks -> Responses-API rows (the format harnesses consume)",
        description="Write one row per task: system + user input, the task's tools with cleaned "
        "JSON schemas, and the verifier metadata.",
        epilog="example: eog-core convert tasks/ --tools tools/ -o rows.jsonl",
    )
    convert.add_argument(
        "paths", nargs="+", type=Path, help="task .json files, directories, .jsonl files"
    )
    convert.add_argument("--tools", type=Path, required=True, help="directory of tool snapshots")
    convert.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="the .jsonl file to write ('-': standard output)",
    )
    convert.add_argument("--json", action="store_true", help="print a JSON summary")
    add_selection_options(convert)
    convert.set_defaults(handler=run_convert)


@attrs.frozen
class _Read:
    """One task read (or the error reading it), where it came from, and its format."""

    item: Task | SchemaError
    source: str
    nemo_row: bool = False


def _is_nemo_row(raw: object) -> bool:
    return isinstance(raw, dict) and "verifier_metadata" in raw


def _each_task(paths: list[Path]) -> Iterator[_Read]:
    """Every task of the paths; a malformed one is yielded as its error, and reading goes on."""
    for path in paths:
        files = (
            sorted(p for p in path.rglob("*") if p.suffix in TASK_SUFFIXES)
            if path.is_dir()
            else [path]
        )
        if path.is_dir() and not files:
            yield _Read(
                SchemaError(
                    "no .json, .jsonl or .parquet task files in directory", source=str(path)
                ),
                str(path),
            )
        for file in files:
            if file.suffix == ".jsonl":
                yield from _each_row(file)
                continue
            if file.suffix == ".parquet":
                yield from _each_parquet_row(file)
                continue
            try:
                task = load_task(file)
            except SchemaError as exc:
                yield _Read(exc, str(file))
                continue
            try:
                nemo = _is_nemo_row(json.loads(file.read_bytes()))
            except (OSError, ValueError):
                nemo = False
            yield _Read(task, str(file), nemo)


def _each_row(file: Path) -> Iterator[_Read]:
    try:
        lines = file.read_bytes().splitlines(keepends=True)
    except OSError as exc:
        yield _Read(
            SchemaError(f"cannot read file: {exc.strerror or exc}", source=str(file)), str(file)
        )
        return
    offset = 0
    for number, line in enumerate(lines, start=1):
        start, offset = offset, offset + len(line)
        if not line.strip():
            continue
        where = f"{file}:{number}"
        try:
            row = decode_json(line, source=where, start=start)
            yield _Read(task_from_mapping(row, source=where), where, _is_nemo_row(row))
        except SchemaError as exc:
            yield _Read(exc, where)


def _each_parquet_row(file: Path) -> Iterator[_Read]:
    try:
        for where, row in parquet_rows(file):
            try:
                yield _Read(task_from_row(row, where=where, path=file), where)
            except SchemaError as exc:
                yield _Read(exc, where)
    except SchemaError as exc:
        yield _Read(exc, str(file))


def _chosen(reads: list[_Read], args: argparse.Namespace) -> list[_Read]:
    """The reads ``--domain/--mode/--limit`` keep (errors always: they are bad input)."""
    tasks = [read.item for read in reads if isinstance(read.item, Task)]
    keep = {id(task) for task in selected(tasks, args)}
    return [read for read in reads if not isinstance(read.item, Task) or id(read.item) in keep]


def _print_capped(lines: list[str], cap: int, *, stream: TextIO, what: str) -> None:
    shown = lines if cap <= 0 else lines[:cap]
    for line in shown:
        print(line, file=stream)
    if len(shown) < len(lines):
        print(
            f"... {len(lines) - len(shown)} more {what} not shown (--max-findings 0 shows all; "
            "--json gives every detail)",
            file=stream,
        )


def _seed_ddl(task: Task, seed_root: Path, texts: dict[Path, str]) -> dict[str, str]:
    """The text of each of the task's seed files found under ``seed_root``, per gym: the
    keys its ``CREATE TABLE`` statements declare sharpen ``may_truncate``."""
    found = {}
    for gym in task.gym_servers:
        if not gym.seed_database_file:
            continue
        path = seed_root / gym.seed_database_file
        if path not in texts:
            try:
                texts[path] = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                texts[path] = ""  # missing: reported below as a missing seed file
        found[gym.name] = texts[path]
    return found


def run_validate(args: argparse.Namespace) -> int:
    snapshots = load_tool_snapshots(args.tools) if args.tools else None
    tasks: list[Task] = []
    errors: list[SchemaError] = []
    findings: list[StaticFinding] = []
    seed_texts: dict[Path, str] = {}
    for read in progress(_chosen(list(_each_task(args.paths)), args), "validating"):
        if isinstance(read.item, SchemaError):
            errors.append(read.item)
            continue
        tasks.append(read.item)
        findings += task_findings(
            read.item,
            source=read.source,
            tools=snapshots,
            ddl=_seed_ddl(read.item, args.seed_root, seed_texts) if args.seed_root else None,
            nemo_row=read.nemo_row,
        )
    per_group = Counter((t.domain or "?", t.mode or MISSING_MODE) for t in tasks)
    kinds = Counter(v.verifier_type for t in tasks for v in t.verifiers)
    totals = Counter(f.kind for f in findings)
    rejected = sorted({f.source for f in findings if f.severity == "rejected"})
    missing = missing_seed_files(tasks, args.seed_root) if args.seed_root else []
    code = EXIT_FAILED if errors or rejected or missing else EXIT_OK
    if args.json:
        emit_json(
            {
                "valid": len(tasks),
                "invalid": len(errors),
                "rejected_by_verify": len(rejected),
                "errors": [
                    {"source": e.source, "path": e.path, "message": e.reason} for e in errors
                ],
                "by_domain_mode": [
                    {"domain": d, "mode": m, "tasks": n} for (d, m), n in sorted(per_group.items())
                ],
                "verifier_kinds": dict(kinds),
                "finding_counts": dict(totals),
                "findings": [f.to_dict() for f in findings],
                "missing_seed_files": missing,
            }
        )
        return code
    print(
        f"{len(tasks)} valid task(s), {len(errors)} invalid"
        + (f"; {len(rejected)} that verify would reject" if rejected else "")
        + "\n"
    )
    if per_group:
        print(
            table(
                ["domain", "mode", "tasks"], [(d, m, n) for (d, m), n in sorted(per_group.items())]
            )
        )
        print("\nverifier kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    if findings:
        print("\nfindings:")
        _print_capped(
            [f"  {f.line()}" for f in findings],
            args.max_findings,
            stream=sys.stdout,
            what="findings",
        )
        print("totals: " + ", ".join(f"{k} {n}" for k, n in sorted(totals.items())))
    _print_capped(
        [f"invalid: {error}" for error in errors],
        args.max_findings,
        stream=sys.stderr,
        what="invalid tasks",
    )
    if missing:
        print(
            f"\n{len(missing)} seed file(s) missing under {args.seed_root} (eog-core seeds unpack "
            f"gym_dbs.zip --to {args.seed_root} provides them):"
        )
        _print_capped(
            [f"  {name}" for name in missing],
            args.max_findings,
            stream=sys.stdout,
            what="missing seed files",
        )
    return code


def run_convert(args: argparse.Namespace) -> int:
    snapshots = load_tool_snapshots(args.tools)
    rows, errors, toolless = [], [], []
    for read in progress(_chosen(list(_each_task(args.paths)), args), "converting"):
        if isinstance(read.item, SchemaError):
            errors.append(read.item)
            continue
        row = to_nemo_row(read.item, snapshots)
        rows.append(row)
        if not row["responses_create_params"]["tools"]:
            toolless.append(read.source)
    if errors:
        for error in errors:
            print(f"invalid: {error}", file=sys.stderr)
        print(f"nothing written: {len(errors)} invalid task(s)", file=sys.stderr)
        return EXIT_INPUT
    to_stdout = str(args.output) == "-"
    if to_stdout:
        _write_rows(rows, sys.stdout)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        with args.output.open("w", encoding="utf-8") as out:
            _write_rows(rows, out)
    where = "standard output" if to_stdout else str(args.output)
    for source in toolless:  # a domain with no snapshot in --tools: the model would get no tools
        print(
            f"warning: {source}: the row has no tools (no snapshot in {args.tools} "
            "for its gyms, or none of its tools)",
            file=sys.stderr,
        )
    if args.json:
        emit_json(
            {"rows": len(rows), "rows_without_tools": len(toolless), "output": where},
            sys.stderr if to_stdout else None,
        )
    elif not to_stdout:
        print(
            f"wrote {len(rows)} row(s) to {where}"
            + (f", {len(toolless)} without tools" if toolless else "")
        )
    return EXIT_OK


def _write_rows(rows: list[dict[str, Any]], out: TextIO) -> None:
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
