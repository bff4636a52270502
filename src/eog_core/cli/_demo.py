"""``eog-core demo``: the main job on the embedded local gym, offline, in seconds."""

from __future__ import annotations

import argparse
from typing import Any

from eog_core import PARITY, STRICT, TaskVerdict, load_task
from eog_core.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    add_command,
    emit_json,
    full_details,
    outcome_decided,
    positive_seconds,
    table,
)
from eog_core.gym import GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.local import LocalGym, ResponseMode, demo_paths, load_demo_trajectory

__all__ = ["add_parser", "run_demo"]


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "demo",
        help="play the bundled demo task on the embedded local gym",
        description="Start the local reference gym on a free loopback port, play a scripted "
        "correct trajectory of the demo task, verify it in strict and parity modes, "
        "then a do-nothing control; every database is deleted at the end.",
        epilog="example: eog-core demo --sse",
    )
    parser.add_argument(
        "--sse", action="store_true", help="have the gym answer MCP in SSE instead of JSON"
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="seconds to wait for each answer of the gym (default 30)",
    )
    parser.add_argument("--json", action="store_true", help="machine output")
    parser.add_argument(
        "--print-paths",
        nargs="?",
        const="all",
        metavar="WHICH",
        choices=["all", *DEMO_PATHS],
        help="print where the demo files are and exit: one of "
        f"{', '.join(DEMO_PATHS)} (a bare path, for the shell), or all of them "
        "(NAME=PATH lines; JSON with --json)",
    )
    parser.set_defaults(handler=_handle)


DEMO_PATHS = ("task", "seed-root", "seed-sql", "trajectory")
"""What ``--print-paths`` names: the demo task file, the folder its seed file is named in
(``--seed-root``), the seed SQL itself and the scripted trajectory."""


def demo_path_map() -> dict[str, str]:
    paths = demo_paths()
    return {
        "task": str(paths.task),
        "seed-root": str(paths.directory),
        "seed-sql": str(paths.seed_sql),
        "trajectory": str(paths.trajectory),
    }


def _handle(args: argparse.Namespace) -> int:
    if args.print_paths is None:
        return run_demo(sse=args.sse, as_json=args.json, timeout=args.timeout)
    found = demo_path_map()
    if args.print_paths != "all":
        print(found[args.print_paths])
    elif args.json:
        emit_json(found, indent=None)
    else:
        print("\n".join(f"{name}={path}" for name, path in found.items()))
    return EXIT_OK


def verdict_table(verdict: TaskVerdict, parity: TaskVerdict | None = None) -> str:
    """Per-verifier rows; with ``parity`` also its result, or why upstream's scoring skips one."""
    headers = ["#", "verifier", "result", "expected", "actual", "details"]
    rows: list[list[object]] = [
        [
            r.index + 1,
            r.name,
            "pass" if r.passed else "FAIL",
            r.expected,
            r.actual,
            r.error or r.details,
        ]
        for r in verdict.results
    ]
    if parity is not None:
        headers[2] = verdict.policy
        headers.insert(3, "parity")
        for row, result in zip(rows, parity.results, strict=True):
            row.insert(
                3,
                ("pass" if result.passed else "FAIL")
                if result.counted
                else "not counted (skipped)"
                if result.error
                else "not counted (same name)",
            )
    cut = full_details(
        (f"#{r.index + 1} {label}", value)
        for r in verdict.results
        for label, value in (
            ("expected", r.expected),
            ("actual", r.actual),
            ("details", r.error or r.details),
        )
    )
    return table(headers, rows) + (f"\n\n{cut}" if cut else "")


def verdict_line(verdict: TaskVerdict) -> str:
    state = "SUCCESS" if verdict.success else "failure"
    extra = f", {verdict.failure_kind}" if verdict.failure_kind else ""
    return (
        f"{verdict.policy:>6}: {state}  reward={verdict.reward:.2f}  "
        f"passed {verdict.num_passed}/{verdict.num_scored} counted "
        f"({verdict.num_defined} defined{extra})"
    )


async def _demo(sse: bool, wait_seconds: float = 30.0) -> dict[str, Any]:
    paths = demo_paths()
    task = load_task(paths.task)
    mode: ResponseMode = "sse" if sse else "json"
    report: dict[str, Any] = {"task_id": task.task_id}
    async with LocalGym.demo(response_mode=mode) as gym, Janitor() as janitor:
        directory = GymDirectory({gym.name: gym.url})
        limits = Timeouts(
            connect=min(10.0, wait_seconds),
            rpc=wait_seconds,
            sql=wait_seconds,
            seed=wait_seconds,
            admin=wait_seconds,
        )
        report["gym"] = gym.url
        async with TaskSession.start(
            task, directory=directory, seed_root=paths.directory, janitor=janitor, timeouts=limits
        ) as session:
            calls = []
            for step in load_demo_trajectory():
                result = await session.call_tool(step["name"], step["arguments"])
                calls.append(
                    {
                        "tool": step["name"],
                        "is_error": result.is_error,
                        "latency_ms": round(session.trajectory[-1].latency_ms, 2),
                    }
                )
            played = {
                "strict": await session.verify(policy=STRICT),
                "parity": await session.verify(policy=PARITY),
            }
        async with TaskSession.start(
            task, directory=directory, seed_root=paths.directory, janitor=janitor, timeouts=limits
        ) as control_session:
            control = {
                "strict": await control_session.verify(policy=STRICT),
                "parity": await control_session.verify(policy=PARITY),
            }
        leaked = await janitor.aclose()
        report.update(
            calls=calls,
            played=played,
            control=control,
            databases_left=gym.database_ids(),
            leaked=[entry.database_id for entry in leaked],
        )
    return report


def run_demo(*, sse: bool = False, as_json: bool = False, timeout: float = 30.0) -> int:
    import asyncio

    report = asyncio.run(_demo(sse, timeout))
    outcome_decided()  # every database is gone and the verdicts are in: Ctrl-C now changes nothing
    played, control = report["played"], report["control"]
    ok = (
        played["strict"].success
        and played["parity"].success
        and not control["strict"].success
        and not report["databases_left"]
        and not report["leaked"]
    )
    if as_json:
        emit_json(
            {
                **report,
                "ok": ok,
                "played": {k: v.to_dict(detailed=True) for k, v in played.items()},
                "control": {k: v.to_dict(detailed=True) for k, v in control.items()},
            }
        )
        return EXIT_OK if ok else EXIT_FAILED
    print(f"eog-core demo: task {report['task_id']} on the local gym at {report['gym']}\n")
    print(
        table(
            ["tool call", "is_error", "latency ms"],
            [(c["tool"], c["is_error"], c["latency_ms"]) for c in report["calls"]],
        )
    )
    for title, verdicts in (
        ("Scripted correct trajectory", played),
        ("Do-nothing control", control),
    ):
        print(f"\n== {title} ==\n")
        print(verdict_table(verdicts["strict"], verdicts["parity"]))
        print()
        for verdict in verdicts.values():
            print(verdict_line(verdict))
    print(
        f"\ndatabases left on the gym: {len(report['databases_left'])}; "
        f"leaked: {len(report['leaked'])}"
    )
    print(
        "demo OK" if ok else "demo FAILED: the scripted trajectory should pass and the control fail"
    )
    return EXIT_OK if ok else EXIT_FAILED
