"""Rollouts and scoring sharded over Ray (``eog-core[ray]``); see ``docs/scale-out.md``.

:class:`EogWorker` is the body of an async Ray actor: each actor holds one
connection pool (its event loop's) and one :class:`~eog_core.gym.GymDirectory`
of replicas (:class:`~eog_core.run.ActorBody`, shared with ``eog-core run --ray``),
and runs many rollouts concurrently. Its methods answer flat rows
(:meth:`TaskVerdict.to_row` plus rollout counters) that ``pyarrow`` or pandas
take as they are. :func:`run_rollouts` is the driver side: it starts the actors
and hands them tasks round-robin; Ray schedules the actors on the cluster.
This module imports ``ray`` only inside :func:`run_rollouts`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from eog_core.errors import UsageError
from eog_core.gym import SessionHandle, TaskSession
from eog_core.run import ActorBody
from eog_core.tasks import Task, load_task, load_tool_snapshots, task_record
from eog_core.verify import PARITY, STRICT, Policy

__all__ = ["Agent", "EogWorker", "run_rollouts", "task_record"]

#: An agent: drives one rollout through the session's tools, returns its final answer.
Agent = Callable[[TaskSession], Awaitable[str | None]]


class EogWorker(ActorBody):
    """An actor body: ``ray.remote(EogWorker).options(max_concurrency=16).remote(...)``.

    Its gyms (one directory, one janitor per actor) are :class:`~eog_core.run.ActorBody`'s,
    as ``eog-core run --ray``'s actors hold them.
    """

    def __init__(
        self,
        replicas: Mapping[str, str | Sequence[str]],
        *,
        seed_root: str | os.PathLike[str] | None = None,
        tool_snapshots: str | os.PathLike[str] | None = None,
        policy: str = "strict",
    ) -> None:
        super().__init__(replicas)
        self._seed_root = seed_root
        self._snapshots = load_tool_snapshots(tool_snapshots) if tool_snapshots else None
        policies: dict[str, Policy] = {"strict": STRICT, "parity": PARITY}
        if policy not in policies:  # "PARITY", "Parity" or a typo must not score STRICT silently
            raise UsageError(f"policy must be 'strict' or 'parity', not {policy!r}")
        self._policy = policies[policy]
        self.name = f"{socket.gethostname()}:{os.getpid()}"

    def _row(
        self, session: TaskSession, verdict_row: dict[str, Any], final: str | None
    ) -> dict[str, Any]:
        gym_calls = [r for r in session.trajectory if not r.local]
        return verdict_row | {
            "worker": self.name,
            "num_tool_calls": len(gym_calls),
            "num_tool_errors": sum(r.is_error for r in session.trajectory),
            "tool_error_kinds": [r.error_kind for r in session.trajectory if r.error_kind],
            "final_response": final or "",
        }

    async def rollout(
        self,
        task: Mapping[str, Any],
        agent: Agent | None = None,
        *,
        repeat: int = 0,
        hand_off: bool = False,
    ) -> dict[str, Any]:
        """Seed, run ``agent`` (none: do nothing), verify, delete; one flat row.

        With ``hand_off`` the session is not verified here: the row is the
        :class:`SessionHandle` (``to_dict()``) for :meth:`verify` on any worker.
        """
        directory, janitor = await self.gyms()
        session = await TaskSession.start(
            load_task(dict(task)),
            directory=directory,
            seed_root=self._seed_root,
            tool_snapshots=self._snapshots,
            janitor=janitor,
            tool_errors="result",
        )
        try:
            final = await agent(session) if agent is not None else None
            if hand_off:
                return (await session.detach()).to_dict() | {"final_response": final or ""}
            verdict = await session.verify(policy=self._policy, final_response=final)
            return self._row(session, verdict.to_row(repeat=repeat), final)
        finally:
            await session.aclose()

    async def verify(self, handle: Mapping[str, Any], *, repeat: int = 0) -> dict[str, Any]:
        """Attach to a session seeded elsewhere (a handle dict), verify it, delete it."""
        _, janitor = await self.gyms()
        final = handle.get("final_response") or None
        async with TaskSession.attach(SessionHandle.from_dict(handle), janitor=janitor) as session:
            verdict = await session.verify(policy=self._policy, final_response=final)
            return self._row(session, verdict.to_row(repeat=repeat), final)


def run_rollouts(
    tasks: Iterable[Task | Mapping[str, Any]],
    agent: Agent | None,
    *,
    replicas: Mapping[str, str | Sequence[str]],
    num_actors: int = 2,
    repeats: int = 1,
    max_concurrency: int = 16,
    **worker_options: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every task ``repeats`` times over ``num_actors`` async actors (``ray.init()`` first).

    Returns the rows (in submission order) and the leak reports of every actor.
    ``worker_options`` go to :class:`EogWorker` (``seed_root``, ``tool_snapshots``,
    ``policy``).
    """
    import ray  # type: ignore[import-not-found]

    worker = ray.remote(EogWorker).options(max_concurrency=max_concurrency)
    actors = [worker.remote(replicas, **worker_options) for _ in range(num_actors)]
    records = [task_record(t) if isinstance(t, Task) else dict(t) for t in tasks]
    jobs = [(record, repeat) for repeat in range(repeats) for record in records]
    refs = [
        actors[i % num_actors].rollout.remote(record, agent, repeat=repeat)
        for i, (record, repeat) in enumerate(jobs)
    ]
    try:
        rows: list[dict[str, Any]] = ray.get(refs)
    finally:
        leaks = [leak for report in ray.get([a.close.remote() for a in actors]) for leak in report]
        for actor in actors:
            ray.kill(actor)
    return rows, leaks
