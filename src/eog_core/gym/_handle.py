"""A seeded task session as plain data, and re-attaching to it elsewhere.

A :class:`SessionHandle` holds what another worker, process or event loop needs
to carry on a rollout: the task (upstream JSON), the replica URL and database
id of each gym, and the task's tools. It pickles, and ``to_dict()`` is JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from eog_core.errors import SchemaError
from eog_core.gym._client import GymClient, Timeouts
from eog_core.gym._directory import Lease
from eog_core.gym._headers import HeaderMode
from eog_core.gym._janitor import Janitor, default_janitor
from eog_core.gym._teardown import GymState, Teardown
from eog_core.gym._transport import Transport
from eog_core.tasks import ToolSet, ToolSpec, load_task, task_record

if TYPE_CHECKING:
    from eog_core.gym._session import TaskSession, ToolErrors

__all__ = ["SessionHandle"]


@attrs.frozen(kw_only=True)
class SessionHandle:
    """Plain data naming a seeded session: build with ``session.handle()``."""

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

    @classmethod
    def of(cls, session: TaskSession) -> SessionHandle:
        tools = tuple(
            {"name": t.name, "description": t.description, "inputSchema": dict(t.input_schema),
             "gym": t.gym}
            for t in session.tools.tools
        )
        task = session.task
        record = task_record(task)
        return cls(task=record, gym_urls=session.gym_urls(),
                   database_ids=dict(session.database_ids), tools=tools)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; :meth:`from_dict` reads it back."""
        return {"task": dict(self.task), "gym_urls": dict(self.gym_urls),
                "database_ids": dict(self.database_ids), "tools": [dict(t) for t in self.tools],
                "delete_on_close": self.delete_on_close}

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
        return cls(task=dict(data["task"]), gym_urls=dict(data["gym_urls"]),
                   database_ids=dict(data["database_ids"]), tools=tuple(dict(t) for t in tools),
                   delete_on_close=bool(data.get("delete_on_close", True)))


async def open_attached(
    cls: type[TaskSession],
    handle: SessionHandle,
    *,
    janitor: Janitor | None = None,
    transport: Transport | None = None,
    timeouts: Timeouts | None = None,
    header_mode: HeaderMode = "strict",
    tool_errors: ToolErrors = "raise",
    forward_any_tool: bool = False,
) -> TaskSession:
    """Build a session on databases that already exist (see :meth:`TaskSession.attach`)."""
    task = load_task(dict(handle.task))
    janitor = janitor or default_janitor()
    missing = [g.name for g in task.gym_servers
               if g.name not in handle.gym_urls or g.name not in handle.database_ids]
    if missing:
        raise SchemaError(f"the handle names no replica or database for gym(s) {missing}",
                          path="$.gym_urls")
    seeded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seeded.set_result(None)
    keep: set[str] = set() if handle.delete_on_close else {g.name for g in task.gym_servers}
    teardown = Teardown(janitor=janitor, admin_timeout=(timeouts or Timeouts()).admin, keep=keep)
    clients: dict[str, GymClient] = {}
    try:  # a gym whose client cannot be made leaves the ones before it cleaned up
        for gym in task.gym_servers:
            url = handle.gym_urls[gym.name]
            client = clients[gym.name] = GymClient(
                url, name=gym.name, mcp_endpoint=gym.mcp_endpoint or task.mcp_endpoint,
                auth=gym.auth, transport=transport, timeouts=timeouts or Timeouts(),
                header_mode=header_mode, shared_session=True)
            teardown.gyms.append(GymState(Lease(gym=gym.name, url=url), client,
                                          handle.database_ids[gym.name], seeded))
        specs = tuple(ToolSpec.from_mcp(t, gym=t.get("gym")) for t in handle.tools)
        session = cls(
            task=task, tools=ToolSet(tools=specs),
            database_ids={g.name: handle.database_ids[g.name] for g in task.gym_servers},
            trajectory=[], clients=clients, teardown=teardown, janitor=janitor,
            owners={t.name: t.gym or "" for t in specs}, forward_any_tool=forward_any_tool,
            tool_errors=tool_errors, keep=keep)
    except BaseException:
        await teardown.run()
        raise
    janitor.register(session)
    return session
