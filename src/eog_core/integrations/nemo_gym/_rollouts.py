"""The rollouts a server holds, and the gym resources it holds per event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from fastapi import HTTPException

from eog_core.gym import GymDirectory, Janitor, TaskSession

__all__ = ["LoopResources", "Rollout"]


class Rollout:
    """One seeded (or seeding) rollout, keyed by cookie session id or resources_session_id."""

    def __init__(self, seeding: asyncio.Task[TaskSession], episode_id: str | None) -> None:
        self.seeding = seeding
        self.loop = seeding.get_loop()
        self.episode_id = episode_id

    async def session(self, janitor: Janitor) -> TaskSession:
        """The rollout's session on the running event loop.

        Requests of one rollout may arrive on several loops (a TestClient without
        ``with`` runs each on its own): the session is then re-attached from its
        handle here, and handed off (not deleted) on the loop it came from.
        """
        loop = asyncio.get_running_loop()
        if self.loop is loop:
            return await asyncio.shield(self.seeding)
        if not self.seeding.done():
            raise HTTPException(status_code=409, detail="the session is still seeding")
        old = self.seeding.result()
        session = await TaskSession.attach(old.handle(), janitor=janitor, tool_errors="result")
        await _hand_off(old, self.loop)
        self.seeding = loop.create_task(_ready(session))
        self.loop = loop
        return session

    def expired(self) -> bool:
        """The janitor closed the session (idle past the TTL): the rollout is over."""
        seeding = self.seeding
        return (
            seeding.done()
            and not seeding.cancelled()
            and seeding.exception() is None
            and seeding.result().closed
        )


async def _ready(session: TaskSession) -> TaskSession:
    return session


async def _hand_off(old: TaskSession, loop: asyncio.AbstractEventLoop) -> None:
    """Detach ``old`` (close its clients, keep its databases) on the loop it runs on.

    A loop that no longer runs would never run a detach scheduled there, and the
    old session would stay registered with that loop's janitor, which would one day
    close it and delete the databases the new session uses: detach it here instead
    (detaching sends nothing to the gym).
    """
    if old.closed:
        return
    if loop.is_running():
        detach = old.detach()
        try:
            asyncio.run_coroutine_threadsafe(detach, loop)
            return
        except RuntimeError:  # the loop closed meanwhile
            detach.close()
    await old.detach()


class LoopResources:
    """The gym directory and janitor of one event loop, held while the server serves on it.

    The directory is entered (``async with`` semantics) when made, so the loop's
    connection pool and the MCP sessions shared over it live until the server shuts
    down (or the loop ends), not only while some rollout happens to be open. Each
    loop has its own: a directory and a janitor run on the loop that made them.
    """

    def __init__(self, gyms: Mapping[str, list[str]], ttl: float) -> None:
        self.directory = GymDirectory(gyms)
        self.janitor = Janitor(ttl=ttl)

    async def hold(self) -> None:
        """Hold the directory (its connection pool) until :meth:`aclose`."""
        await self.directory.__aenter__()

    async def aclose(self) -> None:
        """Close the sessions still open on this loop (their databases are deleted),
        then let go of the connection pool."""
        try:
            await self.janitor.aclose()
        finally:
            await self.directory.aclose()
