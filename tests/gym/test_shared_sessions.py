"""One MCP session per replica and event loop, shared by task sessions; cached tool lists.

Against LocalGym (counts every JSON-RPC method it receives), the official FastMCP
server and the fake gym (records DELETE headers, answers chosen versions).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from eog_core import ProtocolVersionError, Task, load_task
from eog_core.gym import (
    AuthConfig,
    GymClient,
    GymDirectory,
    TaskSession,
    connection_pool,
)
from eog_core.local import LocalGym, demo_paths

from .conftest import UvicornThread
from .fake_gym import FakeGym, running

PATHS = demo_paths()
RESOLVE = ("update_case", {"case_id": "CS0001003", "state": "resolved", "close_notes": "done"})
CASE_STATE = "SELECT state FROM \"case\" WHERE number = 'CS0001003'"


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo() as server:
        yield server


@pytest.fixture
def task() -> Task:
    return load_task(PATHS.task)


def start(task: Task, directory: GymDirectory, **options: object) -> asyncio.Future[TaskSession]:
    return asyncio.ensure_future(
        TaskSession.start(task, directory=directory, seed_root=PATHS.directory, **options)  # type: ignore[arg-type]
    )


async def test_task_sessions_share_one_mcp_session_and_one_tool_list(
    gym: LocalGym, task: Task
) -> None:
    async with GymDirectory({gym.name: gym.url}) as directory:
        sessions = await asyncio.gather(*(start(task, directory) for _ in range(3)))
        first, *others = sessions
        await first.call_tool(*RESOLVE)
        found = await asyncio.gather(
            *(s.call_tool("find_account", {"name": "Harbor Lane"}) for s in others)
        )
        assert not any(result.is_error for result in found)
        # Each call carried its own database: only the first task's case is resolved.
        states = [gym.query(s.database_ids[gym.name], CASE_STATE)[0]["state"] for s in sessions]
        assert states[0] == "resolved" and "resolved" not in states[1:]
        await asyncio.gather(*(s.aclose() for s in sessions))
        async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory) as later:
            await later.call_tool("find_account", {"name": "Harbor Lane"})
        assert gym.method_counts == {
            "initialize": 1,
            "notifications/initialized": 1,
            "tools/list": 1,
            "tools/call": 4,
        }
        assert len(gym.session_ids()) == 1  # closing task sessions left the shared one open
        assert gym.database_ids() == []
    assert gym.session_ids() == []  # the pool closed with the directory: DELETE /mcp


async def test_expired_shared_session_is_renewed_once_for_all_sharers(
    gym: LocalGym, task: Task
) -> None:
    async with GymDirectory({gym.name: gym.url}) as directory:
        sessions = await asyncio.gather(*(start(task, directory) for _ in range(4)))
        assert gym.expire_sessions() == 1
        results = await asyncio.gather(
            *(s.call_tool("find_account", {"name": "Harbor Lane"}) for s in sessions)
        )
        assert not any(result.is_error for result in results)
        assert gym.method_counts["initialize"] == 2
        assert gym.method_counts["notifications/initialized"] == 2
        assert gym.tool_executions == {"find_account": 4}  # refused unread, sent again once
        await sessions[0].aclose()
        await sessions[1].call_tool("find_account", {"name": "Harbor Lane"})
        assert gym.method_counts["initialize"] == 2
        assert len(gym.session_ids()) == 1
        # The renewed session may be a restarted server: its tools are listed again.
        async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory):
            assert gym.method_counts["tools/list"] == 2
        await asyncio.gather(*(s.aclose() for s in sessions[1:]))
    assert gym.session_ids() == []


async def test_own_mcp_gives_each_task_its_own_session(gym: LocalGym, task: Task) -> None:
    async with GymDirectory({gym.name: gym.url}) as directory:
        sessions = await asyncio.gather(
            *(start(task, directory, own_mcp={gym.name}) for _ in range(2))
        )
        assert len(gym.session_ids()) == 2
        for session in sessions:
            await session.call_tool("find_account", {"name": "Harbor Lane"})
            await session.aclose()
        assert gym.session_ids() == []  # ended with each task session
        assert gym.method_counts["initialize"] == gym.method_counts["tools/list"] == 2
        async with TaskSession.start(
            task, directory=directory, seed_root=PATHS.directory, own_mcp=True
        ):
            assert len(gym.session_ids()) == 1
        assert gym.session_ids() == []


async def test_the_old_session_keywords_still_work_with_a_deprecation_warning(
    gym: LocalGym, task: Task
) -> None:
    with pytest.warns(DeprecationWarning, match=r"shared_session=.*share_mcp="):
        client = GymClient(gym.url, shared_session=True)
    assert client.share_mcp
    await client.aclose()
    async with GymDirectory({gym.name: gym.url}) as directory:
        with pytest.warns(DeprecationWarning, match=r"session_per_database=.*own_mcp="):
            starting = TaskSession.start(
                task, directory=directory, seed_root=PATHS.directory, session_per_database=True
            )
        async with starting as session:
            assert not session._clients[gym.name].share_mcp  # its own MCP session
            assert len(gym.session_ids()) == 1
        assert gym.session_ids() == []  # ended with the task session, the directory still open


async def test_a_directory_holds_its_pool_from_the_first_acquire_until_aclose(
    gym: LocalGym, task: Task
) -> None:
    """#19: not held with ``async with``, a directory still keeps the shared MCP session
    between tasks (one initialize for many tasks); ``aclose()`` ends it early."""
    directory = GymDirectory({gym.name: gym.url})
    for _ in range(3):
        async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory):
            assert len(gym.session_ids()) == 1
        assert len(gym.session_ids()) == 1  # still open between tasks
    assert gym.method_counts["initialize"] == 1
    await directory.aclose()
    assert gym.session_ids() == []
    await directory.aclose()  # idempotent


async def test_a_directory_s_pool_ends_with_its_event_loop(gym: LocalGym, task: Task) -> None:
    """Never closed by hand, the pool a directory held closes when its loop ends
    (``asyncio.run`` closes async generators): the shared MCP session gets its DELETE."""

    async def tasks_on_another_loop() -> None:
        directory = GymDirectory({gym.name: gym.url})
        for _ in range(2):
            async with TaskSession.start(task, directory=directory, seed_root=PATHS.directory):
                pass
        assert len(gym.session_ids()) == 1

    await asyncio.to_thread(asyncio.run, tasks_on_another_loop())
    assert gym.session_ids() == []
    assert gym.database_ids() == []
    assert gym.method_counts["initialize"] == 1


async def test_tool_list_is_cached_per_replica_until_refreshed(fastmcp: UvicornThread) -> None:
    async with connection_pool():
        async with GymClient(fastmcp.url, share_mcp=True) as a:
            first = await a.list_tools()
            session_id = a.mcp_session_id
        async with GymClient(fastmcp.url, share_mcp=True) as b:
            assert b.mcp_session_id is None  # not used yet
            assert await b.list_tools() == first
            assert b.mcp_session_id == session_id  # the same MCP session, still open
            assert await b.list_tools(refresh=True) == first
            auth = AuthConfig(type="bearer", token="other")
            async with GymClient(fastmcp.url, share_mcp=True, auth=auth) as c:
                await c.list_tools()
                assert c.mcp_session_id != session_id  # other credentials, another session


async def test_tool_specs_are_read_once_per_listing_and_gym_name(gym: LocalGym) -> None:
    async with connection_pool():
        async with (
            GymClient(gym.url, name="a", share_mcp=True) as a,
            GymClient(gym.url, name="a", share_mcp=True) as same,
            GymClient(gym.url, name="b", share_mcp=True) as other,
        ):
            specs = await a.list_tool_specs()
            assert isinstance(specs, tuple) and specs and {s.gym for s in specs} == {"a"}
            assert await same.list_tool_specs() is specs  # the cached reading itself
            assert {s.gym for s in await other.list_tool_specs()} == {"b"}
            again = await a.list_tool_specs(refresh=True)
            assert again is not specs and again == specs
            assert gym.method_counts["tools/list"] == 3  # "a" twice, "b" (its own MCP session)
        async with GymClient(gym.url, name="a") as own:  # its own session: listed each time
            assert await own.list_tool_specs() == specs
            assert await own.list_tool_specs() == specs
            assert gym.method_counts["tools/list"] == 5


async def test_tool_list_listings_are_counted(gym: LocalGym) -> None:
    async with connection_pool():
        clients = [GymClient(gym.url, share_mcp=True) for _ in range(5)]
        await asyncio.gather(*(client.list_tools() for client in clients))
        assert gym.method_counts["tools/list"] == 1  # concurrent first listings wait for one
        await clients[0].list_tools(refresh=True)
        assert gym.method_counts["tools/list"] == 2
        await clients[1].list_tools()
        assert gym.method_counts["tools/list"] == 2
        for client in clients:
            await client.aclose()
        assert len(gym.session_ids()) == 1
    assert gym.session_ids() == []


async def test_pool_close_ends_shared_sessions_with_the_version_header() -> None:
    async with running(FakeGym()) as fake:
        async with connection_pool():
            async with GymClient(fake.url, share_mcp=True) as client:
                await client.call_tool("add", {}, database_id="db")
            assert "DELETE" not in fake.methods
        assert fake.methods[-1] == "DELETE"
        (headers,) = fake.delete_headers
        assert headers["mcp-session-id"] == fake.sessions[0]
        assert headers["MCP-Protocol-Version"] == "2025-06-18"


async def test_own_session_delete_carries_the_version_header() -> None:
    async with running(FakeGym()) as fake:
        async with GymClient(fake.url) as client:
            await client.list_tools()
        (headers,) = fake.delete_headers
        assert headers["MCP-Protocol-Version"] == "2025-06-18"


async def test_delete_refused_with_405_is_not_logged_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="eog_core.gym")
    async with running(FakeGym(mcp_delete_status=405)) as fake:
        for _ in range(3):
            async with GymClient(fake.url, name="fake") as client:
                await client.list_tools()
        assert fake.methods.count("DELETE") == 3
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []


@pytest.mark.parametrize("shared", [False, True])
async def test_unsupported_protocol_version_disconnects_with_a_typed_error(shared: bool) -> None:
    async with (
        running(FakeGym(answer_version="2099-01-01")) as fake,
        GymClient(fake.url, name="fake", share_mcp=shared) as client,
    ):
        with pytest.raises(ProtocolVersionError) as caught:
            await client.call_tool("add", {}, database_id="db")
        assert caught.value.version == "2099-01-01"
        assert "2025-06-18" in caught.value.supported
        assert fake.methods == ["initialize", "DELETE"]  # the opened session was ended
        assert fake.executions == {}


async def test_an_older_supported_version_is_accepted() -> None:
    async with running(FakeGym(answer_version="2024-11-05")) as fake:
        async with GymClient(fake.url, share_mcp=True) as client:
            result = await client.call_tool("add", {}, database_id="db")
            assert client.negotiated_version == "2024-11-05"
        assert not result.is_error
        assert "MCP-Protocol-Version" not in fake.headers_seen[-1]  # not before 2025-06-18
