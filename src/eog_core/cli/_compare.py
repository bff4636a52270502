"""``eog-core compare``: two evaluations paired task by task; and reading the evaluations
``score`` and ``compare`` take (run folders, upstream results, verdict files)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from eog_core.cli._common import EXIT_OK, add_command, busy, emit_json, whole_number
from eog_core.cli._explain import check_overlap
from eog_core.metrics import (
    DamageStats,
    DamageSummary,
    MetricsError,
    MetricsInput,
    as_run_records,
    compare_runs,
    damage_summary,
    format_comparison,
    format_damage_comparison,
    read_run,
    read_upstream_results,
)

__all__ = ["add_compare_parser", "damage_json", "read_inputs", "run_compare"]

#: Ten times the default: more resamples change the interval's fourth digit, and cost minutes.
MAX_BOOTSTRAP = 100_000


def add_compare_parser(commands: Any) -> None:
    """Add ``compare`` to the command line's subcommands."""
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
        help="the outcome compared (default: each side's strict outcome where it has one, else parity)",
    )
    compare.add_argument("--json", action="store_true", help="machine output")
    compare.set_defaults(handler=run_compare)


def read_inputs(paths: Sequence[Path], upstream_only: bool = False) -> list[MetricsInput]:
    if not upstream_only:
        return [item for path in paths for item in read_run(path)]
    return [item for path in paths if path.is_dir() for item in read_upstream_results(path)]


def damage_json(damage: DamageSummary | None) -> dict[str, Any] | None:
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


def run_compare(args: argparse.Namespace) -> int:
    sides = [read_inputs([args.a]), read_inputs([args.b])]
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
            document["damage"] = {"a": damage_json(damage[0]), "b": damage_json(damage[1])}
        emit_json(document)
    else:
        print(format_comparison(comparison))
        if shown:
            print(format_damage_comparison(damage[0], damage[1]))
    return EXIT_OK
