"""``eog-core replay``: a run's recorded tool calls again, into freshly seeded gyms.

Exit codes: 0 every replayed rollout reproduced (outputs identical after normalising
generated ids and timestamps, states equal when captured, verdicts agree); 1 some did
not; 2 bad input (no such run, no tasks of the run, a missing seed file, bad options);
3 could not complete (a gym unreachable or failing); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from eog_core.cli._common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    add_command,
    emit_json,
    table,
)
from eog_core.cli._shared import (
    add_gym_options,
    check_gym_names,
    gym_directory,
    gym_timeouts,
    launched_gyms,
)
from eog_core.errors import SchemaError, StateError, UsageError
from eog_core.replay import ReplayIncomplete, ReplayReport, load_task_files, replay_run
from eog_core.tasks import load_tool_snapshots

__all__ = ["add_parser", "replay_command"]


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "replay",
        help="replay a run's recorded tool calls into fresh gyms and check it reproduces",
        description="Re-execute each evaluated rollout's recorded tool calls, in order, into "
        "freshly seeded gyms (no model), remapping the ids the gyms generate differently; "
        "compare every tool output after normalising generated ids and timestamps, the "
        "states before and after (when the run captured them) and both verdicts. Prints "
        "per-rollout reproducibility and writes DIR/replay.json (docs/state.md).",
        epilog="example: eog-core replay runs/gpt-4.1 --tasks tasks/ --gyms gyms.toml "
        "--seed-root gym_dbs/ --out runs/gpt-4.1-replay",
    )
    parser.add_argument("run", type=Path, metavar="RUN_DIR", help="the run folder to replay")
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=Path,
        required=True,
        metavar="PATH",
        help="the run's task files or folders of them (a run folder holds none)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="where replay.json is written"
    )
    gyms = parser.add_argument_group("gyms (as for eog-core run)")
    add_gym_options(gyms)
    gyms.add_argument(
        "--launch", metavar="docker|podman", help="start the gym containers, remove them at the end"
    )
    gyms.add_argument(
        "--max-lifecycles", type=int, metavar="N", help="with --launch: restart a container after N"
    )
    gyms.add_argument(
        "--forward-any-tool",
        action="store_true",
        help="as the run had it: send calls of tools outside the task's set to the gym",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=replay_command)


def _print(report: ReplayReport, written: Path) -> None:
    rows = []
    for r in report.rollouts:
        verdicts = ", ".join(
            f"{p} {a}" if a == b else f"{p} {a}->{b}" for p, (a, b) in r.verdicts.items()
        )
        rows.append(
            (
                r.task_id,
                r.repeat,
                f"{r.identical}/{r.calls}",
                r.states,
                verdicts,
                "yes" if r.reproduced else "NO",
            )
        )
    print(table(["task", "repeat", "outputs identical", "states", "verdicts", "reproduced"], rows))
    for r in report.rollouts:
        for line in (*r.differences, *r.state_differences):
            print(f"  {r.task_id}#{r.repeat}: {line}")
    done = sum(r.reproduced for r in report.rollouts)
    print(f"\n{done} of {len(report.rollouts)} rollout(s) reproduced; {written}")
    if report.skipped:
        print(
            f"not replayed: {len(report.skipped)} rollout(s) ("
            + "; ".join(sorted({why for _, _, why in report.skipped}))
            + ")"
        )


async def _replay(args: argparse.Namespace, tasks: Any) -> ReplayReport:
    directory = gym_directory(args)
    async with launched_gyms(args, [t.task for t in tasks.values()], directory) as gyms:
        return await replay_run(
            args.run,
            tasks,
            gyms,
            seed_root=args.seed_root,
            tool_snapshots=load_tool_snapshots(args.tools) if args.tools else None,
            timeouts=gym_timeouts(args.timeout),
            forward_any_tool=args.forward_any_tool,
        )


def replay_command(args: argparse.Namespace) -> int:
    try:
        if (args.gym or args.gyms) and args.launch:
            raise UsageError("give --gym/--gyms or --launch, not both")
        if args.max_lifecycles is not None and (not args.launch or args.max_lifecycles < 1):
            raise UsageError("--max-lifecycles takes a positive number and needs --launch")
        if args.seed_root is not None and not args.seed_root.is_dir():
            raise UsageError(f"--seed-root {args.seed_root} is not a folder")
        tasks = load_task_files(args.tasks)
        check_gym_names(args.gym or (), [t.task for t in tasks.values()])
        report = asyncio.run(_replay(args, tasks))
    except (UsageError, SchemaError, StateError) as exc:
        print(f"eog-core replay: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ReplayIncomplete as exc:
        print(f"eog-core replay: could not complete: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    written = report.write(args.out)
    if args.json:
        emit_json(report.to_dict() | {"written": str(written)})
    else:
        _print(report, written)
    return EXIT_OK if report.reproduced else EXIT_FAILED
