"""The seed bound of a replica (``GymDirectory.seed_slot``): one count for every event loop.

A directory may serve task sessions on several event loops at once (the NeMo Gym
server's request loops, a thread per worker). An ``asyncio.Semaphore`` belongs to
one loop, so a bound kept per loop would let two loops run twice
``max_concurrent_seeds`` on one replica. :class:`SeedGate` counts under a thread
lock and wakes a waiter on its own loop (``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Protocol

__all__ = ["SeedGate", "SeedSlot"]


class _Counted(Protocol):
    """What a slot counts on (a ``Replica``)."""

    seeding: int
    seeds_waiting: int


class SeedGate:
    """A counting semaphore shared by event loops and threads, first come first served.

    A released slot is handed to the oldest waiter directly (the count does not
    drop), so a newcomer cannot overtake it; a waiter cancelled after being handed
    a slot passes it on.
    """

    __slots__ = ("_held", "_limit", "_lock", "_waiters")

    def __init__(self, limit: int, lock: threading.Lock) -> None:
        self._limit, self._lock = limit, lock
        self._held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        with self._lock:
            if self._held < self._limit and not self._waiters:
                self._held += 1
                return
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            with self._lock:
                granted = waiter not in self._waiters
                if not granted:
                    self._waiters.remove(waiter)
            if granted:  # handed a slot while being cancelled: hand it on
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                try:
                    waiter.get_loop().call_soon_threadsafe(_grant, waiter)
                except RuntimeError:  # its event loop is closed: nobody waits there
                    continue
                return
            self._held -= 1


def _grant(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
    # A waiter cancelled meanwhile sees it was granted (no longer queued) and releases.


class SeedSlot:
    """One seed slot of a replica, counted in its stats while waited for and held."""

    __slots__ = ("_gate", "_lock", "_replica")

    def __init__(self, gate: SeedGate, replica: _Counted | None, lock: threading.Lock) -> None:
        self._gate, self._replica, self._lock = gate, replica, lock

    async def __aenter__(self) -> None:
        replica = self._replica
        if replica is None:
            await self._gate.acquire()
            return
        with self._lock:
            replica.seeds_waiting += 1
        try:
            await self._gate.acquire()
        finally:
            with self._lock:
                replica.seeds_waiting -= 1
        with self._lock:
            replica.seeding += 1

    async def __aexit__(self, *exc: object) -> None:
        if self._replica is not None:
            with self._lock:
                self._replica.seeding -= 1
        self._gate.release()
