"""Taking over a task session seeded elsewhere (``TaskSession.attach``): from a
:class:`~eog_core.gym.SessionHandle`, the task, a client per gym and the teardown
that deletes the databases on close. Nothing is seeded; a gym that cannot be
connected cleans up the ones connected before it.
"""

from __future__ import annotations

import asyncio

import attrs

from eog_core.errors import SchemaError
from eog_core.gym._client import GymClient
from eog_core.gym._handle import SessionHandle
from eog_core.gym._headers import HeaderMode
from eog_core.gym._janitor import Janitor
from eog_core.gym._records import Timeouts
from eog_core.gym._replica import Lease
from eog_core.gym._seeding import connect_gyms
from eog_core.gym._teardown import GymState, Teardown
from eog_core.gym._transport import Transport
from eog_core.tasks import Task, ToolSpec, load_task

__all__ = ["Attached", "attach_gyms"]


@attrs.frozen(kw_only=True)
class Attached:
    """What an attached session is built from."""

    task: Task
    database_ids: dict[str, str]
    clients: dict[str, GymClient]
    teardown: Teardown
    keep: set[str]
    tools: tuple[ToolSpec, ...]


async def attach_gyms(
    handle: SessionHandle,
    *,
    janitor: Janitor,
    transport: Transport | None,
    timeouts: Timeouts,
    header_mode: HeaderMode,
) -> Attached:
    """Connect to the gyms ``handle`` names; on failure, release what was connected."""
    task = load_task(dict(handle.task))
    missing = [
        g.name
        for g in task.gym_servers
        if g.name not in handle.gym_urls or g.name not in handle.database_ids
    ]
    if missing:
        raise SchemaError(
            f"the handle names no replica or database for gym(s) {missing}", path="$.gym_urls"
        )
    database_ids = {g.name: handle.database_ids[g.name] for g in task.gym_servers}
    seeded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seeded.set_result(None)  # nothing to wait for: the databases exist
    keep = set() if handle.delete_on_close else set(database_ids)
    teardown = Teardown(janitor=janitor, admin_timeout=timeouts.admin, keep=keep)
    clients: dict[str, GymClient] = {}
    try:
        try:
            connect_gyms(
                task,
                handle.gym_urls,
                transport=transport,
                timeouts=timeouts,
                header_mode=header_mode,
                into=clients,
            )
        finally:  # the gyms made before one that failed are cleaned up too
            teardown.gyms = [
                GymState(Lease(gym=name, url=client.base_url), client, database_ids[name], seeded)
                for name, client in clients.items()
            ]
    except BaseException:
        await teardown.run()
        raise
    specs = tuple(ToolSpec.from_mcp(t, gym=t.get("gym")) for t in handle.tools)
    return Attached(
        task=task,
        database_ids=database_ids,
        clients=clients,
        teardown=teardown,
        keep=keep,
        tools=specs,
    )
