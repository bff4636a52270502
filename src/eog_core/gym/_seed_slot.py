"""One seed slot of a replica (``GymDirectory.seed_slot``), counted in its stats."""

from __future__ import annotations

import asyncio
from typing import Protocol

__all__ = ["SeedSlot"]


class _Counted(Protocol):
    """What a slot counts on (a ``Replica``)."""

    seeding: int
    seeds_waiting: int


class SeedSlot:
    """One seed slot of a replica, counted in its stats while waited for and held."""

    __slots__ = ("_gate", "_replica")

    def __init__(self, gate: asyncio.Semaphore, replica: _Counted | None) -> None:
        self._gate, self._replica = gate, replica

    async def __aenter__(self) -> None:
        replica = self._replica
        if replica is None:
            await self._gate.acquire()
            return
        replica.seeds_waiting += 1
        try:
            await self._gate.acquire()
        finally:
            replica.seeds_waiting -= 1
        replica.seeding += 1

    async def __aexit__(self, *exc: object) -> None:
        if self._replica is not None:
            self._replica.seeding -= 1
        self._gate.release()
