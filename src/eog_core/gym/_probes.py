"""Probing a gym's replicas for :class:`~eog_core.gym.GymDirectory`: one probe per
replica in flight, joined by every caller that asks meanwhile, each a short-lived
:class:`~eog_core.gym.GymClient` asking ``/health`` (or the MCP endpoint).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from eog_core.gym._client import GymClient, Timeouts
from eog_core.gym._replica import Replica
from eog_core.gym._transport import Transport
from eog_core.tasks import AuthConfig

__all__ = ["Probes", "joined_probes", "probe_replica"]

Probes = dict[tuple[str, str], asyncio.Future[bool]]
"""The probes in flight on one event loop, by (gym, URL)."""


async def joined_probes(
    probes: Probes,
    replicas: Sequence[Replica],
    probe: Callable[[Replica], Coroutine[Any, Any, bool]],
) -> list[Replica]:
    """The replicas that answer ``probe``; a probe already in flight is joined."""
    futures = []
    for replica in replicas:
        key = (replica.gym, replica.url)
        running = probes.get(key)
        if running is None or running.done():
            running = probes[key] = asyncio.ensure_future(probe(replica))
            running.add_done_callback(functools.partial(_forget_probe, probes, key))
        futures.append(running)
    answers = await asyncio.gather(*(asyncio.shield(f) for f in futures))
    return [replica for replica, alive in zip(replicas, answers, strict=True) if alive]


async def probe_replica(
    replica: Replica, auth: AuthConfig | None, transport: Transport | None, seconds: float
) -> bool:
    """Whether ``replica`` answers (:meth:`GymClient.probe`) within ``seconds``."""
    async with GymClient(
        replica.url,
        name=replica.gym,
        auth=auth,
        transport=transport,
        timeouts=Timeouts(connect=seconds, admin=seconds),
        share_mcp=True,
    ) as client:
        return await client.probe()


def _forget_probe(probes: Probes, key: tuple[str, str], probe: asyncio.Future[bool]) -> None:
    if probes.get(key) is probe:
        del probes[key]
