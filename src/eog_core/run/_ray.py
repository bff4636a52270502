"""``eog-core run --ray ADDRESS``: rollouts sharded over async Ray actors.

Each :class:`RolloutActor` holds what one local run holds (a model client, and
from :class:`~eog_core.run.ActorBody` a :class:`~eog_core.gym.GymDirectory` of
the run's replicas with its connection pool and shared MCP sessions, a janitor) and runs many rollouts at once on its
own event loop. The driver keeps the one writer: every record streams back to
:func:`~eog_core.run.run_evaluation`, which appends it to ``rollouts.jsonl`` and
writes the upstream folder exactly as a local run does. ``ray`` is imported
only when a sharded run starts (the ``ray`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from eog_core.errors import UsageError
from eog_core.run._actor import ActorBody
from eog_core.run._judge import ModelJudge
from eog_core.run._model import ModelClient
from eog_core.run._rollout import RolloutOptions, run_rollout
from eog_core.run._settings import ModelSettings
from eog_core.tasks import Task, load_task, task_record

__all__ = ["RolloutActor", "run_on_ray"]

log = logging.getLogger("eog_core.run")

#: Called by the driver with each finished rollout's task and record (the one writer).
OnRecord = Callable[[Task, Mapping[str, Any]], None]


class RolloutActor(ActorBody):
    """An actor body: ``ray.remote(RolloutActor).options(max_concurrency=N).remote(...)``."""

    def __init__(
        self,
        settings: ModelSettings,
        replicas: Mapping[str, str | Sequence[str]],
        options: RolloutOptions,
        judge_model: str | None = None,
    ) -> None:
        super().__init__(replicas, timeouts=options.timeouts)
        self._settings = settings
        self._options = options
        self._judge_model = judge_model
        self._client: ModelClient | None = None

    async def _enter(self, stack: contextlib.AsyncExitStack) -> None:
        self._client = await stack.enter_async_context(ModelClient(self._settings))
        if self._options.judge is None:
            self._options = attrs.evolve(
                self._options, judge=ModelJudge(self._client, self._judge_model)
            )

    async def rollout(self, task: Mapping[str, Any], repeat: int) -> dict[str, Any]:
        """One rollout, exactly as a local run makes it; its record as plain data."""
        directory, janitor = await self.gyms()
        assert self._client is not None
        record = await run_rollout(
            load_task(dict(task)),
            repeat,
            client=self._client,
            directory=directory,
            janitor=janitor,
            options=self._options,
        )
        return dict(record)


def _ray_module() -> Any:
    try:
        import ray  # type: ignore[import-not-found]
    except ImportError:
        raise UsageError("--ray requires the ray extra: pip install 'eog-core[ray]'") from None
    return ray


async def run_on_ray(
    pending: Sequence[tuple[Task, int]],
    settings: ModelSettings,
    replicas: Mapping[str, str | Sequence[str]],
    options: RolloutOptions,
    *,
    address: str,
    concurrency: int,
    num_actors: int | None = None,
    judge_model: str | None = None,
    on_start: Callable[[], None],
    on_record: OnRecord,
) -> list[dict[str, Any]]:
    """Run ``pending`` over Ray actors, ``concurrency`` rollouts in flight in all.

    Connects to ``address`` (``auto``, ``ray://host:10001``, or ``local`` for a
    local ``ray.init()``) unless Ray is already initialized. Cancelling cancels the
    actors' rollouts (each deletes its databases) before the actors close. Returns
    the actors' leak reports.
    """
    ray = _ray_module()
    if not ray.is_initialized():
        ray.init(
            address=None if address == "local" else address,
            include_dashboard=False,
            log_to_driver=False,
        )
    actors_wanted = num_actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    count = max(1, min(actors_wanted, len(pending), concurrency))
    per_actor = math.ceil(concurrency / count)
    actor_class = ray.remote(RolloutActor).options(max_concurrency=per_actor, num_cpus=0)
    actors = [
        actor_class.remote(settings, dict(replicas), attrs.evolve(options, judge=None), judge_model)
        for _ in range(count)
    ]
    log.info(
        "sharding %d rollouts over %d Ray actors, %d in flight each", len(pending), count, per_actor
    )
    limit = asyncio.Semaphore(concurrency)
    submitted: list[Any] = []

    async def one(index: int, task: Task, repeat: int) -> None:
        async with limit:
            on_start()
            ref = actors[index % count].rollout.remote(task_record(task), repeat)
            submitted.append(ref)
            record: dict[str, Any] = await ref
        on_record(task, record)

    try:
        async with asyncio.TaskGroup() as group:
            for index, (task, repeat) in enumerate(pending):
                group.create_task(one(index, task, repeat))
    except BaseException:
        # Stopped early: cancel what still runs (each rollout deletes its databases on
        # the way out) and let it settle before the actors close their pools.
        for ref in submitted:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        settle = asyncio.gather(*submitted, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.shield(asyncio.wait_for(settle, 120))
        raise
    finally:
        closing: list[Awaitable[list[dict[str, Any]]]] = [a.close.remote() for a in actors]
        reports = await asyncio.shield(asyncio.gather(*closing, return_exceptions=True))
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
    return [leak for report in reports if isinstance(report, list) for leak in report]
