"""``eog-core gyms status|logs|down``: the gym containers eog-core started, found by label
on whichever engine runs them.

Without ``--engine`` or ``$EOG_ENGINE`` these look on every engine installed (docker,
podman): ``gyms up --engine podman`` and a bare ``gyms status`` meet even with a
``docker`` client on the PATH whose daemon does not answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
from typing import Any

import attrs

from eog_core.cli._common import EXIT_INPUT, EXIT_OK, emit_json, table
from eog_core.errors import FleetError
from eog_core.fleet import (
    CATALOGUE,
    LABEL_DOMAIN,
    LABEL_MANAGED,
    LABEL_REPLICA,
    Container,
    ContainerEngine,
    options_from_env,
    owner_of,
    remove_containers,
    split_held,
)

__all__ = ["default_engine", "down_command", "engine_hint", "logs_command", "status_command"]

ENGINES = ("docker", "podman")


def default_engine() -> str:
    """``$EOG_ENGINE``, else docker when installed, else podman."""
    return os.environ.get("EOG_ENGINE") or ("docker" if shutil.which("docker") else "podman")


def engine_hint(executable: str) -> str:
    """What to say when the engine eog-core chose does not answer."""
    others = [e for e in ENGINES if e != executable and shutil.which(e)]
    other = others[0] if others else "podman" if executable == "docker" else "docker"
    return (
        f" (is {executable} the engine that runs the gyms? choose another with --engine "
        f"{other} or EOG_ENGINE={other})"
    )


def with_args(engine: ContainerEngine, args: argparse.Namespace) -> ContainerEngine:
    """``engine`` with ``--engine-arg``s added before every command."""
    if not args.engine_arg:
        return engine
    return attrs.evolve(engine, global_args=(*engine.global_args, *args.engine_arg))


def _engines(args: argparse.Namespace) -> list[ContainerEngine]:
    """The engine asked for, or every installed one (the first when none is)."""
    chosen = args.engine or os.environ.get("EOG_ENGINE")
    names = [chosen] if chosen else [e for e in ENGINES if shutil.which(e)] or ["docker"]
    return [with_args(options_from_env(engine_executable=n).engine, args) for n in names]


async def _found(
    args: argparse.Namespace, labels: dict[str, str]
) -> list[tuple[ContainerEngine, Container]]:
    """Our containers with ``labels`` on each engine searched; an error only when no
    engine answered (naming each, with a hint at ``--engine``)."""
    engines = _engines(args)
    found: dict[str, tuple[ContainerEngine, Container]] = {}
    problems: list[str] = []
    for engine in engines:
        try:
            engine.find()
            containers = await engine.containers(labels)
        except FleetError as exc:
            problems.append(str(exc))
            continue
        for container in containers:  # podman-docker's docker is podman: once each
            found.setdefault(container.id, (engine, container))
    if len(problems) == len(engines):
        only = engines[0].executable
        hint = engine_hint(only) if len(engines) == 1 and shutil.which(only) else ""
        raise FleetError("; ".join(problems) + hint)
    return sorted(found.values(), key=lambda pair: (pair[1].domain, pair[1].replica))


def _row(container: Container, url: str) -> dict[str, Any]:
    owner = owner_of(container)
    return {
        "domain": container.domain,
        "replica": container.replica,
        "name": container.name,
        "status": container.status,
        "url": url,
        "owner": container.owner,
        "owner_state": owner.state,
        "owner_pid": owner.pid,
        "owner_command": owner.command,
        "held_by": owner.describe(),
    }


def status_command(args: argparse.Namespace) -> int:
    return asyncio.run(_status(args))


async def _status(args: argparse.Namespace) -> int:
    rows = []
    for engine, container in await _found(args, {LABEL_MANAGED: "1"}):
        url = ""
        service = CATALOGUE.get(container.domain)
        if container.running and service is not None:
            with contextlib.suppress(FleetError):
                port = await engine.host_port(container.id, service.container_port)
                url = f"http://127.0.0.1:{port}"
        rows.append({**_row(container, url), "engine": engine.executable})
    if args.json:
        emit_json({"containers": rows})
    elif rows:
        headers = ["domain", "replica", "container", "status", "url", "owner"]
        keys = ["domain", "replica", "name", "status", "url", "held_by"]
        print(table(headers, [[row[k] for k in keys] for row in rows]))
    else:
        print("no gym containers (start them with: eog-core gyms up)")
    return EXIT_OK


def logs_command(args: argparse.Namespace) -> int:
    return asyncio.run(_logs(args))


async def _logs(args: argparse.Namespace) -> int:
    labels = {LABEL_MANAGED: "1", LABEL_DOMAIN: args.domain, LABEL_REPLICA: str(args.replica)}
    found = await _found(args, labels)
    if not found:
        print(
            f"eog-core gyms logs: no {args.domain} container (replica {args.replica}) is up "
            "(eog-core gyms status lists them)",
            file=sys.stderr,
        )
        return EXIT_INPUT
    engine, container = found[0]
    sys.stdout.write(await engine.logs(container.id, tail=args.tail))
    return EXIT_OK


def down_command(args: argparse.Namespace) -> int:
    return asyncio.run(_down(args))


async def _down(args: argparse.Namespace) -> int:
    found = await _found(args, {LABEL_MANAGED: "1"})
    free, held = split_held([container for _, container in found])
    chosen = {c.id for c in (free + held if args.force else free)}
    by_engine: dict[str, tuple[ContainerEngine, list[str]]] = {}
    for engine, container in found:
        if container.id in chosen:
            by_engine.setdefault(engine.executable, (engine, []))[1].append(container.id)
    for engine, ids in by_engine.values():
        await remove_containers(engine, ids)
    left = [] if args.force else held
    if args.json:
        emit_json({"removed": len(chosen), "held": [_row(c, "") for c in left]})
    else:
        print(f"removed {len(chosen)} gym container(s)")
    if not left:
        return EXIT_OK
    owners = sorted({owner_of(c).describe() for c in left})
    print(
        f"eog-core gyms down: left {len(left)} gym container(s) of a live owner that would "
        f"replace them, {'; '.join(owners)}: stop it (Ctrl-C, or kill PID) and it removes "
        "them, or pass --force",
        file=sys.stderr,
    )
    return EXIT_INPUT
