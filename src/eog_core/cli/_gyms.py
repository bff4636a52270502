"""``eog-core gyms up|status|logs|down|compose``: the EOG gym containers.

``up`` starts them detached (labelled; ``down`` removes them) and writes the
directory file ``--gyms FILE`` reads; with ``--foreground`` it holds them until
Ctrl-C/SIGTERM, replacing any that dies (a few times at most), and removes them at
the end. ``status``, ``logs`` and ``down`` are in ``_gyms_inspect``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import attrs

from eog_core.cli._common import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_command,
    add_common_options,
    emit_json,
    positive_seconds,
    table,
)
from eog_core.cli._gyms_inspect import (
    default_engine,
    down_command,
    engine_hint,
    logs_command,
    status_command,
    with_args,
)
from eog_core.errors import FleetError, UsageError
from eog_core.fleet import (
    CATALOGUE,
    FleetOptions,
    GymFleet,
    compose_file,
    domains_for_tasks,
    options_from_env,
    services_for,
)
from eog_core.tasks import load_tasks

__all__ = ["add_parser", "default_engine"]

EXIT_INTERRUPTED = 130


def _engine_options(parser: argparse.ArgumentParser, *, search: bool = False) -> None:
    default = (
        "$EOG_ENGINE, else every one installed, docker and podman"
        if search
        else "$EOG_ENGINE, else docker when installed, else podman"
    )
    parser.add_argument(
        "--engine",
        metavar="docker|podman",
        help=f"the container engine's client (default: {default}; a path works too)",
    )
    parser.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument before every engine command, e.g. --engine-arg=--runtime "
        "--engine-arg=runc (also $EOG_FLEET_ENGINE_ARGS)",
    )


def _selection_options(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--domains",
        metavar="LIST",
        help=f"comma-separated: {','.join(CATALOGUE)} or all (default: all, or those --for needs)",
    )
    parser.add_argument(
        "--for",
        dest="for_tasks",
        nargs="+",
        type=Path,
        metavar="TASK_PATH",
        help=f"{verb} only the gyms these tasks name (files or folders of tasks)",
    )
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="DOMAIN=REF",
        help="use REF instead of the pinned image (DOMAIN '*' for every one; repeatable)",
    )
    parser.add_argument(
        "--registry",
        metavar="HOST/NAMESPACE",
        help="pull the pinned images from this registry/namespace (also $EOG_FLEET_REGISTRY)",
    )


def _action(sub: Any, name: str, *, help: str, description: str, epilog: str) -> Any:
    """One ``gyms`` action: help line, description, example and -v/-q."""
    parser = add_command(sub, name, help=help, description=description, epilog=epilog)
    add_common_options(parser)
    return parser


def add_parser(commands: Any) -> None:
    gyms = add_command(
        commands,
        "gyms",
        help="start, list, and remove the EOG gym containers (Docker or Podman)",
        description="The seven EOG gym servers as containers, images pinned by digest.",
        epilog="example: eog-core gyms up --domains csm,itsm --write-directory gyms.json",
    )
    sub = gyms.add_subparsers(dest="gyms_command", required=True, metavar="ACTION")
    up = _action(
        sub,
        "up",
        help="start gym containers and wait until each answers MCP",
        description="Start one container per domain and replica, published on 127.0.0.1,\n"
        "and wait until each answers an MCP initialize and tools/list. They are left\n"
        "running (owner 'detached'; gyms down removes them), or with --foreground held\n"
        "until Ctrl-C/SIGTERM, a dead one replaced (a crash-looping one given up after\n"
        "a few tries, which ends the command with exit 3), and removed at the end.",
        epilog="examples:\n"
        "  eog-core gyms up --engine podman --domains csm,itsm --write-directory gyms.json\n"
        "  eog-core gyms up --for eog-dataset --replicas 2 --foreground\n"
        "  eog-core run eog-dataset --gyms gyms.json ...",
    )
    _engine_options(up)
    _selection_options(up, "start")
    up.add_argument("--replicas", type=int, default=1, metavar="N", help="containers per domain")
    up.add_argument(
        "--fixed-ports",
        action="store_true",
        help="upstream's host ports (8001...; +100 per further replica), not free ones",
    )
    up.add_argument(
        "--run-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument added to each container run (also $EOG_FLEET_RUN_ARGS)",
    )
    up.add_argument(
        "--health-timeout",
        type=positive_seconds,
        default=120.0,
        metavar="SECONDS",
        help="how long each gym may take to answer MCP",
    )
    up.add_argument(
        "--write-directory",
        type=Path,
        metavar="FILE",
        help="write the gym directory (JSON) for run --gyms FILE",
    )
    up.add_argument(
        "--foreground",
        action="store_true",
        help="hold the containers until Ctrl-C/SIGTERM, then remove them",
    )
    up.add_argument(
        "--json",
        action="store_true",
        help="print the fleet as JSON (with --foreground: one line, once every gym answers)",
    )
    up.set_defaults(handler=_up)
    status = _action(
        sub,
        "status",
        help="list the gym containers eog-core started",
        description="List eog-core's gym containers (found by label): domain, replica,\n"
        "state, URL and owner, the process that removes them at its exit (pid and\n"
        "command) or 'detached'. Without --engine or $EOG_ENGINE, every installed\n"
        "engine (docker, podman) is asked.",
        epilog="example: eog-core gyms status --json",
    )
    _engine_options(status, search=True)
    status.add_argument("--json", action="store_true", help="print the containers as JSON")
    status.set_defaults(handler=status_command)
    logs = _action(
        sub,
        "logs",
        help="print a gym container's log",
        description="Print the last lines of one gym container's log (stdout and stderr).",
        epilog="example: eog-core gyms logs csm --replica 1 --tail 200",
    )
    _engine_options(logs, search=True)
    logs.add_argument(
        "domain", choices=list(CATALOGUE), metavar="DOMAIN", help=", ".join(CATALOGUE)
    )
    logs.add_argument(
        "--replica", type=int, default=0, metavar="N", help="which replica (0, 1, ...)"
    )
    logs.add_argument("--tail", type=int, default=100, metavar="LINES", help="how many last lines")
    logs.set_defaults(handler=logs_command)
    remove = _action(
        sub,
        "down",
        help="remove the gym containers eog-core started",
        description="Remove eog-core's detached gym containers and those whose owner died.\n"
        "A live owner's (a foreground gyms up, a run --launch) are left, naming the\n"
        "owner, and the command exits 3: that owner would replace them within seconds;\n"
        "stop it instead (it removes its own), or pass --force, and the owner then\n"
        "gives those gyms up.",
        epilog="examples:\n  eog-core gyms down\n  eog-core gyms down --force --json",
    )
    _engine_options(remove, search=True)
    remove.add_argument(
        "--force",
        action="store_true",
        help="remove a live owner's containers too (it gives them up, never replaces them)",
    )
    remove.add_argument(
        "--json", action="store_true", help="print what was removed and left as JSON"
    )
    remove.set_defaults(handler=down_command)
    compose = _action(
        sub,
        "compose",
        help="print a Compose file for the pinned gym services",
        description="Print the same pinned gym services as a Compose file, for\n"
        "docker compose -f FILE up -d (nothing is started).",
        epilog="example: eog-core gyms compose --domains csm,itsm > compose.yaml",
    )
    _selection_options(compose, "write")
    compose.set_defaults(handler=_compose)


def _images(values: list[str]) -> dict[str, str]:
    images: dict[str, str] = {}
    for value in values:
        domain, sep, ref = value.partition("=")
        if not sep or not domain or not ref:
            raise UsageError(f"--image takes DOMAIN=REF, got {value!r}")
        if domain != "*" and domain not in CATALOGUE:
            raise UsageError(f"--image {value}: unknown domain {domain!r}")
        images[domain] = ref
    return images


def _domains(args: argparse.Namespace) -> list[str]:
    if args.domains and args.for_tasks:
        raise UsageError("give --domains or --for, not both")
    if args.for_tasks:
        return domains_for_tasks(task for path in args.for_tasks for task in load_tasks(path))
    return [s.domain for s in services_for((args.domains or "all").split(","))]


def _engine(args: argparse.Namespace, **overrides: Any) -> FleetOptions:
    """FleetOptions from the environment, ``--engine`` and ``--engine-arg``, then ``overrides``."""
    options = options_from_env(engine_executable=args.engine or default_engine(), **overrides)
    return attrs.evolve(options, engine=with_args(options.engine, args))


def _usage(command: str, exc: UsageError) -> int:
    print(f"eog-core gyms {command}: error: {exc}", file=sys.stderr)
    return EXIT_USAGE


def _up(args: argparse.Namespace) -> int:
    try:
        if args.replicas < 1:
            raise UsageError(f"--replicas must be at least 1, got {args.replicas}")
        images = _images(args.image)
        domains = _domains(args)
        options = _engine(
            args,
            domains=domains,
            replicas=args.replicas,
            fixed_ports=args.fixed_ports,
            health_timeout=args.health_timeout,
            detached=not args.foreground,
            registry=args.registry,
            max_lifecycles=None,
        )
    except UsageError as exc:
        return _usage("up", exc)
    if images:
        options = attrs.evolve(options, images={**options.images, **images})
    if args.run_arg:
        engine = options.engine
        options = attrs.evolve(
            options,
            engine=attrs.evolve(engine, extra_run_args=(*engine.extra_run_args, *args.run_arg)),
        )
    return asyncio.run(_hold(options, args))


async def _hold(options: FleetOptions, args: argparse.Namespace) -> int:
    """Start the fleet and report it; a signal while starting cancels the start (what
    started is removed), a signal once up ends ``--foreground``."""
    fleet = GymFleet(options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()

    def on_signal() -> None:
        if fleet.started:
            stop.set()
        elif main is not None:
            main.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        try:
            await fleet.start()
        except asyncio.CancelledError:
            print(
                "eog-core gyms up: interrupted while starting; the containers it started are "
                "removed",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        except FleetError as exc:
            executable = options.engine.executable
            if str(exc).startswith(f"{executable} ") and not os.environ.get("EOG_ENGINE"):
                raise FleetError(f"{exc}{engine_hint(executable)}") from exc
            raise
        try:
            _report(fleet, args)
            if args.foreground and await _failed_before_stop(fleet, stop):
                return EXIT_INPUT
        finally:
            await fleet.aclose()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return EXIT_OK


async def _failed_before_stop(fleet: GymFleet, stop: asyncio.Event) -> bool:
    """Hold the fleet until a signal (False) or until a gym is given up for good (True,
    said on stderr: the directory written would name a dead replica)."""
    stopping = asyncio.ensure_future(stop.wait())
    failing = asyncio.ensure_future(fleet.wait_failure())
    try:
        await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        failing.cancel()
    if stopping.done() and not stopping.cancelled():
        return False
    print(  # the reason is in the log just above (an ERROR, shown even with -q)
        "eog-core gyms up: stopping: a gym was given up (see above); the fleet's containers "
        "are removed",
        file=sys.stderr,
    )
    return True


def _report(fleet: GymFleet, args: argparse.Namespace) -> None:
    if args.write_directory:
        fleet.write_directory(args.write_directory)
    if args.json:
        emit_json(
            {
                "fleet": fleet.fleet_id,
                "gyms": fleet.table(),
                "containers": fleet.containers(),
                "healthy_after_seconds": fleet.startup_seconds,
            },
            indent=None if args.foreground else 2,
        )  # one line: a reader waits on it
    else:
        print(
            table(
                ["domain", "replica", "container", "url"],
                [[c["domain"], c["replica"], c["name"], c["url"]] for c in fleet.containers()],
            )
        )
        if args.write_directory:
            print(
                f"gym directory: {args.write_directory} (eog-core run ... --gyms "
                f"{args.write_directory})"
            )
        print("stop with Ctrl-C" if args.foreground else "remove with: eog-core gyms down")
    sys.stdout.flush()


def _compose(args: argparse.Namespace) -> int:
    try:
        images = _images(args.image)
        services = services_for(_domains(args))
    except UsageError as exc:
        return _usage("compose", exc)
    options = FleetOptions(registry=args.registry, images=images, max_lifecycles=None)
    sys.stdout.write(compose_file(services, images=[options.image_for(s) for s in services]))
    return EXIT_OK
