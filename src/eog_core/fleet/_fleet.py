"""A fleet of gym containers: start, wait for health, hand back a GymDirectory,
restart replicas for the file-descriptor leak, remove everything at the end.

``async with GymFleet(options) as fleet: fleet.directory`` starts one container
per domain and replica (labelled with the owner ``HOST:PID``), removes on the way
in any container of ours whose owner died (a SIGKILLed run), and on the way out
every container it started. A replica that reached ``max_lifecycles`` task
lifecycles is drained by the directory (no new sessions; the ones in flight
finish), then replaced by a fresh container on the same host port, and returned
to service; a container that dies unplanned is drained and replaced the same way,
after a doubling delay, and given up (:meth:`GymFleet.wait_failure`) when it keeps
dying soon after each start, cannot be restarted, or was removed from outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import attrs

from eog_core._backoff import backoff_delay
from eog_core.errors import FleetError
from eog_core.fleet._catalogue import GymService, domains_for_tasks, services_for
from eog_core.fleet._engine import (
    LABEL_DOMAIN,
    LABEL_FLEET,
    LABEL_GYM,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_REPLICA,
)
from eog_core.fleet._health import exited_error, wait_healthy
from eog_core.fleet._options import FleetOptions
from eog_core.fleet._owners import reap_orphans
from eog_core.fleet._together import all_or_nothing
from eog_core.gym import GymDirectory, Replica
from eog_core.tasks import Task

__all__ = ["GymFleet", "launch"]

log = logging.getLogger("eog_core.fleet")

RESTART_ATTEMPTS = 3
CRASH_RESTARTS = 3
"""Replacements of a replica that keeps exiting soon after it starts, before it is given up."""
CRASH_BACKOFF = 1.0
"""Seconds before the first replacement; doubled for each further one (``MAX_BACKOFF`` at most)."""
MAX_BACKOFF = 30.0
STABLE_SECONDS = 300.0
"""A replica that served this long before exiting starts its count of crashes afresh."""


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
    crashes: int = 0
    """Unplanned exits in a row, each soon after its start (reset after ``STABLE_SECONDS``)."""
    healthy_at: float = 0.0


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
    failures: list[str] = attrs.field(factory=list, init=False)
    """One message per replica given up for good (see :meth:`wait_failure`)."""
    _failed: asyncio.Event = attrs.field(factory=asyncio.Event, init=False, repr=False)

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
            await all_or_nothing(
                self._run(m, self.options.host_port_for(m.service, m.replica))
                for m in self._members
            )
            times = await all_or_nothing(self._healthy(m) for m in self._members)
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
            # asked even when chosen: an answer says the container is up and published
            member.host_port = await engine.host_port(member.container, service.container_port)
        except FleetError:  # no published port: the container is already gone
            raise await exited_error(engine, member.container, service.domain) from None
        member.url = f"http://{self.options.bind_host}:{member.host_port}"

    async def _healthy(self, member: _Member) -> float:
        member.healthy_at = asyncio.get_running_loop().time()  # from its start, in fact
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
        state = state.strip().lower()
        if state == "true":  # the engine's wait failed, not the container
            log.warning("cannot watch gym container %s; it is not replaced if it dies", member.name)
            return
        member.planned = True
        self.directory.drain(member.service.gym, member.url)
        if state != "false":  # the engine no longer knows it: removed behind our back
            self._give_up(
                member,
                "was removed by another command (eog-core gyms down --force?); not replaced",
            )
            return
        loop = asyncio.get_running_loop()
        if loop.time() - member.healthy_at >= STABLE_SECONDS:
            member.crashes = 0  # it had served a good while: a crash, not a crash loop
        member.crashes += 1
        if member.crashes > CRASH_RESTARTS:
            tail = (await engine.logs(container)).rstrip()
            self._give_up(
                member,
                f"exited {member.crashes} times, each within {STABLE_SECONDS:g} s of "
                f"starting: not restarted again; its log ends:\n{tail}",
            )
            return
        delay = backoff_delay(
            member.crashes, initial=CRASH_BACKOFF, maximum=MAX_BACKOFF, jitter="none"
        )
        log.warning(
            "gym container %s (%s replica %d) exited unplanned: replacing it in %g s "
            "(restart %d of at most %d)",
            member.name,
            member.service.domain,
            member.replica,
            delay,
            member.crashes,
            CRASH_RESTARTS,
        )
        await asyncio.sleep(delay)
        await self._restart(member, planned=False)

    async def _restart(self, member: _Member, *, planned: bool) -> None:
        member.planned = True
        engine = self.options.engine
        problem = ""
        for attempt in range(1, RESTART_ATTEMPTS + 1):
            if attempt > 1:
                await asyncio.sleep(
                    backoff_delay(
                        attempt - 1, initial=CRASH_BACKOFF, maximum=math.inf, jitter="none"
                    )
                )
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
                problem = str(exc)
                log.error(
                    "restarting %s (attempt %d of %d) failed: %s",
                    member.name,
                    attempt,
                    RESTART_ATTEMPTS,
                    exc,
                )
        else:
            self._give_up(
                member, f"could not be restarted ({RESTART_ATTEMPTS} attempts): {problem}"
            )
            return
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

    def _give_up(self, member: _Member, reason: str) -> None:
        """The replica stays out of service (sessions waiting for it fail once the
        directory's ``return_timeout`` passes); :meth:`wait_failure` returns."""
        message = (
            f"gym container {member.name} ({member.service.domain} replica {member.replica}) "
            f"{reason}"
        )
        log.error("%s", message)
        self.failures.append(message)
        self._failed.set()

    async def wait_failure(self) -> str:
        """Wait until a replica is given up for good (crash loop, failed restarts, removed
        by another command); the first failure's message."""
        await self._failed.wait()
        return self.failures[0]

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


@contextlib.asynccontextmanager
async def launch(tasks: Iterable[Task], options: FleetOptions) -> AsyncIterator[GymDirectory]:
    """The gyms ``tasks`` need, as a GymDirectory, for the length of a run
    (``eog-core run --launch``); every container is removed at the end."""
    options = attrs.evolve(options, domains=domains_for_tasks(tasks), detached=False)
    async with GymFleet(options) as fleet, fleet.directory as directory:
        yield directory
