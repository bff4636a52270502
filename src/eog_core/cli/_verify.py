"""What ``eog-core verify`` adds around the engine for live gyms: bounded, single asks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from eog_core import TaskVerdict
from eog_core.verify import SqlOutcome, SqlRunner, implicit_limit_of

__all__ = ["AskOnce", "Asked", "shared_failure"]


class Asked:
    """What the command's runners share: answers already asked for, and gyms known to be down."""

    def __init__(self) -> None:
        self.answers: dict[tuple[object, ...], asyncio.Future[SqlOutcome]] = {}
        self.down: dict[str, SqlOutcome] = {}


log = logging.getLogger("eog_core.cli.verify")


class AskOnce:
    """A :class:`SqlRunner` for the command line: each distinct query is asked once.

    Runners sharing one :class:`Asked` (one per policy; ``tag`` tells apart
    answers that differ between them, such as read-only enforcement) read the
    same answer. Each query gets at most ``timeout`` seconds in all (retries
    included), and once a gym failed to answer, its later queries fail at once
    with the same reason instead of waiting again: a gym that accepts
    connections but never answers costs one timeout, not one per verifier and
    policy.
    """

    def __init__(
        self,
        runner: SqlRunner,
        *,
        timeout: float,
        urls: Mapping[str, str],
        asked: Asked | None = None,
        tag: object = None,
    ) -> None:
        self._runner = runner
        self._timeout = timeout
        self._urls = urls
        self._state = asked or Asked()
        self._tag = tag

    @property
    def implicit_limit(self) -> int | None:
        """The wrapped runner's row cap (strict flags answers it may have cut)."""
        return implicit_limit_of(self._runner)

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        key = (self._tag, gym_name, database_id, query, tuple(sorted(context.items())))
        answers = self._state.answers
        if key not in answers:
            if gym_name in self._state.down:
                return self._state.down[gym_name]
            answers[key] = asyncio.ensure_future(self._ask(gym_name, database_id, query, context))
        return await asyncio.shield(answers[key])

    async def _ask(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        try:
            async with asyncio.timeout(self._timeout):
                outcome = await self._runner.run_sql(gym_name, database_id, query, context)
        except TimeoutError:
            where = self._urls.get(gym_name, "")
            outcome = SqlOutcome.failed(
                f"gym {gym_name!r}{f' at {where}' if where else ''} gave no answer within "
                f"{self._timeout:g}s (--timeout)",
                kind="transport",
            )
        if outcome.error_kind == "transport" and gym_name not in self._state.down:
            self._state.down[gym_name] = outcome
            log.info(
                "gym %s failed to answer (%s): its other queries are not sent",
                gym_name,
                outcome.error,
            )
        else:
            log.debug(
                "gym %s answered a query: %s", gym_name, "ok" if outcome.success else outcome.error
            )
        return outcome


_HINTS = (
    ("gave no answer within", "nothing came back in time; raise --timeout if the gym is only slow"),
    ("no answer within", "the gym took the request but did not answer in time"),
    ("connect timed out", "nothing answered the connection; check the URL and the network"),
    ("cannot connect", "is a gym listening at that URL?"),
    ("no such table", "is this the right database (--db snapshot or --database-id)?"),
    (
        "Database not found",
        "is the --database-id right? It names the rollout's database on that gym",
    ),
)


def shared_failure(verdict: TaskVerdict, targets: Mapping[str, str]) -> str | None:
    """One line for a verdict whose verifiers all failed with the same error, else None.

    ``targets`` maps gym names to what was queried (a URL or a snapshot file).
    """
    errors = {result.error for result in verdict.results}
    if len(errors) != 1 or not verdict.results:
        return None
    (error,) = errors
    if not error:
        return None
    gyms = sorted({result.gym for result in verdict.results if result.gym})
    where = ", ".join(f"{gym} ({targets[gym]})" if gym in targets else gym for gym in gyms)
    hint = next((text for marker, text in _HINTS if marker in error), None)
    return (
        f"nothing could be scored: all {len(verdict.results)} verifier(s) failed the same way"
        f"{f' on {where}' if where else ''}: {error}{f' ({hint})' if hint else ''}"
    )
