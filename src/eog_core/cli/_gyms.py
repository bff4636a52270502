"""``eog-core gyms up|status|logs|down|compose``: the EOG gym containers.

``up`` starts them detached (labelled; ``down`` removes them) and writes the
directory file ``--gyms FILE`` reads; with ``--foreground`` it holds them until
Ctrl-C/SIGTERM, replacing any that dies, and removes them at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
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
    emit_json,
    positive_seconds,
    table,
)
from eog_core.errors import UsageError
from eog_core.fleet import (
    CATALOGUE,
    FleetOptions,
    GymFleet,
    compose_file,
    domains_for_tasks,
    down,
    options_from_env,
    services_for,
)
from eog_core.tasks import load_tasks

__all__ = ["add_parser", "default_engine"]

EXIT_INTERRUPTED = 130


def default_engine() -> str:
    """``$EOG_ENGINE``, else docker when installed, else podman."""
    return os.environ.get("EOG_ENGINE") or ("docker" if shutil.which("docker") else "podman")


def _engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        metavar="docker|podman",
        help="the container engine's client (default: $EOG_ENGINE, else docker "
        "when installed, else podman; a path works too)",
    )
    parser.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument before every engine command, e.g. --engine-arg=--runtime "
        "--engine-arg=runc (also $EOG_FLEET_ENGINE_ARGS)",
    )


def _selection_options(parser: argparse.ArgumentParser) -> None:
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
        help="start only the gyms these tasks name",
    )
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="DOMAIN=REF",
        help="run REF instead of the pinned image (DOMAIN '*' for every one)",
    )
    parser.add_argument("--registry", help="pull the pinned images from this registry/namespace")


def add_parser(commands: Any) -> None:
    gyms = add_command(
        commands,
        "gyms",
        help="start, list, and remove the EOG gym containers (Docker or Podman)",
        description="The seven EOG gym servers as containers, images pinned by digest.",
        epilog="example: eog-core gyms up --domains csm,itsm --write-directory gyms.json",
    )
    sub = gyms.add_subparsers(dest="gyms_command", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="start gym containers and wait until each answers MCP")
    _engine_options(up)
    _selection_options(up)
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
    up.add_argument("--health-timeout", type=positive_seconds, default=120.0, metavar="SECONDS")
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
    up.add_argument("--json", action="store_true")
    up.set_defaults(handler=_up)
    status = sub.add_parser("status", help="list the gym containers eog-core started")
    _engine_options(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=_status)
    logs = sub.add_parser("logs", help="print a gym container's log")
    _engine_options(logs)
    logs.add_argument("domain", choices=list(CATALOGUE), metavar="DOMAIN")
    logs.add_argument("--replica", type=int, default=0, metavar="N")
    logs.add_argument("--tail", type=int, default=100, metavar="LINES")
    logs.set_defaults(handler=_logs)
    remove = sub.add_parser("down", help="remove every gym container eog-core started")
    _engine_options(remove)
    remove.add_argument("--json", action="store_true")
    remove.set_defaults(handler=_down)
    compose = sub.add_parser("compose", help="print a Compose file for the pinned gym services")
    _selection_options(compose)
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
    if args.engine_arg:
        engine = options.engine
        options = attrs.evolve(
            options,
            engine=attrs.evolve(engine, global_args=(*engine.global_args, *args.engine_arg)),
        )
    return options


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
        try:
            _report(fleet, args)
            if args.foreground:
                await stop.wait()
        finally:
            await fleet.aclose()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return EXIT_OK


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


def _status(args: argparse.Namespace) -> int:
    return asyncio.run(_status_async(args))


async def _status_async(args: argparse.Namespace) -> int:
    from eog_core.fleet import LABEL_MANAGED

    engine = _engine(args).engine
    rows = []
    for container in sorted(
        await engine.containers({LABEL_MANAGED: "1"}), key=lambda c: (c.domain, c.replica)
    ):
        url = ""
        service = CATALOGUE.get(container.domain)
        if container.running and service is not None:
            with contextlib.suppress(Exception):
                url = f"http://127.0.0.1:{await engine.host_port(container.id, service.container_port)}"
        rows.append(
            {
                "domain": container.domain,
                "replica": container.replica,
                "name": container.name,
                "status": container.status,
                "url": url,
                "owner": container.owner,
            }
        )
    if args.json:
        emit_json({"containers": rows})
    elif rows:
        print(
            table(
                ["domain", "replica", "container", "status", "url", "owner"],
                [list(row.values()) for row in rows],
            )
        )
    else:
        print("no gym containers (start them with: eog-core gyms up)")
    return EXIT_OK


def _logs(args: argparse.Namespace) -> int:
    return asyncio.run(_logs_async(args))


async def _logs_async(args: argparse.Namespace) -> int:
    from eog_core.fleet import LABEL_DOMAIN, LABEL_MANAGED, LABEL_REPLICA

    engine = _engine(args).engine
    found = await engine.containers(
        {LABEL_MANAGED: "1", LABEL_DOMAIN: args.domain, LABEL_REPLICA: str(args.replica)}
    )
    if not found:
        print(
            f"eog-core gyms logs: no {args.domain} container (replica {args.replica}) is up",
            file=sys.stderr,
        )
        return EXIT_INPUT
    sys.stdout.write(await engine.logs(found[0].id, tail=args.tail))
    return EXIT_OK


def _down(args: argparse.Namespace) -> int:
    removed = asyncio.run(down(_engine(args).engine))
    if args.json:
        emit_json({"removed": removed})
    else:
        print(f"removed {removed} gym container(s)")
    return EXIT_OK


def _compose(args: argparse.Namespace) -> int:
    try:
        images = _images(args.image)
        services = services_for(_domains(args))
    except UsageError as exc:
        return _usage("compose", exc)
    options = FleetOptions(registry=args.registry, images=images, max_lifecycles=None)
    sys.stdout.write(compose_file(services, images=[options.image_for(s) for s in services]))
    return EXIT_OK
