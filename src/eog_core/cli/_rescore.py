"""``eog-core rescore``: (revised) tasks' verifiers on a run's captured final states.

Exit codes: 0 the run was re-scored (flipped verdicts are information, printed and in
``rescore.json``, not a failure); 2 bad input (no such run, a run without captured
states, tasks none of which the run holds, an ``--out`` that is not new); 3 could not
complete (the new folder could not be written).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from eog_core.cli._common import EXIT_OK, EXIT_USAGE, add_command, emit_json, table
from eog_core.errors import StateError, UsageError
from eog_core.replay import RescoreReport, load_task_files, rescore_run

__all__ = ["add_parser", "rescore_command"]


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "rescore",
        help="re-score a run's captured final states with (revised) tasks, offline",
        description="Run the verifiers of the tasks of --tasks on the final states a run "
        "captured (eog-core run --capture-state), in SQLite: no model, no gym. Writes a new "
        "run folder (rollouts.jsonl with both verdicts, upstream/, states/, rescore.json with "
        "the provenance) and prints the rollouts whose verdict flipped, per policy. Rollouts "
        "of tasks --tasks lacks, and rollouts without a captured state, are left out of the "
        "new folder and listed; tasks the run never ran are ignored (docs/state.md).",
        epilog="example: eog-core rescore runs/gpt-4.1 --tasks tasks/revised --out runs/gpt-4.1-revised",
    )
    parser.add_argument("run", type=Path, metavar="RUN_DIR", help="a run folder with states/")
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=Path,
        required=True,
        metavar="PATH",
        help="task files or folders of them (the revised tasks)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="NEW_DIR", help="the new run folder"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=rescore_command)


def _print(report: RescoreReport) -> None:
    print(f"re-scored {report.rescored} rollout(s) of {report.source} into {report.out_dir}")
    for policy in ("strict", "parity"):
        flips = [f for f in report.flips if f.policy == policy]
        if not flips:
            print(f"\n{policy}: no verdict flips")
            continue
        print(f"\n{policy}: {len(flips)} verdict flip(s)")
        print(
            table(
                ["task", "repeat", "before", "after"],
                [(f.task_id, f.repeat, f.before, f.after) for f in flips],
            )
        )
    notes = (
        ("left out (not in --tasks)", report.not_in_tasks),
        ("left out (no captured final state)", [f"{t}#{r}" for t, r in report.not_captured]),
        ("ignored (not in the run)", report.not_in_run),
    )
    for label, items in notes:
        if items:
            shown = ", ".join(items[:10]) + (
                f", ... ({len(items)} in all)" if len(items) > 10 else ""
            )
            print(f"{label}: {shown}")


def rescore_command(args: argparse.Namespace) -> int:
    try:
        tasks = load_task_files(args.tasks)
        report = asyncio.run(rescore_run(args.run, tasks, args.out))
    except (UsageError, StateError) as exc:
        print(f"eog-core rescore: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        emit_json(report.to_dict() | {"out_dir": str(report.out_dir)})
    else:
        _print(report)
    return EXIT_OK
