"""``--domain``, ``--mode``, ``--limit N --shuffle-seed S``: which tasks a command takes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from eog_core.errors import UsageError
from eog_core.tasks import DEFAULT_GYMS, MISSING_MODE, MODES, Task, select_tasks

__all__ = ["DATASET_DOMAINS", "add_selection_options", "selected"]

#: The dataset's domains: one per standard gym, and ``hybrid`` (tasks over several gyms).
DATASET_DOMAINS = (*sorted({domain for domain, _ in DEFAULT_GYMS.values()}), "hybrid")


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("selection")
    group.add_argument(
        "--domain",
        action="append",
        metavar="DOMAIN",
        help=f"only tasks of this domain (repeat for more; {', '.join(DATASET_DOMAINS)}, "
        "or one the tasks name)",
    )
    group.add_argument(
        "--mode",
        action="append",
        choices=MODES,
        help="only tasks of this mode (the dataset's configs; repeat for more)",
    )
    group.add_argument(
        "--limit",
        type=_non_negative,
        metavar="N",
        help="a seeded random N of the tasks, stratified by domain (never the "
        "first N: the head of a file is not representative)",
    )
    group.add_argument(
        "--shuffle-seed",
        type=int,
        default=0,
        metavar="S",
        help="the seed of --limit's sample (default 0: the same subset each time)",
    )


def _check_domains(tasks: Sequence[Task], domains: Sequence[str]) -> None:
    """A domain neither of the dataset nor of these tasks is a typo: refuse it, naming both."""
    present = {task.domain for task in tasks if task.domain is not None}
    unknown = sorted(set(domains) - set(DATASET_DOMAINS) - present)
    if unknown:
        others = sorted(present - set(DATASET_DOMAINS))
        raise UsageError(
            f"--domain {', '.join(unknown)}: unknown domain; the dataset's domains are "
            f"{', '.join(DATASET_DOMAINS)}"
            + (f" (these tasks also name {', '.join(others)})" if others else "")
        )


def selected(tasks: Sequence[Task], args: argparse.Namespace) -> list[Task]:
    """The tasks ``--domain/--mode/--limit`` keep; a selection that keeps none of
    ``tasks`` is a usage error that says what the tasks hold."""
    if args.domain:
        _check_domains(tasks, args.domain)
    chosen = select_tasks(
        tasks,
        domains=args.domain,
        modes=args.mode,
        limit=args.limit,
        shuffle_seed=args.shuffle_seed,
    )
    if tasks and not chosen and (args.domain or args.mode):
        asked = [f"--domain {','.join(args.domain)}"] if args.domain else []
        held = [f"domains {', '.join(sorted({t.domain or '?' for t in tasks}))}"]
        if args.mode:
            asked.append(f"--mode {','.join(args.mode)}")
            held.append(f"modes {', '.join(sorted({t.mode or MISSING_MODE for t in tasks}))}")
        raise UsageError(
            f"{' '.join(asked)} selects none of the {len(tasks)} task(s) "
            f"(they hold {'; '.join(held)})"
        )
    return chosen
