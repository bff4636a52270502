"""The body every Ray actor of ours shares: the gyms it holds on its own event loop.

An actor process runs many rollouts at once on one event loop; what they share is
one :class:`~eog_core.gym.GymDirectory` of the run's replicas (its connection pool
and shared MCP sessions) and one :class:`~eog_core.gym.Janitor`. :class:`ActorBody`
opens them on first use, inside that loop (concurrent first calls share them), and
:meth:`ActorBody.close` ends them, answering the databases still leaked as plain
data. ``eog-core run --ray`` (``RolloutActor``) and the Ray adapter
(``eog_core.integrations.ray.EogWorker``) build on it. Nothing here imports ``ray``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from eog_core.gym import GymDirectory, Janitor, Timeouts

__all__ = ["ActorBody"]


class ActorBody:
    """Subclass it for an actor body: ``ray.remote(MyActor).options(max_concurrency=N)``."""

    def __init__(
        self, replicas: Mapping[str, str | Sequence[str]], *, timeouts: Timeouts | None = None
    ) -> None:
        self._replicas = dict(replicas)
        self._timeouts = timeouts
        self._ready: asyncio.Lock | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._gyms: tuple[GymDirectory, Janitor] | None = None

    async def _enter(self, stack: contextlib.AsyncExitStack) -> None:
        """Open what a subclass holds besides the gyms (opened after them, closed before)."""

    async def gyms(self) -> tuple[GymDirectory, Janitor]:
        """The actor's directory and janitor, opened on the first call."""
        self._ready = self._ready or asyncio.Lock()
        async with self._ready:
            if self._gyms is None:
                async with contextlib.AsyncExitStack() as stack:
                    directory = await stack.enter_async_context(GymDirectory(self._replicas))
                    janitor = await stack.enter_async_context(Janitor(timeouts=self._timeouts))
                    await self._enter(stack)
                    self._stack, self._gyms = stack.pop_all(), (directory, janitor)
            assert self._gyms is not None
            return self._gyms

    async def close(self) -> list[dict[str, Any]]:
        """Close what :meth:`gyms` opened; the databases still leaked, as plain data."""
        if self._stack is None or self._gyms is None:
            return []
        (_, janitor), stack = self._gyms, self._stack
        self._gyms = self._stack = None
        try:
            return [entry.to_dict() for entry in await janitor.aclose()]
        finally:
            await stack.aclose()
