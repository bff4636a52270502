"""What ``run``, ``gateway`` and ``certify`` share: the gym options (``--launch`` too), the
task paths, signal handling."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from eog_core.cli._common import positive_seconds
from eog_core.errors import SchemaError, UsageError
from eog_core.gym import GymDirectory, Timeouts
from eog_core.state import DamageSpec, load_damage_specs
from eog_core.tasks import TASK_SUFFIXES, Task, load_tasks

__all__ = [
    "add_gym_options",
    "add_launch_options",
    "add_state_options",
    "check_gym_names",
    "check_launch_options",
    "check_state_options",
    "damage_specs",
    "gym_directory",
    "gym_timeouts",
    "launched_gyms",
    "load_task_paths",
    "on_signals",
]


def add_gym_options(group: Any) -> None:
    """``--gym NAME=URL`` (repeatable), ``--gyms FILE``, ``--timeout``, ``--seed-root``, ``--tools``."""
    group.add_argument(
        "--gym",
        action="append",
        metavar="NAME=URL",
        help="a gym replica (repeat for more replicas or gyms)",
    )
    group.add_argument(
        "--gyms", type=Path, metavar="FILE", help="a gym directory file (JSON or TOML)"
    )
    group.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="seconds to wait for each gym answer, seeding included (default: "
        "upstream's limits: tool calls 300, SQL 60, seeding 1200 or more)",
    )
    group.add_argument(
        "--seed-root", type=Path, metavar="DIR", help="where the tasks' seed SQL files are"
    )
    group.add_argument(
        "--tools", type=Path, metavar="DIR", help="tool snapshots instead of listing tools live"
    )


def add_launch_options(group: Any) -> None:
    """``--launch docker|podman`` and ``--max-lifecycles N``."""
    group.add_argument(
        "--launch",
        metavar="docker|podman",
        help="start the gym containers the tasks need on this engine, remove them at "
        "the end (eog_core.fleet; docs/real-benchmark.md)",
    )
    group.add_argument(
        "--max-lifecycles",
        type=int,
        metavar="N",
        help="with --launch: restart a gym container after N task lifecycles "
        "(default: 150; the images leak file descriptors)",
    )


def check_launch_options(args: argparse.Namespace) -> None:
    if (args.gym or args.gyms) and args.launch:
        raise UsageError("give --gym/--gyms or --launch, not both")
    if args.max_lifecycles is not None and (not args.launch or args.max_lifecycles < 1):
        raise UsageError("--max-lifecycles takes a positive number and needs --launch")


def launched_gyms(
    args: argparse.Namespace, tasks: Sequence[Task], directory: GymDirectory
) -> contextlib.AbstractAsyncContextManager[GymDirectory]:
    """The directory given, or (``--launch``) the fleet's for the length of the command."""
    if not args.launch:
        return contextlib.nullcontext(directory)
    from eog_core.fleet import DEFAULT_MAX_LIFECYCLES, launch, options_from_env

    return launch(
        list(tasks),
        options_from_env(
            engine_executable=args.launch,
            max_lifecycles=args.max_lifecycles or DEFAULT_MAX_LIFECYCLES,
        ),
    )


def gym_directory(args: argparse.Namespace) -> GymDirectory:
    """The replicas of ``--gym``/``--gyms``, else the ``EOG_GYM_*`` variables."""
    if args.gyms and args.gym:
        raise UsageError("give --gym or --gyms, not both")
    if args.gyms:
        return GymDirectory.from_file(args.gyms)
    replicas: dict[str, list[str]] = {}
    for value in args.gym or ():
        name, sep, url = value.partition("=")
        if not sep or not name or not url:
            raise UsageError(f"--gym takes NAME=URL, got {value!r}")
        replicas.setdefault(name, []).append(url)
    return GymDirectory(replicas) if replicas else GymDirectory.from_env()


def gym_timeouts(seconds: float | None) -> Timeouts | None:
    """``--timeout``: one limit for every gym request (connecting gets at most 10 s of it)."""
    if seconds is None:
        return None
    return Timeouts(
        connect=min(10.0, seconds), rpc=seconds, sql=seconds, seed=seconds, admin=seconds
    )


def load_task_paths(paths: Sequence[Path]) -> list[Task]:
    """The tasks of every path; a folder without task files is a usage error, as no tasks is."""
    tasks: list[Task] = []
    for path in paths:
        if path.is_dir() and not any(
            p.suffix in TASK_SUFFIXES and p.is_file() for p in path.rglob("*")
        ):
            raise UsageError(f"no tasks in {path} (no {', '.join(TASK_SUFFIXES)} task files)")
        tasks.extend(load_tasks(path))
    if not tasks:
        raise UsageError(f"no tasks in {', '.join(map(str, paths))}")
    return tasks


@contextlib.contextmanager
def on_signals(on_interrupt: Callable[[], None]) -> Iterator[None]:
    """Call ``on_interrupt`` on SIGINT and SIGTERM while the block runs (the running loop's)."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_interrupt)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def check_gym_names(values: Sequence[str], tasks: Sequence[Task]) -> None:
    """A ``--gym NAME=URL`` no task uses is a typo (the task's gym would be reached elsewhere)."""
    used = sorted({server.name for task in tasks for server in task.gym_servers})
    for value in values:
        name = value.partition("=")[0]
        if name not in used:
            raise UsageError(
                f"--gym {name}: no task uses that gym; the tasks' gyms are "
                f"{', '.join(used) or 'none'}"
            )


def add_state_options(group: Any) -> None:
    """``--capture-state`` and its bounds (``docs/state.md``), for ``run`` and ``gateway``."""
    group.add_argument(
        "--capture-state",
        action="store_true",
        help="snapshot every database after seeding and before deletion into "
        "OUT/states/<sha256>.json.gz; the record's 'state' names them (docs/state.md)",
    )
    group.add_argument(
        "--max-state-bytes",
        type=int,
        default=1 << 30,
        metavar="N",
        help="with --capture-state: the run's compressed states at most; a rollout past it "
        "keeps its verdict and records the capture skipped (default: %(default)s, 1 GiB)",
    )
    group.add_argument(
        "--max-state-rows",
        type=int,
        default=100_000,
        metavar="N",
        help="with --capture-state: rows read per table; a table holding more is not "
        "captured, never cut short (default: %(default)s)",
    )
    group.add_argument(
        "--damage-specs",
        type=Path,
        metavar="DIR",
        help="with --capture-state: DIR/<task_id>/damage.json (agentrelbench's format) says "
        "what each task may change; the record's 'damage' judges the rest (without a spec "
        "its writes are recorded unjudged; docs/state.md)",
    )


def check_state_options(args: argparse.Namespace) -> None:
    for flag, value in (
        ("--max-state-bytes", args.max_state_bytes),
        ("--max-state-rows", args.max_state_rows),
    ):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    if args.damage_specs is not None and not args.capture_state:
        raise UsageError("--damage-specs needs --capture-state (the verdict diffs the states)")


def damage_specs(args: argparse.Namespace) -> dict[str, DamageSpec] | None:
    """The ``--damage-specs`` folder read, or None; a bad spec is a UsageError naming it."""
    if args.damage_specs is None:
        return None
    try:
        return load_damage_specs(args.damage_specs)
    except SchemaError as exc:
        raise UsageError(f"--damage-specs: {exc}") from None
