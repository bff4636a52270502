"""Setting up a task's gyms: reading its seed SQL, making a client per gym, seeding within
the directory's bound, and discovering the task's tools (:func:`seed_task` does it all
for ``TaskSession.start``)."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from eog_core.errors import GymUnreachableError, SeedError, SeedFileError
from eog_core.gym._client import GymClient
from eog_core.gym._headers import HeaderMode
from eog_core.gym._records import Timeouts, new_database_id
from eog_core.gym._seed_fate import Unsent
from eog_core.gym._teardown import GymState, Teardown
from eog_core.gym._transport import Transport
from eog_core.tasks import GymServer, Task, ToolSet, ToolSnapshot, ToolSpec, merge_tools

if TYPE_CHECKING:
    from eog_core.gym._directory import GymDirectory
    from eog_core.gym._janitor import Janitor
    from eog_core.gym._replica import Lease

__all__ = [
    "SeededTask",
    "connect_gyms",
    "discover_tools",
    "read_seed",
    "seed_task",
    "start_seed",
]


def start_seed(
    directory: GymDirectory,
    lease: Lease,
    client: GymClient,
    sql: str,
    *,
    database_id: str,
    name: str,
    abandoned: asyncio.Event,
) -> tuple[asyncio.Task[str], asyncio.Future[str]]:
    """Seed one database in its own task, once the replica has a free seed slot (never,
    if the start was abandoned while it waited); and a future that reports its outcome.

    Waiting on the report, not the task, lets a cancelled caller leave while the
    request finishes (its fate then decides what cleanup does): what
    ``asyncio.shield`` gives, one event-loop pass sooner.
    """
    report: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(
        _seed(directory, lease, client, sql, database_id, name, abandoned, report)
    )
    task.add_done_callback(_seen)
    return task, report


async def _seed(
    directory: GymDirectory,
    lease: Lease,
    client: GymClient,
    sql: str,
    database_id: str,
    name: str,
    abandoned: asyncio.Event,
    report: asyncio.Future[str],
) -> str:
    try:
        async with directory.seed_slot(lease):
            if abandoned.is_set():
                raise Unsent(
                    f"seeding gym {lease.gym!r} was abandoned before it was sent", gym=lease.gym
                )
            await client.seed_database(sql, database_id=database_id, name=name)
    except BaseException as exc:
        if not report.done():  # the caller may have left (cancelled)
            report.set_exception(exc)
            report.exception()  # retrieved: a caller that left will never read it
        raise
    if not report.done():
        report.set_result(database_id)
    return database_id


def _seen(task: asyncio.Future[Any]) -> None:
    """Mark a seed's failure as retrieved: cleanup reads it (seed_fate), maybe later."""
    if not task.cancelled():
        task.exception()


