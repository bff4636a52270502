"""What one ``verify_task`` call shares among its verifiers: the task, the runner, the
policy, where each query runs, and the answers the policy refuses to score."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any

from eog_core.errors import EogError
from eog_core.tasks import GymServer, Task, Verifier
from eog_core.verify._judge import Judge, JudgePrompt
from eog_core.verify._limit import implicit_limit_of, truncation_problem
from eog_core.verify._outcome import SqlOutcome, SqlRunner
from eog_core.verify._policy import Policy
from eog_core.verify._settle import bounded

__all__ = ["Run", "tool_names"]


def tool_names(tool_calls: Iterable[Any]) -> list[str]:
    names = []
    for call in tool_calls:
        if isinstance(call, str):
            names.append(call)
        elif isinstance(call, Mapping):
            names.append(str(call.get("name") or call.get("tool_name")))
        else:
            names.append(str(call.name))
    return names


class Run:
    """What one verify_task call shares among its verifiers.

    ``semaphore`` bounds the SQL queries only when the task has more of them
    than ``max_concurrency`` (otherwise every query may run at once anyway).
    """

    __slots__ = (
        "database_ids",
        "final_response",
        "implicit_limit",
        "judge",
        "judge_prompt",
        "policy",
        "reports_failure_kinds",
        "semaphore",
        "sql",
        "task",
        "tool_names",
    )

    def __init__(
        self,
        task: Task,
        sql: SqlRunner | None,
        policy: Policy,
        database_ids: Mapping[str, str],
        final_response: str,
        tool_names: list[str],
        judge: Judge | None,
        judge_prompt: JudgePrompt,
    ) -> None:
        self.task, self.sql, self.policy, self.database_ids = task, sql, policy, database_ids
        self.final_response, self.tool_names = final_response, tool_names
        self.judge, self.judge_prompt = judge, judge_prompt
        self.reports_failure_kinds = policy.reports_failure_kinds
        #: The runner's row cap when the policy flags answers it may have cut, else None.
        self.implicit_limit = implicit_limit_of(sql) if policy.flags_truncation else None
        self.semaphore: asyncio.Semaphore | None = None

    def target(
        self, verifier: Verifier, gym: GymServer | None
    ) -> tuple[GymServer | None, str | None, dict[str, Any]]:
        """The gym, database id and context a verifier's query runs with (``gym``: its named gym)."""
        if verifier.gym_name:
            return gym, self.database_ids.get(verifier.gym_name), dict(gym.context) if gym else {}
        gym = self.task.default_gym
        legacy_context = self.task.legacy.get("context")
        context = dict(gym.context) if gym else {}
        if isinstance(legacy_context, Mapping):
            context.update(legacy_context)
        database_id = self.task.legacy.get("database_id") or (
            self.database_ids.get(gym.name) if gym else None
        )
        return gym, database_id, context

    def query(
        self, verifier: Verifier, gym: GymServer | None, query: str
    ) -> SqlOutcome | Awaitable[SqlOutcome]:
        """The outcome when it is known without running (no runner, no gym), else the query to await.

        Awaiting the query may raise EogError (a runner that raises instead of
        answering): :func:`_settle` turns it into an unreachable gym's outcome.
        """
        gym, database_id, context = self.target(verifier, gym)
        if self.sql is None:
            return SqlOutcome.failed("no SQL runner was given to verify_task", kind="transport")
        if gym is None:
            return SqlOutcome.failed("the task has no gym to run the query on", kind="database")
        if self.semaphore is None:
            return self.sql.run_sql(gym.name, database_id, query, context)
        return bounded(self.semaphore, self.sql, gym.name, database_id, query, context)

    def truncated(self, query: str | None, outcome: SqlOutcome) -> str | None:
        """Why a successful answer cannot be scored (the gym may have cut it), else None."""
        if self.implicit_limit is None or not query or not outcome.success:
            return None
        return truncation_problem(query, outcome.body, self.implicit_limit)

    async def run_query(self, verifier: Verifier, gym: GymServer | None, query: str) -> SqlOutcome:
        answer = self.query(verifier, gym, query)
        if isinstance(answer, SqlOutcome):
            return answer
        try:
            return await answer
        except EogError as exc:
            return SqlOutcome.failed(str(exc), kind="transport")
