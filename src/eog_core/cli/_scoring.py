"""``eog-core verify``, ``score`` and ``compare``: verdicts and the numbers of a report."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core import PARITY, STRICT, SqliteSqlRunner, TaskVerdict, load_task, verify_task
from eog_core.cli._common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    add_command,
    busy,
    emit_json,
    positive_seconds,
    whole_number,
)
from eog_core.cli._demo import verdict_line, verdict_table
from eog_core.cli._explain import check_overlap, explain_nothing_scored
from eog_core.cli._trust import add_certificates_option, read_certificates_option, trust_part
from eog_core.cli._verify import Asked, AskOnce, shared_failure
from eog_core.gym import GymClient, HttpSqlRunner, Timeouts
from eog_core.metrics import (
    CorrectedSummary,
    DamageStats,
    DamageSummary,
    MetricsError,
    MetricsInput,
    as_run_records,
    compare_runs,
    corrected_summary,
    damage_summary,
    expected_task_ids,
    format_comparison,
    format_corrected,
    format_damage,
    format_damage_comparison,
    format_upstream,
    locate_run,
    read_run,
    read_upstream_results,
    upstream_groups,
    upstream_summary,
    upstream_table,
)
from eog_core.verify import Policy

__all__ = ["add_parsers"]

#: pass@1..pass@k columns a table can show (each ~19 characters wide).
MAX_K = 20
#: Ten times the default: more resamples change the interval's fourth digit, and cost minutes.
MAX_BOOTSTRAP = 100_000


def _pairs(values: Sequence[str] | None, flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values or ():
        gym, sep, target = value.partition("=")
        if not sep or not gym or not target:
            raise argparse.ArgumentTypeError(f"{flag} takes GYM=VALUE, got {value!r}")
        pairs[gym] = target
    return pairs


def add_parsers(commands: Any) -> None:
    verify = add_command(
        commands,
        "verify",
        help="score a task on final database snapshots (or a live gym)",
        description="Run the task's verifiers on SQLite snapshots of the final databases, or on a "
        "live gym database. Exits 0 when the task succeeds, 1 when it fails, 3 when "
        "the evaluation could not complete (a gym unreachable, a verifier query the "
        "database rejects, a configuration error) or the input is bad.",
        epilog="example: eog-core verify task.json --db sn-csm-server=final.sqlite --now '2026-01-05 12:00:00'",
    )
    verify.add_argument("task", type=Path, help="a task file (any of the three formats)")
    verify.add_argument(
        "--db",
        action="append",
        metavar="GYM=FILE",
        help="SQLite snapshot of a gym's final database (parity caps a query without a "
        "LIMIT at 100 rows, as the gym's sql-runner does; strict reads every row)",
    )
    verify.add_argument(
        "--gym", action="append", metavar="GYM=URL", help="a live gym to query instead"
    )
    verify.add_argument(
        "--database-id",
        action="append",
        metavar="GYM=ID",
        help="the rollout's database id on a live gym",
    )
    verify.add_argument(
        "--policy",
        choices=["strict", "parity", "both"],
        default="both",
        help="which verdicts to compute and print",
    )
    verify.add_argument(
        "--reward",
        choices=["binary", "fractional"],
        default="binary",
        help="binary: 1 when the task succeeds; fractional: its verifier pass rate",
    )
    verify.add_argument(
        "--now",
        help="pin SQLite's 'now' and CURRENT_TIMESTAMP/DATE/TIME (e.g. '2026-01-05 12:00:00') for reproducible scores of snapshots",
    )
    verify.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="live gyms: seconds to wait for each answer (default 30); a gym that "
        "fails to answer is not asked again",
    )
    verify.add_argument("--json", action="store_true", help="machine output")
    verify.set_defaults(handler=run_verify)

    score = add_command(
        commands,
        "score",
        help="upstream's numbers and corrected ones for a finished evaluation",
        description="Read run folders (their rollouts.jsonl: strict and parity, as `report` reads "
        "them), rollout or verdict .jsonl files, or upstream result folders "
        "(run_<i>/results_*.json, such as a run's upstream/). For upstream folders print "
        "upstream's table exactly as upstream computes it; then corrected numbers. "
        "Exits 0, or 3 when no rollout completed its evaluation (every one incomplete: "
        "the table is printed, with '-' for the undefined rates).",
        epilog="example: eog-core score runs/gpt-4.1 --tasks tasks/ --k 3\n"
        "         eog-core score runs/gpt-4.1/upstream   # upstream's table, parity",
    )
    score.add_argument(
        "paths",
        nargs="+",
        type=Path,
        help="run folders, rollout or verdict .jsonl files, or upstream result folders",
    )
    score.add_argument(
        "--tasks",
        type=Path,
        help="the expected task set (.jsonl rows or a directory of task files)",
    )
    score.add_argument(
        "--k",
        type=whole_number(1, MAX_K),
        default=None,
        help=f"largest k for pass@k, 1 to {MAX_K} (default: the repeats present)",
    )
    score.add_argument("--json", action="store_true", help="machine output")
    score.add_argument(
        "--upstream-only",
        action="store_true",
        help="print only what upstream's compute_score.py prints for the folder(s), byte for "
        "byte (colour only on a terminal); a run folder is read as upstream reads it, "
        "its upstream/ one row",
    )
    add_certificates_option(score, "adds the score over clean and over certified tasks")
    score.set_defaults(handler=run_score)

    compare = add_command(
        commands,
        "compare",
        help="paired comparison of two evaluations over the same tasks",
        description="Per-task agreement, exact McNemar p-value, paired bootstrap 95% CI of the "
        "success-rate difference (B - A) and TOST equivalence at a margin (judged on "
        "--min-tasks paired tasks or more). Runs pair by mode, domain, task id and "
        "repeat; exits 3 when the two evaluations have no run in common.",
        epilog="example: eog-core compare upstream_results/ our_verdicts.jsonl --margin 0.02",
    )
    compare.add_argument(
        "a",
        type=Path,
        help="the first evaluation (A: a run folder, results folder or verdicts .jsonl)",
    )
    compare.add_argument("b", type=Path, help="the second evaluation (B), read the same way")
    compare.add_argument(
        "--margin",
        type=float,
        default=0.02,
        help="equivalence margin as a fraction between 0 and 1 (default 0.02 = 2 pp)",
    )
    compare.add_argument(
        "--min-tasks",
        type=int,
        default=10,
        help="fewest paired tasks on which equivalence is judged (default 10)",
    )
    compare.add_argument(
        "--n-boot",
        type=whole_number(1, MAX_BOOTSTRAP),
        default=10000,
        help=f"bootstrap resamples, 1 to {MAX_BOOTSTRAP:,} (default 10,000)",
    )
    compare.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    compare.add_argument(
        "--policy",
        choices=["strict", "parity"],
        default=None,
        help="the outcome compared (default: each side's strict outcome where it "
        "has one, else parity)",
    )
    compare.add_argument("--json", action="store_true", help="machine output")
    compare.set_defaults(handler=run_compare)


async def _verify(args: argparse.Namespace, policies: list[Policy]) -> list[TaskVerdict]:
    task = load_task(args.task)
    gyms, database_ids = _pairs(args.gym, "--gym"), _pairs(args.database_id, "--database-id")
    snapshots = _pairs(args.db, "--db")
    if not gyms and not snapshots:
        raise argparse.ArgumentTypeError(
            "give --db GYM=FILE for offline scoring or --gym GYM=URL for a live gym"
        )
    if gyms and snapshots:
        raise argparse.ArgumentTypeError("give either --db (offline) or --gym (live), not both")
    if missing := sorted(set(gyms) - set(database_ids)):
        raise argparse.ArgumentTypeError(
            f"--gym {missing[0]} needs --database-id {missing[0]}=ID (the rollout's database on that gym)"
        )
    needed = {
        v.gym_name or (task.default_gym.name if task.default_gym else "") for v in task.verifiers
    }
    if missing_gyms := sorted(needed - set(gyms or snapshots) - {""}):
        flag = "--gym" if gyms else "--db"
        raise argparse.ArgumentTypeError(
            f"the task's verifiers query gym(s) {', '.join(missing_gyms)}: give {flag} for each"
        )
    clients: dict[str, GymClient] = {}
    offline: dict[int | None, SqliteSqlRunner] = {}  # per row cap: parity sees the gym's
    try:
        if gyms:
            # AskOnce bounds each query at --timeout; the client's own limits sit above it,
            # so every query that runs out of time fails with the same message.
            limit = args.timeout
            outer = limit + 5.0
            timeouts = Timeouts(connect=outer, rpc=outer, sql=outer, admin=outer)
            clients = {
                gym: GymClient(url, name=gym, timeouts=timeouts) for gym, url in gyms.items()
            }
            asked = Asked()  # both policies share the answers and what is known to be down
            return [
                await verify_task(
                    task,
                    sql=AskOnce(
                        HttpSqlRunner(clients, read_only=policy.read_only_sql),
                        timeout=limit,
                        urls=gyms,
                        asked=asked,
                        tag=policy.read_only_sql,
                    ),
                    policy=policy,
                    database_ids=database_ids,
                )
                for policy in policies
            ]
        for cap in dict.fromkeys(policy.offline_implicit_limit for policy in policies):
            offline[cap] = SqliteSqlRunner(snapshots, now=args.now, implicit_limit=cap)
        return [
            await verify_task(
                task,
                sql=offline[policy.offline_implicit_limit],
                policy=policy,
                database_ids=database_ids,
            )
            for policy in policies
        ]
    finally:
        for runner in offline.values():
            runner.close()
        for client in clients.values():
            await client.aclose()


def run_verify(args: argparse.Namespace) -> int:
    chosen = {"strict": [STRICT], "parity": [PARITY], "both": [STRICT, PARITY]}[args.policy]
    policies = [policy.with_reward(args.reward) for policy in chosen]
    try:
        with busy("verifying"):
            verdicts = asyncio.run(_verify(args, policies))
    except argparse.ArgumentTypeError as exc:
        print(f"eog-core verify: {exc}", file=sys.stderr)
        return EXIT_INPUT
    first = verdicts[0]
    code = EXIT_OK if first.success else EXIT_FAILED if first.evaluation_completed else EXIT_INPUT
    if args.json:
        emit_json(
            first.to_dict(detailed=True)
            if len(verdicts) == 1
            else {v.policy: v.to_dict(detailed=True) for v in verdicts}
        )
    elif (
        line := shared_failure(first, _pairs(args.gym, "--gym") or _pairs(args.db, "--db"))
    ) is not None:
        print(f"eog-core verify: {line}", file=sys.stderr)
    else:
        parity = next((v for v in verdicts if v.policy == "parity"), None)
        print(verdict_table(first, parity if parity is not first else None))
        print()
        for verdict in verdicts:
            print(verdict_line(verdict))
    return code


def _upstream_folders(paths: Sequence[Path], upstream_only: bool) -> list[Path]:
    """The paths read as upstream result folders: every folder with ``--upstream-only``
    (upstream's reading, a run folder's ``rollouts.jsonl`` ignored as upstream ignores it),
    else the folders without a ``rollouts.jsonl``."""
    found = []
    for path in paths:
        where = locate_run(path)
        if upstream_only and path.is_dir():
            found.append(path)
        elif where.kind == "upstream":
            found.append(where.path)
    return found


def _read_inputs(paths: Sequence[Path], upstream_only: bool = False) -> list[MetricsInput]:
    if not upstream_only:
        return [item for path in paths for item in read_run(path)]
    return [item for path in paths if path.is_dir() for item in read_upstream_results(path)]


def run_score(args: argparse.Namespace) -> int:
    certificates = read_certificates_option(args.certificates)  # bad input before any work
    folders = _upstream_folders(args.paths, args.upstream_only)
    with busy("reading results"):
        items = _read_inputs(args.paths, args.upstream_only)
    upstream_files = [i for i in items if not hasattr(i, "policy") and hasattr(i, "runs")]
    groups = [group for path in folders for group in upstream_groups(path)]
    upstream = (
        upstream_summary(upstream_files, groups)  # type: ignore[arg-type]
        if upstream_files or groups
        else None
    )
    if args.upstream_only:
        if upstream is None or len(folders) < len(args.paths):
            raise MetricsError(
                "--upstream-only takes upstream result folders",
                source=", ".join(str(p) for p in args.paths if p not in folders),
            )
        sys.stdout.write(upstream_table(upstream, color=sys.stdout.isatty()))
        return EXIT_FAILED if upstream.unreadable else EXIT_OK
    expected = expected_task_ids(args.tasks) if args.tasks else None
    records, skipped = as_run_records(items)
    if not records:
        if upstream is not None and upstream.groups and not args.json:
            print(format_upstream(upstream, color=sys.stdout.isatty()))
        raise explain_nothing_scored(args.paths, skipped)
    summary = corrected_summary(records, expected_tasks=expected, k=args.k)
    summary = attrs.evolve(summary, skipped=tuple(skipped) + tuple(summary.skipped))
    code = _nothing_completed(summary)
    damage = damage_summary(records)  # None without state capture: the output is as before
    trust = trust_part(args, certificates, records)  # None without --certificates: as before
    if args.json:
        document = {
            "upstream": attrs.asdict(upstream) if upstream else None,
            "corrected": attrs.asdict(summary),
        }
        document |= {"damage": _damage_json(damage)} if damage else {}
        emit_json(document | ({"certificates": trust.to_json()} if trust else {}))
        return code
    if upstream is not None:
        print("== Upstream's numbers (as compute_score.py computes and prints them) ==")
        print(format_upstream(upstream, color=sys.stdout.isatty()))
        print()
    print("== Corrected numbers ==")
    print(format_corrected(summary))
    if damage is not None:
        print()
        print(format_damage(damage))
    if trust is not None:
        print()
        print(trust.text(summary))
    return code


def _damage_json(damage: DamageSummary | None) -> dict[str, Any] | None:
    """The damage summary with its rates (properties, which ``attrs.asdict`` leaves out)."""
    if damage is None:
        return None

    def stats(group: DamageStats) -> dict[str, Any]:
        return attrs.asdict(group) | {
            "damage_rate": group.damage_rate,
            "pass_rate": group.pass_rate,
        }

    return {
        "overall": stats(damage.overall),
        "by_domain": [stats(group) for group in damage.by_domain],
    }


def _nothing_completed(summary: CorrectedSummary) -> int:
    """3, with one line on stderr, when no rollout was scored under any policy (all incomplete)."""
    stats = [s for s in (summary.overall.strict, summary.overall.parity) if s is not None]
    if any(s.runs_scored for s in stats):
        return EXIT_OK
    errored = max((s.runs_errored for s in stats), default=0)
    print(
        f"eog-core score: no rollout completed its evaluation ({errored} incomplete): "
        "nothing could be scored",
        file=sys.stderr,
    )
    return EXIT_INPUT


def run_compare(args: argparse.Namespace) -> int:
    sides = [_read_inputs([args.a]), _read_inputs([args.b])]
    for path, items in zip((args.a, args.b), sides, strict=True):
        if not as_run_records(items)[0]:
            raise MetricsError("no scored runs found", source=str(path))
    with busy("comparing (bootstrap)"):
        comparison = compare_runs(
            sides[0],
            sides[1],
            margin=args.margin,
            n_boot=args.n_boot,
            seed=args.seed,
            policy=args.policy,
            min_tasks=args.min_tasks,
        )
    check_overlap(comparison, args.a, args.b)
    damage = [damage_summary(as_run_records(items)[0]) for items in sides]
    shown = any(side is not None for side in damage)  # without capture: as before
    if args.json:
        document = attrs.asdict(comparison) | {"tost_p": comparison.tost_p}
        if shown:
            document["damage"] = {"a": _damage_json(damage[0]), "b": _damage_json(damage[1])}
        emit_json(document)
    else:
        print(format_comparison(comparison))
        if shown:
            print(format_damage_comparison(damage[0], damage[1]))
    return EXIT_OK
