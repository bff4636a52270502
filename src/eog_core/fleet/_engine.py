"""Docker or Podman through its command-line client: argument building and the calls.

The argument lists are built by pure functions (tested without an engine); the
calls run the client as a subprocess and turn a failure into one
:class:`~eog_core.errors.FleetError` naming the command and its stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from eog_core.errors import FleetError

__all__ = [
    "LABEL_DOMAIN",
    "LABEL_FLEET",
    "LABEL_GYM",
    "LABEL_MANAGED",
    "LABEL_OWNER",
    "LABEL_REPLICA",
    "Container",
    "ContainerEngine",
    "owner_alive",
]

LABEL_MANAGED = "io.eog-core.managed"
LABEL_FLEET = "io.eog-core.fleet"
LABEL_DOMAIN = "io.eog-core.domain"
LABEL_GYM = "io.eog-core.gym"
LABEL_REPLICA = "io.eog-core.replica"
LABEL_OWNER = "io.eog-core.owner"
"""``HOST:PID`` of the process that removes the container at its exit, or ``detached``."""

COMMAND_TIMEOUT = 300.0


def _host_limit(kind: int, wanted: int = 65536) -> int:
    """``wanted``, or this host's hard limit when lower (a local engine refuses more)."""
    hard = resource.getrlimit(kind)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


@attrs.frozen(kw_only=True)
class Container:
    """A container the engine reports, with our labels."""

    id: str
    name: str
    running: bool
    status: str
    labels: Mapping[str, str]

    @property
    def domain(self) -> str:
        return self.labels.get(LABEL_DOMAIN, "?")

    @property
    def replica(self) -> int:
        return int(self.labels.get(LABEL_REPLICA, "0"))

    @property
    def owner(self) -> str:
        return self.labels.get(LABEL_OWNER, "")


