"""``--domain``, ``--mode``, ``--limit N --shuffle-seed S``: which tasks a command takes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from eog_core.tasks import MODES, Task, select_tasks

__all__ = ["add_selection_options", "selected"]


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
        help="only tasks of this domain (repeat for more; csm, itsm, hybrid, ...)",
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


def selected(tasks: Sequence[Task], args: argparse.Namespace) -> list[Task]:
    return select_tasks(
        tasks,
        domains=args.domain,
        modes=args.mode,
        limit=args.limit,
        shuffle_seed=args.shuffle_seed,
    )
