"""Serving a LocalGym from a thread of its own, for callers that own their event loop.

inspect-ai's ``eval()``, FastAPI's ``TestClient`` and a Ray driver run their own
loops (or none); ``with gym.run_in_thread():`` serves the gym on a private loop in
a daemon thread until the block ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol, TypeVar

from eog_core.errors import GymTimeoutError

__all__ = ["run_in_thread"]


class Servable(Protocol):
    """What a thread can serve: a named server started and stopped on an event loop."""

    @property
    def name(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=Servable)


@contextlib.contextmanager
def run_in_thread(gym: S, *, timeout: float = 30.0) -> Iterator[S]:
    """Start ``gym`` on a new event loop in a daemon thread; stop it and the thread on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=f"{gym.name}-loop", daemon=True)
    thread.start()
    try:
        _within(asyncio.run_coroutine_threadsafe(gym.start(), loop), timeout, gym, "start")
        try:
            yield gym
        finally:
            _within(asyncio.run_coroutine_threadsafe(gym.stop(), loop), timeout, gym, "stop")
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()


def _within(
    future: concurrent.futures.Future[None], timeout: float, gym: Servable, what: str
) -> None:
    """Wait for ``gym.start()``/``stop()`` on the gym's loop; a typed error when it hangs."""
    try:
        future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise GymTimeoutError(
            f"the local gym did not {what} within {timeout:g} s", gym=gym.name, url=None
        ) from None
