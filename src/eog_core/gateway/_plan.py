"""The gateway's run: tasks x repeats, what is evaluated, what is handed out, what is next.

Work is handed out repeat by repeat (every task's repeat 0, then repeat 1...), as
``eog-core run`` orders it. A task x repeat already evaluated in ``rollouts.jsonl``
(this run's or an earlier one's) is never handed out again; one abandoned goes
back to the queue, as a resumed ``run`` runs it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from eog_core.errors import UsageError, WorkRefused
from eog_core.run import RolloutKey, rollout_key
from eog_core.tasks import Task

__all__ = ["RunPlan", "WorkRefused"]


@attrs.define
class RunPlan:
    """Which task x repeats remain, and which are out with an agent."""

    order: list[RolloutKey]
    tasks: dict[str, Task]
    evaluated: set[RolloutKey]
    out: set[RolloutKey] = attrs.field(factory=set)

    @classmethod
    def build(cls, tasks: Sequence[Task], repeats: int, evaluated: Iterable[RolloutKey]) -> RunPlan:
        if repeats < 1:
            raise UsageError(f"repeats must be at least 1, got {repeats}")
        by_id: dict[str, Task] = {}
        for task in tasks:
            key = rollout_key(task, 0)
            if key[2] in by_id:
                raise UsageError(
                    f"task {key[2]!r} is given twice; every task of a run needs its "
                    "own id (results are keyed by it)"
                )
            by_id[key[2]] = task
        order = [rollout_key(task, r) for r in range(repeats) for task in tasks]
        return cls(order=order, tasks=by_id, evaluated=set(evaluated) & set(order))

    @property
    def total(self) -> int:
        return len(self.order)

    @property
    def complete(self) -> bool:
        """Every task x repeat is evaluated."""
        return len(self.evaluated) == len(self.order)

    def pending(self) -> int:
        return sum(1 for key in self.order if key not in self.evaluated and key not in self.out)

    def claim(self, task_id: str | None, repeat: int | None) -> tuple[Task, int]:
        """Take the next pending task x repeat (of ``task_id``, and that ``repeat``, when given)."""
        if task_id is not None and task_id not in self.tasks:
            raise WorkRefused(f"no task {task_id!r} in this run", status=404, code="unknown_task")
        candidates = [
            k
            for k in self.order
            if (task_id is None or k[2] == task_id) and (repeat is None or k[3] == repeat)
        ]
        if not candidates:
            raise WorkRefused(
                f"repeat {repeat} is outside this run's repeats", status=404, code="unknown_repeat"
            )
        for key in candidates:
            if key not in self.evaluated and key not in self.out:
                self.out.add(key)
                return self.tasks[key[2]], key[3]
        if all(k in self.evaluated for k in candidates):
            raise WorkRefused(
                "every requested rollout is already evaluated", status=409, code="evaluated"
            )
        raise WorkRefused(
            "every requested rollout is already out with an agent", status=409, code="in_progress"
        )

    def release(self, key: RolloutKey, *, evaluated: bool) -> None:
        """A rollout ended: evaluated, or back to the queue."""
        self.out.discard(key)
        if evaluated:
            self.evaluated.add(key)