@attrs.frozen(kw_only=True)
class ContainerEngine:
    """A container engine's client: ``executable`` (``docker``, ``podman`` or a path),
    ``global_args`` before every command (``--runtime runc``), ``extra_run_args`` added to
    each ``run`` (volumes, a network), and the ``nofile``/``nproc`` ulimits."""

    executable: str = "docker"
    global_args: Sequence[str] = ()
    extra_run_args: Sequence[str] = ()
    nofile: int = attrs.field(factory=lambda: _host_limit(resource.RLIMIT_NOFILE))
    nproc: int = attrs.field(factory=lambda: _host_limit(resource.RLIMIT_NPROC, 4096))

    def argv(self, *args: str) -> list[str]:
        return [self.executable, *self.global_args, *args]

    def run_args(
        self,
        *,
        image: str,
        name: str,
        labels: Mapping[str, str],
        container_port: int,
        host_port: int | None,
        bind_host: str = "127.0.0.1",
        environment: Mapping[str, str] | None = None,
    ) -> list[str]:
        """The client arguments of ``run -d`` for one gym: published on ``bind_host`` (a free port when ``host_port``
        is None), labelled, with raised ulimits."""
        published = f"{bind_host}:{'' if host_port is None else host_port}:{container_port}"
        args = [
            "run",
            "-d",
            "--name",
            name,
            "-p",
            published,
            "--ulimit",
            f"nofile={self.nofile}:{self.nofile}",
            "--ulimit",
            f"nproc={self.nproc}:{self.nproc}",
        ]
        for key, value in sorted(labels.items()):
            args += ["--label", f"{key}={value}"]
        for key, value in sorted((environment or {}).items()):
            args += ["--env", f"{key}={value}"]
        return [*args, *self.extra_run_args, image]

    def remove_args(self, ids: Sequence[str], *, podman: bool) -> list[str]:
        """Force-remove at once (Podman would otherwise wait out the stop timeout)."""
        return ["rm", "-f", *(["-t", "0"] if podman else []), *ids]

    def find(self) -> str:
        """The executable's path; a missing engine is one clear error."""
        found = shutil.which(self.executable)
        if found is None:
            raise FleetError(
                f"container engine {self.executable!r} not found on PATH (install "
                "Docker, or Podman: apt-get install podman runc)"
            )
        return found

    async def call(
        self,
        *args: str,
        limit: float | None = COMMAND_TIMEOUT,
        check: bool = True,
        shielded: bool = False,
    ) -> str:
        """Run one client command; its stdout, or a FleetError with its stderr.

        ``shielded`` (a ``run`` or ``rm``): the command runs in a session of its own (a
        terminal's Ctrl-C does not reach it) and a cancellation waits for it to end
        before it is re-raised: a ``run`` killed mid-create leaves its conmon and
        ``runc init`` behind, in no list of the engine's.
        """
        argv = self.argv(*args)
        self.find()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=shielded,
        )
        communicating = asyncio.ensure_future(process.communicate())
        try:
            if shielded:
                out, err = await _outlast_cancellation(communicating, limit)
            else:
                out, err = await asyncio.wait_for(communicating, limit)
        except BaseException:
            if process.returncode is None:
                process.kill()
                await process.wait()
            communicating.cancel()
            raise
        if check and process.returncode != 0:
            detail = err.decode(errors="replace").strip().splitlines()
            raise FleetError(
                f"{self.executable} {args[0] if args else ''} failed (exit "
                f"{process.returncode}): "
                f"{detail[-1] if detail else 'no message'}"
            )
        return out.decode(errors="replace")

    async def is_podman(self) -> bool:
        """Podman, or Docker? (``podman-docker``'s ``docker`` is Podman.)"""
        return "podman" in (await self.call("--version", check=False)).lower()

    async def containers(self, labels: Mapping[str, str]) -> list[Container]:
        """Every container (running or not) carrying all of ``labels``."""
        filters = [f"--filter=label={key}={value}" for key, value in labels.items()]
        ids = (await self.call("ps", "-a", "-q", "--no-trunc", *filters)).split()
        if not ids:
            return []
        text = await self.call("inspect", *ids, check=False)
        try:
            found = json.loads(text or "[]")
        except ValueError as exc:
            raise FleetError(
                f"{self.executable} inspect answered something other than JSON: {exc}"
            ) from exc
        return [_container(item) for item in found if isinstance(item, dict)]

    async def host_port(self, container: str, container_port: int) -> int:
        """The host port the engine published ``container_port`` on."""
        text = await self.call("port", container, f"{container_port}/tcp")
        for line in text.split():
            port = line.rpartition(":")[2]
            if port.isdigit():
                return int(port)
        raise FleetError(f"{self.executable} port {container}: no published port in {text!r}")

    async def logs(self, container: str, tail: int = 40) -> str:
        """The last ``tail`` lines of the container's log (stdout and stderr). Cut here,
        not with ``logs --tail``: Podman 4.3 sometimes answers that with nothing."""
        argv = self.argv("logs", container)
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), COMMAND_TIMEOUT)
        lines = out.decode(errors="replace").splitlines(keepends=True)
        return "".join(lines[-tail:]) if tail > 0 else ""

    def remove_now(
        self, ids: Sequence[str], *, podman: bool, labels: Mapping[str, str] | None = None
    ) -> None:
        """Remove containers, and those carrying all of ``labels``, synchronously (safe
        during shutdown and cancellation)."""
        if labels:
            filters = [f"--filter=label={key}={value}" for key, value in labels.items()]
            found = subprocess.run(
                self.argv("ps", "-a", "-q", "--no-trunc", *filters),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
                timeout=COMMAND_TIMEOUT,
            ).stdout.split()
            ids = sorted({*ids, *found})
        if not ids:
            return
        subprocess.run(
            self.argv(*self.remove_args(ids, podman=podman)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
            timeout=COMMAND_TIMEOUT,
            start_new_session=True,  # a second Ctrl-C must not cut the removal short
        )


async def _outlast_cancellation(
    future: asyncio.Future[tuple[bytes, bytes]], limit: float | None
) -> tuple[bytes, bytes]:
    """``future``'s result, awaited to its end even through cancellations (the last one
    is re-raised then); TimeoutError after ``limit`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = None if limit is None else loop.time() + limit
    cancelled: asyncio.CancelledError | None = None
    while not future.done():
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        try:
            await asyncio.wait({future}, timeout=remaining)
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    return future.result()


def _container(item: Mapping[str, Any]) -> Container:
    config = item.get("Config") or {}
    state = item.get("State") or {}
    labels = config.get("Labels") or item.get("Labels") or {}
    return Container(
        id=str(item.get("Id", "")),
        name=str(item.get("Name", "")).lstrip("/"),
        running=bool(state.get("Running")),
        status=str(state.get("Status", "")),
        labels={str(k): str(v) for k, v in labels.items()},
    )


def owner_alive(owner: str, *, hostname: str) -> bool:
    """Is the ``HOST:PID`` owner still running? Detached and foreign-host owners count as alive."""
    host, _, pid = owner.rpartition(":")
    if owner == "detached" or host != hostname or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
