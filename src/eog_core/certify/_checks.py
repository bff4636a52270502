"""The checks ``certify`` makes on fresh databases: the do-nothing control, the replay of a
prefix of the oracle's tool calls, and each verifier query's row count uncapped.

Every check opens its own :class:`~eog_core.gym.TaskSession` (seeded afresh, deleted
when the check ends) through the ``open_session`` it is given. A row count wraps the
verifier query as ``SELECT COUNT(*) FROM (query)``: an aggregate, so a gym that
appends ``LIMIT 100`` to a query without one still counts every row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from eog_core.gym import SessionStart, TaskSession
from eog_core.run import verify_both
from eog_core.state import snapshot
from eog_core.tasks import DatabaseStateVerifier, Task
from eog_core.verify import TaskVerdict, extract_value

__all__ = [
    "CheckRun",
    "OpenSession",
    "VerdictWord",
    "run_control",
    "run_prefix",
    "verdict_word",
    "verifier_keys",
]

OpenSession = Callable[[Task], SessionStart[TaskSession]]
"""Seeds the task's databases afresh: ``async with open_session(task) as session``."""

VerdictWord = Literal["pass", "fail", "error"]
_TRAILING = re.compile(r"[\s;]+\Z")


@attrs.frozen(kw_only=True)
class CheckRun:
    """The verdicts on one fresh database state, each verifier query's row count (None
    when not counted, or the count query failed), and after which call the oracle first
    changed the state (None: not looked for, or no call did)."""

    strict: TaskVerdict
    parity: TaskVerdict
    row_counts: Mapping[str, int | None] = attrs.field(factory=dict)
    first_write: int | None = None


def verdict_word(verdict: TaskVerdict) -> VerdictWord:
    """``pass``, ``fail``, or ``error`` when a verifier could not be evaluated."""
    if verdict.success:
        return "pass"
    return "error" if verdict.failure_kind is not None else "fail"


def verifier_keys(task: Task) -> list[str]:
    """Each verifier's key in a certificate, in definition order: its name, or for a name
    several verifiers share (or none) ``name #N`` with N its 1-based position."""
    names = [verifier.name for verifier in task.verifiers]
    return [
        name if name is not None and names.count(name) == 1 else f"{name or ''} #{i + 1}".strip()
        for i, name in enumerate(names)
    ]


def count_query(query: str) -> str:
    """The query counting every row ``query`` yields, however the gym caps it."""
    return f"SELECT COUNT(*) AS row_count FROM (\n{_TRAILING.sub('', query)}\n)"


async def row_counts(session: TaskSession) -> dict[str, int | None]:
    """Each database_state verifier's rows on the session's current state, uncapped."""
    sql = session.sql_runner(read_only=True)
    counts: dict[str, int | None] = {}
    for key, verifier in zip(verifier_keys(session.task), session.task.verifiers, strict=True):
        query = (
            verifier.validation_config.query
            if isinstance(verifier, DatabaseStateVerifier)
            else None
        )
        gym = session.task.gym(verifier.gym_name) if verifier.gym_name else session.task.default_gym
        if not query or gym is None or gym.name not in session.database_ids:
            continue
        outcome = await sql.run_sql(
            gym.name, session.database_ids[gym.name], count_query(query), dict(gym.context)
        )
        value: Any = extract_value(outcome) if outcome.success else None
        counts[key] = value if isinstance(value, int) and not isinstance(value, bool) else None
    return counts


async def run_control(task: Task, open_session: OpenSession) -> CheckRun:
    """Seed, verify without any action, count each verifier query's rows on the seed."""
    async with open_session(task) as session:
        strict, parity = await verify_both(session, None, None)
        counts = await row_counts(session)
    return CheckRun(strict=strict, parity=parity, row_counts=counts)


async def run_prefix(
    task: Task,
    open_session: OpenSession,
    calls: Sequence[Mapping[str, Any]],
    *,
    final_answer: str | None = None,
    count_rows: bool = False,
    find_first_write: bool = False,
) -> CheckRun:
    """Seed, make ``calls`` in order, verify; with ``count_rows`` the row counts after them,
    with ``find_first_write`` the number of calls after which the state first changed
    (the databases exported before and after each call until one differs)."""
    async with open_session(task) as session:
        before = (await snapshot(session)).id if find_first_write else None
        first_write = None
        for number, call in enumerate(calls, start=1):
            await session.call_tool(call["name"], call.get("arguments") or {})
            if (
                before is not None
                and first_write is None
                and (await snapshot(session)).id != before
            ):
                first_write = number
        strict, parity = await verify_both(session, final_answer, None)
        counts = await row_counts(session) if count_rows else {}
    return CheckRun(strict=strict, parity=parity, row_counts=counts, first_write=first_write)
