"""The verifier engine's :class:`SqlRunner`, backed by gym clients over HTTP."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from eog_core.gym._client import GymClient
from eog_core.verify import SqlOutcome

__all__ = ["HttpSqlRunner"]


@attrs.define
class HttpSqlRunner:
    """Runs each query on the client registered under the verifier's ``gym_name``.

    It does not own the clients: whoever opened them closes them. With
    ``read_only`` every query asks the gym to refuse writes (STRICT sets it;
    LocalGym enforces it, other gyms ignore it).
    """

    clients: Mapping[str, GymClient]
    read_only: bool = attrs.field(default=False, kw_only=True)

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
