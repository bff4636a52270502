"""A fleet of gym containers: start, wait for health, hand back a GymDirectory,
restart replicas for the file-descriptor leak, remove everything at the end.

``async with GymFleet(options) as fleet: fleet.directory`` starts one container
per domain and replica (labelled with the owner ``HOST:PID``), removes on the way
in any container of ours whose owner died (a SIGKILLed run), and on the way out
every container it started. A replica that reached ``max_lifecycles`` task
lifecycles is drained by the directory (no new sessions; the ones in flight
finish), then replaced by a fresh container on the same host port, and returned
to service; a container that dies unplanned is drained and replaced the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from eog_core.errors import FleetError
from eog_core.fleet._catalogue import GymService, domains_for_tasks, services_for
from eog_core.fleet._engine import (
    LABEL_DOMAIN,
    LABEL_FLEET,
    LABEL_GYM,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_REPLICA,
    ContainerEngine,
    owner_alive,
)
from eog_core.fleet._health import exited_error, wait_healthy
from eog_core.fleet._options import FleetOptions
from eog_core.gym import GymDirectory, Replica
from eog_core.tasks import Task

__all__ = ["GymFleet", "down", "launch", "reap_orphans"]

log = logging.getLogger("eog_core.fleet")

RESTART_ATTEMPTS = 3
T = TypeVar("T")


@attrs.define(kw_only=True)
class _Member:
    service: GymService
    replica: int
    name: str
    container: str = ""
    host_port: int = 0
    url: str = ""
    planned: bool = False
    watcher: asyncio.Task[None] | None = None


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@attrs.define
class GymFleet:
    """The containers of one run; see the module docstring."""

    options: FleetOptions = attrs.field(factory=FleetOptions)
    fleet_id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:10], kw_only=True)
    restarts: int = attrs.field(default=0, init=False)
    startup_seconds: dict[str, float] = attrs.field(factory=dict, init=False)
    _members: list[_Member] = attrs.field(factory=list, init=False, repr=False)
    _directory: GymDirectory | None = attrs.field(default=None, init=False, repr=False)
    _podman: bool = attrs.field(default=False, init=False, repr=False)
    _tasks: set[asyncio.Task[None]] = attrs.field(factory=set, init=False, repr=False)
    _closing: bool = attrs.field(default=False, init=False, repr=False)

    @property
    def started(self) -> bool:
        """Every container answered; :attr:`directory` is ready."""
        return self._directory is not None

    @property
    def directory(self) -> GymDirectory:
        if self._directory is None:
            raise FleetError("the fleet is not started (use async with GymFleet(...))")
        return self._directory

    def table(self) -> dict[str, list[str]]:
        """Gym name -> replica URLs (the ``--gyms FILE`` format)."""
        table: dict[str, list[str]] = {}
        for member in self._members:
            table.setdefault(member.service.gym, []).append(member.url)
        return table

    def containers(self) -> list[dict[str, Any]]:
        return [
            {
                "domain": m.service.domain,
                "gym": m.service.gym,
                "replica": m.replica,
                "name": m.name,
                "container": m.container[:12],
                "url": m.url,
            }
            for m in self._members
        ]

    def write_directory(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.table(), indent=2) + "\n", encoding="utf-8")

    async def __aenter__(self) -> GymFleet:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        engine = self.options.engine
        engine.find()
        self._podman = await engine.is_podman()
        reaped = await reap_orphans(engine)
        if reaped:
            log.warning("removed %d gym container(s) left by a process that died", reaped)
        services = services_for(self.options.domains)
        self._members = [
            _Member(service=s, replica=r, name=f"eog-{s.domain}-{self.fleet_id}-{r}")
            for s in services
            for r in range(self.options.replicas)
        ]
        try:
            await _all_or_nothing(
                self._run(m, self.options.host_port_for(m.service, m.replica))
                for m in self._members
            )
            times = await _all_or_nothing(self._healthy(m) for m in self._members)
        except BaseException:
            self._remove_all()  # every run has ended: nothing is still being created
            raise
        self.startup_seconds = {m.name: t for m, t in zip(self._members, times, strict=True)}
        self._directory = GymDirectory(
            self.table(),
            max_lifecycles=self.options.max_lifecycles,
            on_exhausted=self._exhausted,
            allow_fallback=False,
            return_timeout=RESTART_ATTEMPTS * (self.options.health_timeout + 30.0),
        )
        if not self.options.detached:
            for member in self._members:
                self._watch(member)

    def _labels(self, member: _Member) -> dict[str, str]:
        return {
            LABEL_MANAGED: "1",
            LABEL_FLEET: self.fleet_id,
            LABEL_DOMAIN: member.service.domain,
            LABEL_GYM: member.service.gym,
            LABEL_REPLICA: str(member.replica),
            LABEL_OWNER: "detached" if self.options.detached else _owner(),
        }

    async def _run(self, member: _Member, host_port: int | None) -> None:
        service, engine = member.service, self.options.engine
        args = engine.run_args(
            image=self.options.image_for(service),
            name=member.name,
            labels=self._labels(member),
            container_port=service.container_port,
            host_port=host_port,
            bind_host=self.options.bind_host,
            environment=service.environment,
        )
        member.container = (await engine.call(*args, shielded=True)).strip()
        try:
            member.host_port = host_port or await engine.host_port(
                member.container, service.container_port
            )
        except FleetError:  # no published port: the container is already gone
            raise await exited_error(engine, member.container, service.domain) from None
        member.url = f"http://{self.options.bind_host}:{member.host_port}"

    async def _healthy(self, member: _Member) -> float:
        return await wait_healthy(
            self.options.engine,
            member.container,
            url=member.url,
            gym=member.service.gym,
            domain=member.service.domain,
            within=self.options.health_timeout,
        )

    def _exhausted(self, replica: Replica) -> None:
        """The directory drained a replica at its cap: replace its container."""
        member = next((m for m in self._members if m.url == replica.url), None)
        if member is not None and not member.planned and not self._closing:
            self._spawn(self._restart(member, planned=True))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _watch(self, member: _Member) -> None:
        member.watcher = asyncio.get_running_loop().create_task(self._wait_exit(member))

    async def _wait_exit(self, member: _Member) -> None:
        container = member.container
        engine = self.options.engine
        await engine.call("wait", container, limit=None, check=False)
        if self._closing or member.planned or member.container != container:
            return
        state = await engine.call(
            "inspect", "--format", "{{.State.Running}}", container, check=False
        )
        if state.strip().lower() == "true":  # the engine's wait failed, not the container
            log.warning("cannot watch gym container %s; it is not replaced if it dies", member.name)
            return
        log.warning(
            "gym container %s (%s replica %d) exited unplanned: replacing it",
            member.name,
            member.service.domain,
            member.replica,
        )
        self.directory.drain(member.service.gym, member.url)
        await self._restart(member, planned=False)

    async def _restart(self, member: _Member, *, planned: bool) -> None:
        member.planned = True
        engine = self.options.engine
        for attempt in range(1, RESTART_ATTEMPTS + 1):
            try:
                if member.watcher is not None and member.watcher is not asyncio.current_task():
                    member.watcher.cancel()
                # By name too: a run that failed may have left a created container.
                await engine.call(
                    *engine.remove_args([member.container, member.name], podman=self._podman),
                    check=False,
                    shielded=True,
                )
                await self._run(member, member.host_port)
                await self._healthy(member)
                break
            except FleetError as exc:
                log.error(
                    "restarting %s (attempt %d of %d) failed: %s",
                    member.name,
                    attempt,
                    RESTART_ATTEMPTS,
                    exc,
                )
        else:
            return  # stays drained: sessions waiting for it fail with the directory's error
        self.restarts += 1
        log.info(
            "gym container %s %s and back in service",
            member.name,
            "restarted after its lifecycle cap" if planned else "replaced",
        )
        member.planned = False
        self.directory.reset(member.service.gym, member.url)
        if not self._closing:
            self._watch(member)

    async def aclose(self) -> None:
        """Remove every container this fleet started (detached: leave them). Idempotent."""
        self._closing = True
        pending = [*self._tasks, *(m.watcher for m in self._members if m.watcher is not None)]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if not self.options.detached:
            self._remove_all()
        if self._directory is not None:
            await self._directory.aclose()

    def _remove_all(self) -> None:
        ids = [m.container for m in self._members if m.container]
        try:
            self.options.engine.remove_now(
                ids, podman=self._podman, labels={LABEL_FLEET: self.fleet_id}
            )
        except (
            OSError,
            subprocess.SubprocessError,
        ) as exc:  # the engine vanished: say so, the labels find them later
            log.error("could not remove gym containers %s: %s", ", ".join(ids), exc)
        for member in self._members:
            member.container = ""


async def _all_or_nothing(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run the coroutines at once; their results, in order. When one fails, or this is
    cancelled, the others are cancelled and awaited to their end (a shielded ``run``
    finishes its create) before the first failure, or the cancellation, is raised."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:  # the first failure in the members' order
            failure = task.exception() if task in done and not task.cancelled() else None
            if failure is not None:
                raise failure
        return [t.result() for t in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await _settle(tasks)


async def _settle(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait until every task has ended, through any further cancellation of ours."""
    cancelled: asyncio.CancelledError | None = None
    while not all(t.done() for t in tasks):
        try:
            await asyncio.wait([t for t in tasks if not t.done()])
        except asyncio.CancelledError as exc:
            cancelled = exc
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" warning
    if cancelled is not None:
        raise cancelled


async def reap_orphans(engine: ContainerEngine) -> int:
    """Remove our containers whose owner process (on this host) is gone; how many."""
    hostname = socket.gethostname()
    orphans = [
        c.id
        for c in await engine.containers({LABEL_MANAGED: "1"})
        if not owner_alive(c.owner, hostname=hostname)
    ]
    if orphans:
        await engine.call(
            *engine.remove_args(orphans, podman=await engine.is_podman()),
            check=False,
            shielded=True,
        )
    return len(orphans)


async def down(engine: ContainerEngine) -> int:
    """Remove every container of ours (``eog-core gyms down``); how many."""
    found = [c.id for c in await engine.containers({LABEL_MANAGED: "1"})]
    if found:
        await engine.call(*engine.remove_args(found, podman=await engine.is_podman()))
    return len(found)


@contextlib.asynccontextmanager
async def launch(tasks: Iterable[Task], options: FleetOptions) -> AsyncIterator[GymDirectory]:
    """The gyms ``tasks`` need, as a GymDirectory, for the length of a run
    (``eog-core run --launch``); every container is removed at the end."""
    options = attrs.evolve(options, domains=domains_for_tasks(tasks), detached=False)
    async with GymFleet(options) as fleet, fleet.directory as directory:
        yield directory
