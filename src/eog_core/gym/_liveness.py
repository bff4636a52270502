"""Whether a gym is answering (:meth:`~eog_core.gym.GymClient.probe`): ``/health``
first; a gym without it (404/405) is asked over MCP (the handshake and a ``ping``).
Any JSON-RPC answer, even an error, or an HTTP refusal such as 401 means it is up.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from eog_core.errors import GymError, GymHTTPError, JsonRpcError

__all__ = ["probe_gym"]

log = logging.getLogger("eog_core.gym")


async def probe_gym(
    name: str | None, health: Callable[[], Awaitable[object]], ping: Callable[[], Awaitable[object]]
) -> bool:
    """Is gym ``name`` answering ``health`` (a GET of ``/health``) or ``ping`` (over
    MCP)? Never raises a gym error."""
    try:
        await health()
        return True
    except GymHTTPError as exc:
        if exc.status not in (404, 405):
            log.info("gym %s: health check answered HTTP %s", name, exc.status)
            return False
    except GymError as exc:
        log.info("gym %s: health check failed: %s", name, exc)
        return False
    try:
        await ping()
    except JsonRpcError:
        return True  # it answered, if only to say it has no ping
    except GymHTTPError as exc:
        alive = exc.status < 500 and exc.status != 404
        if not alive:
            log.info("gym %s: no /health, and MCP answered HTTP %s", name, exc.status)
        return alive
    except GymError as exc:
        log.info("gym %s: no /health, and MCP failed: %s", name, exc)
        return False
    return True