def read_seed(gym: GymServer, seed_root: Path | None) -> str:
    if not gym.seed_database_file:
        raise SeedFileError(f"gym {gym.name!r} names no seed_database_file", path="", gym=gym.name)
    path = Path(gym.seed_database_file)
    if not path.is_absolute() and seed_root is not None:
        path = seed_root / path
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SeedFileError(
            f"seed file for gym {gym.name!r} not found: {path} (upstream's seed files come "
            "from gym_dbs.zip: eog-core seeds unpack gym_dbs.zip --to DIR, then --seed-root DIR)",
            path=str(path),
            gym=gym.name,
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedFileError(
            f"seed file for gym {gym.name!r} unreadable: {path} ({exc})",
            path=str(path),
            gym=gym.name,
        ) from exc


async def discover_tools(
    task: Task, clients: Mapping[str, GymClient], snapshots: Mapping[str, ToolSnapshot] | None
) -> tuple[ToolSet, dict[str, str]]:
    """The task's tool set and every listed tool's owner (snapshots, or one cached listing
    per replica). Both are shared by every session of the task on the same listings:
    treat them as read-only."""
    listed: dict[str, ToolSnapshot | Sequence[ToolSpec]]
    if snapshots is not None:
        listed = {gym: snapshots[gym] for gym in clients if gym in snapshots}
    elif len(clients) == 1:  # usually cached: no task to schedule
        listed = {gym: await client.list_tool_specs() for gym, client in clients.items()}
    else:
        answers = await asyncio.gather(*(c.list_tool_specs() for c in clients.values()))
        listed = dict(zip(clients, answers, strict=True))
    key = (id(task), *(id(source) for source in listed.values()))
    known = _DISCOVERED.get(key)
    if (
        known is not None
        and known[0] is task
        and all(  # the entry keeps its key's objects alive
            a is b for a, b in zip(known[1], listed.values(), strict=True)
        )
    ):
        return known[2], known[3]
    every = merge_tools(attrs.evolve(task, selected_tools=None, restricted_tools=None), listed)
    owners = {tool.name: tool.gym or "" for tool in every.tools}
    tools = merge_tools(task, listed)
    if len(_DISCOVERED) >= _DISCOVERED_MAX:
        _DISCOVERED.clear()
    _DISCOVERED[key] = (task, tuple(listed.values()), tools, owners)
    return tools, owners


# (task, its gyms' listings) -> its tool set and owners: a task run again on the same
# cached listings (the usual) is not merged again.
_DISCOVERED: dict[tuple[int, ...], tuple[Task, tuple[Any, ...], ToolSet, dict[str, str]]] = {}
_DISCOVERED_MAX = 256


@attrs.define(eq=False)
class SeededTask:
    """What :func:`seed_task` set up: a session's tools, databases, clients and cleanup."""

    tools: ToolSet
    owners: dict[str, str]
    database_ids: dict[str, str]
    clients: dict[str, GymClient]
    teardown: Teardown


async def seed_task(
    task: Task,
    *,
    directory: GymDirectory,
    seed_root: Path | None,
    seed_sql: Mapping[str, str],
    tool_snapshots: Mapping[str, ToolSnapshot] | None,
    janitor: Janitor,
    header_mode: HeaderMode,
    transport: Transport | None,
    timeouts: Timeouts,
    own_mcp: bool | Collection[str],
) -> SeededTask:
    """Seed one database per gym of ``task`` concurrently on replicas from ``directory``
    and discover its tools; a failed seed (or a cancelled start) undoes what was done."""
    if not task.gym_servers:
        raise SeedError(f"task {task.task_id!r} names no gym server")
    seeds = {
        gym.name: seed_sql[gym.name] if gym.name in seed_sql else read_seed(gym, seed_root)
        for gym in task.gym_servers
    }
    teardown = Teardown(janitor=janitor, admin_timeout=timeouts.admin, directory=directory)
    clients: dict[str, GymClient] = {}
    try:
        leases: dict[str, Lease] = {}
        for gym in task.gym_servers:
            lease = leases[gym.name] = await directory.acquire(
                gym.name, fallback=gym.url, auth=gym.auth
            )
            teardown.leases.append(lease)
        connect_gyms(
            task,
            {name: lease.url for name, lease in leases.items()},
            transport=transport,
            timeouts=timeouts,
            header_mode=header_mode,
            own_mcp=own_mcp,
            into=clients,
        )
        database_ids = {gym.name: new_database_id() for gym in task.gym_servers}
        started = {
            g: start_seed(
                directory,
                leases[g],
                clients[g],
                seeds[g],
                database_id=database_ids[g],
                name=f"{task.task_id or 'task'} {g}",
                abandoned=teardown.abandoned,
            )
            for g in clients
        }
        # Registered before the first await, so a cancelled start deletes too.
        teardown.gyms = [
            GymState(leases[g], clients[g], database_ids[g], started[g][0]) for g in clients
        ]
        teardown.seeds = [request for request, _ in started.values()]
        outcomes: list[Any] = []
        for _, report in started.values():  # the requests run concurrently
            try:
                outcomes.append(await report)
            except Exception as exc:
                outcomes.append(exc)
        failures: list[tuple[str, BaseException]] = []
        for gym_name, outcome in zip(clients, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                failures.append((gym_name, outcome))
                if isinstance(outcome, GymUnreachableError):
                    directory.mark_down(leases[gym_name])
        if failures:
            for _, error in failures:
                if not isinstance(error, Exception):
                    raise error  # cancellation and the like go up unchanged
            gym_name, error = failures[0]
            others = "".join(f"; also {g}: {e}" for g, e in failures[1:])
            raise SeedError(
                f"seeding gym {gym_name!r} failed: {error}{others}", gym=gym_name
            ) from error
        tools, owners = await discover_tools(task, clients, tool_snapshots)
    except BaseException:
        if not teardown.gyms:  # failed while making the clients: none is registered yet
            for client in clients.values():
                await client.aclose()
        await teardown.run()  # undo what was set up
        raise
    return SeededTask(
        tools=tools, owners=owners, database_ids=database_ids, clients=clients, teardown=teardown
    )


def connect_gyms(
    task: Task,
    urls: Mapping[str, str],
    *,
    transport: Transport | None,
    timeouts: Timeouts,
    header_mode: HeaderMode,
    own_mcp: bool | Collection[str] = False,
    into: dict[str, GymClient],
) -> None:
    """A client per gym of ``task`` on its replica at ``urls[gym]``, put ``into`` the
    caller's dict as each is made (so its cleanup sees those made before a failure)."""
    for gym in task.gym_servers:
        own = own_mcp if isinstance(own_mcp, bool) else gym.name in own_mcp
        into[gym.name] = GymClient(
            urls[gym.name],
            name=gym.name,
            mcp_endpoint=gym.mcp_endpoint or task.mcp_endpoint,
            auth=gym.auth,
            transport=transport,
            timeouts=timeouts,
            header_mode=header_mode,
            share_mcp=not own,
        )
