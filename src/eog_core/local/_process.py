"""A local gym in its own process (``eog-core serve-local``), to kill and restart on its port.

Chaos runs need what an in-process gym cannot do: die at once, mid-request,
and come back empty on the same address. ``GymProcess`` starts the real
command line, waits for ``/health``, and kills with SIGKILL. With ``journal``
the gym's ledger survives the kill (see :class:`Ledger.from_journal`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import aiohttp
import attrs

__all__ = ["GymProcess"]


@attrs.define(kw_only=True)
class GymProcess:
    """``async with GymProcess(domain="demo", journal=path) as gym: gym.url``; ``await gym.restart()``.

    ``port=0``: the first gym binds a free port itself and announces it (``serve-local
    --port 0 --json``), so no other program can be given that port between a pick and
    the bind; restarts reuse it.
    """

    domain: str = "demo"
    host: str = "127.0.0.1"
    port: int = 0
    sse: bool = False
    journal: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    log: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    """Where the gym's stderr goes (default: discarded)."""
    startup_timeout: float = 60.0
    restarts: int = attrs.field(default=0, init=False)
    _process: asyncio.subprocess.Process | None = attrs.field(default=None, init=False, repr=False)
    _restarting: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False, repr=False)

    @property
    def url(self) -> str:
        if self.port == 0:
            raise RuntimeError("the gym process was never started")
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        """Spawn the gym and wait until ``/health`` answers (RuntimeError if it never does)."""
        if self.running:
            raise RuntimeError("the gym process is already running")
        announce = self.port == 0
        command = [
            sys.executable,
            "-m",
            "eog_core",
            "serve-local",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--domain",
            self.domain,
        ]
        if self.sse:
            command.append("--sse")
        if self.journal is not None:
            command += ["--journal", str(self.journal)]
        if announce:
            command.append("--json")
        with contextlib.ExitStack() as files:
            stderr: Any = asyncio.subprocess.DEVNULL
            if self.log is not None:
                stderr = files.enter_context(self.log.open("ab"))
            self._process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE if announce else asyncio.subprocess.DEVNULL,
                stderr=stderr,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            if announce:
                self.port = await self._announced_port()
            await self._wait_healthy()
        except BaseException:
            await self.kill()
            raise

    async def health(self) -> dict[str, Any] | None:
        """The gym's ``/health`` body, or None when it does not answer."""
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"{self.url}/health", timeout=aiohttp.ClientTimeout(total=5)) as response,
            ):
                if response.status != 200:
                    return None
                body: dict[str, Any] = await response.json()
                return body
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            return None

    async def _announced_port(self) -> int:
        """The port in the gym's first line of output (``--json``); it prints nothing after."""
        process = self._process
        assert process is not None and process.stdout is not None
        async with asyncio.timeout(self.startup_timeout):
            line = await process.stdout.readline()
        try:
            port = urlsplit(str(json.loads(line)["url"])).port
        except (ValueError, KeyError, TypeError):
            port = None
        if port is None:
            if line:
                raise RuntimeError(f"gym process announced no port: {line[:200]!r}")
            code = await process.wait()
            raise RuntimeError(
                f"gym process exited with {code} before serving"
                + (f" (see {self.log})" if self.log else "")
            )
        return port

    async def _wait_healthy(self) -> None:
        process = self._process
        assert process is not None
        delay = 0.05
        async with asyncio.timeout(self.startup_timeout):
            while await self.health() is None:
                if process.returncode is not None:
                    raise RuntimeError(
                        f"gym process exited with {process.returncode} before serving"
                        + (f" (see {self.log})" if self.log else "")
                    )
                await asyncio.sleep(delay)
                delay = min(0.5, delay * 2)

    async def kill(self) -> None:
        """SIGKILL: the gym dies at once, mid-request, with every database."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()

    async def restart(self) -> None:
        """Kill the gym and start a fresh one on the same port (one restart at a time)."""
        async with self._restarting:
            await self.kill()
            self.restarts += 1
            await self.start()

    async def stop(self) -> None:
        """Interrupt the gym (as Ctrl-C would), SIGKILL if it lingers. Idempotent."""
        process = self._process
        if process is None or process.returncode is not None:
            self._process = None
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(10):
                await process.wait()
        except TimeoutError:
            pass
        await self.kill()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
