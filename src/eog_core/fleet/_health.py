"""Waiting for a gym container to answer: TCP first, then an MCP ``initialize`` and
``tools/list``; a container that exits meanwhile fails at once, with its log tail."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

from eog_core.errors import FleetError, GymError
from eog_core.fleet._engine import ContainerEngine
from eog_core.gym import GymClient, Timeouts

__all__ = ["exited_error", "wait_healthy"]

log = logging.getLogger("eog_core.fleet")

STEP = 0.25
STATE_EVERY = 2.0  # seconds between looks at the container's state


async def _tcp_open(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 2.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _answers_mcp(url: str, gym: str) -> str | None:
    """None when the gym lists its tools over MCP; else why not."""
    timeouts = Timeouts(connect=2.0, rpc=10.0, admin=10.0)
    try:
        async with GymClient(url, name=gym, timeouts=timeouts) as client:
            await client.list_tools()
    except GymError as exc:
        return str(exc)
    return None


async def wait_healthy(
    engine: ContainerEngine, container: str, *, url: str, gym: str, domain: str, within: float
) -> float:
    """Seconds until the gym at ``url`` answered MCP; FleetError (with the log tail)
    when the container exits or ``within`` seconds pass first."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    last_state = started
    why = "no TCP connection yet"
    while True:
        if await _tcp_open(host, port):
            problem = await _answers_mcp(url, gym)
            if problem is None:
                elapsed = loop.time() - started
                log.info(
                    "gym %s (%s) healthy at %s after %.2f s", gym, container[:12], url, elapsed
                )
                return elapsed
            why = f"MCP not answering yet: {problem}"
        now = loop.time()
        if now - last_state >= STATE_EVERY:
            last_state = now
            if await _state(engine, container) is False:
                raise await exited_error(engine, container, domain)
        if now - started > within:
            tail = await engine.logs(container)
            raise FleetError(
                f"gym container for {domain} ({container[:12]}) did not answer at "
                f"{url} within {within:g} s ({why}); its log ends:\n{tail.rstrip()}",
                domain=domain,
                log_tail=tail,
            )
        await asyncio.sleep(STEP)


async def exited_error(engine: ContainerEngine, container: str, domain: str) -> FleetError:
    """The error for a gym container that stopped before answering, with its log tail."""
    await engine.call("wait", container, limit=10.0, check=False)  # its log complete
    tail = await engine.logs(container)
    return FleetError(
        f"gym container for {domain} ({container[:12]}) exited before answering; "
        f"its log ends:\n{tail.rstrip()}",
        domain=domain,
        log_tail=tail,
    )


async def _state(engine: ContainerEngine, container: str) -> bool | None:
    """True running, False exited, None unknown."""
    text = await engine.call("inspect", "--format", "{{.State.Running}}", container, check=False)
    value = text.strip().lower()
    return True if value == "true" else False if value == "false" else None
