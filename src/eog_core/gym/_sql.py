"""The verifier engine's :class:`SqlRunner`, backed by gym clients over HTTP."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from eog_core.gym._client import GymClient
from eog_core.verify import GYM_IMPLICIT_LIMIT, SqlOutcome

__all__ = ["HttpSqlRunner"]


@attrs.define
class HttpSqlRunner:
    """Runs each query on the client registered under the verifier's ``gym_name``.

    It does not own the clients: whoever opened them closes them. With
    ``read_only`` every query asks the gym to refuse writes (STRICT sets it;
    LocalGym enforces it, other gyms ignore it). ``implicit_limit`` declares the
    row cap the gyms put on a query without a LIMIT of its own (a real gym's
    sql-runner appends ``LIMIT 100``, LocalGym's too): strict scoring reports an
    answer of exactly that many rows as possibly truncated. None: the gyms answer
    every row.
    """

    clients: Mapping[str, GymClient]
    read_only: bool = attrs.field(default=False, kw_only=True)
    implicit_limit: int | None = attrs.field(default=GYM_IMPLICIT_LIMIT, kw_only=True)

    async def run_sql(
        self,
        gym_name: str,
        database_id: str | None,
        query: str,
        context: Mapping[str, str],
    ) -> SqlOutcome:
        client = self.clients.get(gym_name)
        if client is None:
            known = ", ".join(sorted(self.clients)) or "none"
            return SqlOutcome.failed(
                f"no gym client named {gym_name!r} (known: {known})", kind="transport"
            )
        return await client.run_sql(
            query, database_id=database_id, context=context, read_only=self.read_only
        )
