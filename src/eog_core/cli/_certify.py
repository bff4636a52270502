"""``eog-core certify TASK_PATHS...``: check on gyms whether each task and its verdicts can be
trusted, one certificate per task (``docs/certify.md``).

Exit codes: 0 every task certified or clean; 1 some task flagged (a finding);
2 usage or bad input (a task or script that does not load, a seed file missing:
one line); 3 a check could not complete (a gym unreachable: the task's certificate
says ``incomplete``) or a database could not be deleted; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from eog_core.certify import (
    Certificate,
    CertificateFinding,
    CertifyOptions,
    CertifyReport,
    TaskScripts,
    TaskSource,
    certify_tasks,
    index_scripts,
    load_sources,
    load_task_scripts,
    task_findings,
    write_certificate,
)
from eog_core.cli._common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_command,
    emit_json,
    table,
)
from eog_core.cli._selection import add_selection_options, selected
from eog_core.cli._shared import (
    add_gym_options,
    add_launch_options,
    check_gym_names,
    check_launch_options,
    gym_directory,
    gym_timeouts,
    launched_gyms,
    on_signals,
)
from eog_core.errors import SchemaError, SeedFileError, UsageError
from eog_core.gym import GymDirectory
from eog_core.run import MAX_CONCURRENCY
from eog_core.tasks import Task, load_tool_snapshots

__all__ = ["add_parser", "certify_command"]

EXIT_INTERRUPTED = 130


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "certify",
        help="check on gyms which tasks and verdicts can be trusted (one certificate per task)",
        description="For each task, on fresh databases: its static findings (as validate), a "
        "do-nothing control, the oracle and counterexample scripts of --scripts played through "
        "run's rollout against an in-process scripted model, each verifier's sensitivity to the "
        "oracle's tool calls, and each verifier query's rows counted uncapped (the gyms return "
        "at most 100). Prints a table; --out DIR writes DIR/<task_id>.certificate.json. Exit 0 "
        "every task certified or clean, 1 some flagged, 2 usage or bad input, 3 a check could "
        "not complete (a gym unreachable).",
        epilog="example: eog-core certify $(eog-core demo --print-paths task) --local "
        "--scripts examples/certify-scripts --out certificates/",
    )
    parser.add_argument(
        "tasks",
        nargs="+",
        type=Path,
        metavar="TASK_PATH",
        help="task files, folders of them (agentrelbench's task folders too), or .jsonl rows",
    )
    group = parser.add_argument_group("gyms")
    add_gym_options(group)
    add_launch_options(group)
    group.add_argument(
        "--local",
        action="store_true",
        help="start the embedded local gym for the length of the command (it serves the "
        "demo task's domain only; --seed-root defaults to the demo's folder)",
    )
    checks = parser.add_argument_group("certify")
    checks.add_argument(
        "--scripts",
        type=Path,
        metavar="DIR",
        help="oracle and counterexample scripts: a folder per task id holding "
        "oracle.script.json and counterexamples/*.script.json (agentrelbench 0.1.0's layout)",
    )
    checks.add_argument(
        "--out", type=Path, metavar="DIR", help="write DIR/<task_id>.certificate.json per task"
    )
    checks.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="C",
        help="checks in flight, each on databases of its own (default: %(default)s)",
    )
    checks.add_argument("--json", action="store_true", help="print the certificates as JSON")
    add_selection_options(parser)
    parser.set_defaults(handler=certify_command)


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        raise UsageError(
            f"--concurrency must be between 1 and {MAX_CONCURRENCY:,}, got {args.concurrency}"
        )
    check_launch_options(args)
    if args.local and (args.gym or args.gyms or args.launch):
        raise UsageError("give --local or --gym/--gyms/--launch, not both")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: is a file, not a folder for the certificates")


def _static(task: Task) -> list[CertificateFinding]:
    return [finding.certificate_finding() for finding in task_findings(task)]


def _scripts(args: argparse.Namespace, sources: Sequence[TaskSource]) -> dict[str, TaskScripts]:
    if args.scripts is None:
        return {}
    folders = index_scripts(args.scripts)
    ids = {source.task.task_id for source in sources}
    return {name: load_task_scripts(folder) for name, folder in folders.items() if name in ids}


def _image_digests(args: argparse.Namespace, sources: Sequence[TaskSource]) -> dict[str, str]:
    """With ``--launch``, the digest of each gym image the tasks use, where the reference
    started pins one (an ``EOG_FLEET_IMAGE`` tag pins none)."""
    if not args.launch:
        return {}
    from eog_core.fleet import CATALOGUE, options_from_env

    fleet = options_from_env(engine_executable=args.launch)
    used = {gym.name for source in sources for gym in source.task.gym_servers}
    references = {s.gym: fleet.image_for(s) for s in CATALOGUE.values() if s.gym in used}
    return {
        gym: reference.rsplit("@", 1)[1]
        for gym, reference in references.items()
        if "@sha256:" in reference
    }


@contextlib.asynccontextmanager
async def _gyms(
    args: argparse.Namespace, sources: Sequence[TaskSource]
) -> AsyncIterator[GymDirectory]:
    if args.local:
        from eog_core.local import LocalGym

        async with LocalGym.demo() as gym:
            yield GymDirectory({gym.name: gym.url})
        return
    tasks = [source.task for source in sources]
    async with launched_gyms(args, tasks, gym_directory(args)) as directory:
        yield directory


async def _certify(
    args: argparse.Namespace,
    sources: list[TaskSource],
    scripts: dict[str, TaskScripts],
    options: CertifyOptions,
) -> tuple[CertifyReport | None, bool]:
    main = asyncio.current_task()
    interrupted = False
    done = 0
    tty = sys.stderr.isatty()

    def on_interrupt() -> None:
        nonlocal interrupted
        if not interrupted and main is not None:
            interrupted = True
            print(
                "\neog-core certify: interrupted; deleting the databases in use",
                file=sys.stderr,
                flush=True,
            )
            main.cancel()

    def on_certificate(certificate: Certificate) -> None:
        nonlocal done
        done += 1
        if args.out is not None:
            write_certificate(certificate, args.out)
        if tty:
            sys.stderr.write(f"\rcertify: {done}/{len(sources)} tasks\033[K")
            sys.stderr.flush()

    try:
        with on_signals(on_interrupt):
            async with _gyms(args, sources) as directory:
                report = await certify_tasks(
                    sources,
                    directory=directory,
                    scripts=scripts,
                    options=options,
                    on_certificate=on_certificate,
                )
    except asyncio.CancelledError:
        if not interrupted:
            raise
        return None, True
    finally:
        if tty and done:
            sys.stderr.write("\n")
    return report, False


def _summary(report: CertifyReport) -> str:
    rows = []
    for c in report.certificates:
        oracle = c.checks.get("oracle")
        played = c.checks.get("counterexamples") or []
        control = c.checks.get("do_nothing") or {}
        rows.append(
            [
                c.task_id,
                c.status,
                ", ".join(c.kinds) or "-",
                control.get("strict", "-"),
                oracle["strict"] if oracle else "-",
                f"{sum(1 for p in played if p['passed'])}/{len(played)} pass" if played else "-",
            ]
        )
    return table(["task", "status", "findings", "do-nothing", "oracle", "counterexamples"], rows)


def _exit_code(report: CertifyReport) -> int:
    statuses = {c.status for c in report.certificates}
    if "incomplete" in statuses or report.leaked:
        return EXIT_INPUT
    return EXIT_FAILED if "flagged" in statuses else EXIT_OK


def certify_command(args: argparse.Namespace) -> int:
    try:
        _check(args)
        if args.local and args.seed_root is None:  # the demo's seed lies beside its task
            from eog_core.local import demo_paths

            args.seed_root = demo_paths().directory
        sources = load_sources(
            args.tasks,
            seed_root=args.seed_root,
            static=_static,
            select=lambda tasks: selected(tasks, args),
        )
        check_gym_names(args.gym or (), [source.task for source in sources])
        scripts = _scripts(args, sources)
        options = CertifyOptions(
            seed_root=args.seed_root,
            tool_snapshots=load_tool_snapshots(args.tools) if args.tools else None,
            timeouts=gym_timeouts(args.timeout),
            concurrency=args.concurrency,
            image_digests=_image_digests(args, sources),
        )
    except (UsageError, SchemaError, SeedFileError) as exc:
        print(f"eog-core certify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    report, interrupted = asyncio.run(_certify(args, sources, scripts, options))
    if interrupted:
        return EXIT_INTERRUPTED
    assert report is not None
    if args.json:
        emit_json(
            {
                "certificates": [c.to_dict() for c in report.certificates],
                "databases_left": list(report.leaked),
            }
        )
    else:
        print(_summary(report))
        counts = {s: sum(1 for c in report.certificates if c.status == s) for s in _STATUSES}
        print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
        for c in report.certificates:
            if c.status == "incomplete":
                print(f"{c.task_id}: could not complete: {c.checks.get('incomplete')}")
        if report.leaked:
            print(f"databases left on the gyms: {', '.join(report.leaked)}")
        if args.out is not None:
            print(f"certificates in {args.out}")
    return _exit_code(report)


_STATUSES = ("certified", "clean", "flagged", "incomplete")
