"""A seeded task session as plain data (``TaskSession.handle()``, ``TaskSession.attach()``).

A :class:`SessionHandle` holds what another worker, process or event loop needs
to carry on a rollout: the task (upstream JSON), the replica URL and database
id of each gym, and the task's tools. It pickles, and ``to_dict()`` is JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from eog_core.errors import SchemaError

__all__ = ["SessionHandle"]


@attrs.frozen(kw_only=True)
class SessionHandle:
    """Plain data naming a seeded session: build it with ``session.handle()``."""

    task: Mapping[str, Any]
    """The task in upstream's JSON form (``to_upstream(task)``) with its ``task_id``,
    ``domain`` and ``mode``."""
    gym_urls: Mapping[str, str]
    """Gym name -> base URL of the replica holding its database."""
    database_ids: Mapping[str, str]
    tools: tuple[Mapping[str, Any], ...] = ()
    """The task's tools as ``tools/list`` entries, each with its ``gym``."""
    delete_on_close: bool = True
    """Whether the session attached from this handle deletes the databases when it closes."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; :meth:`from_dict` reads it back."""
        return {
            "task": dict(self.task),
            "gym_urls": dict(self.gym_urls),
            "database_ids": dict(self.database_ids),
            "tools": [dict(t) for t in self.tools],
            "delete_on_close": self.delete_on_close,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionHandle:
        if not isinstance(data, Mapping):
            raise SchemaError("a session handle must be an object")
        for key in ("task", "gym_urls", "database_ids"):
            if not isinstance(data.get(key), Mapping):
                raise SchemaError("expected an object", path=f"$.{key}")
        tools = data.get("tools", [])
        if not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools):
            raise SchemaError("expected an array of tool objects", path="$.tools")
        return cls(
            task=dict(data["task"]),
            gym_urls=dict(data["gym_urls"]),
            database_ids=dict(data["database_ids"]),
            tools=tuple(dict(t) for t in tools),
            delete_on_close=bool(data.get("delete_on_close", True)),
        )
