"""Issue #8's leaks and races, each against a real loopback peer (LocalGym, FakeGym, FastMCP)."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest

from eog_core import Task, load_task
from eog_core.errors import (
    ClosedError,
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    SeedError,
)
from eog_core.gym import (
    AiohttpTransport,
    GymClient,
    GymDirectory,
    Janitor,
    Lease,
    TaskSession,
    Timeouts,
)
from eog_core.local import LocalGym, ToolContext, demo_paths

from .conftest import UvicornThread, free_port
from .fake_gym import FakeGym, running

PATHS = demo_paths()


@pytest.fixture
def task() -> Task:
    return load_task(PATHS.task)


async def eventually(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Wait until ``condition`` holds (the peers' counters offer no event to wait on)."""
    async with asyncio.timeout(limit):
        while not condition():  # noqa: ASYNC110 - bounded by the timeout above
            await asyncio.sleep(0.01)


def quick_janitor(**options: Any) -> Janitor:
    return Janitor(base_delay=0.01, max_delay=0.05, interval=0.01, **options)


# -- 1. a seed that lands after the client gave up --------------------------------------


@pytest.mark.parametrize("how", ["timeout", 504, "drop"])
async def test_a_seed_the_client_gave_up_on_is_deleted_once_it_lands(
    task: Task, how: int | str
) -> None:
    fake = FakeGym(
        seed_delay=0.3, missing_status=404, seed_answer=None if how == "timeout" else how
    )
    janitor = quick_janitor()
    gym = task.gym_servers[0].name
    async with running(fake):
        with pytest.raises(SeedError):
            await TaskSession.start(
                task,
                directory=GymDirectory({gym: fake.url}),
                seed_sql={gym: "CREATE TABLE t (x);"},
                janitor=janitor,
                timeouts=Timeouts(seed=0.05),
            )
        # The gym is still loading the dump: deletion said 404, which is not "gone".
        (entry,) = janitor.leaked()
        assert entry.watch_until is not None
        await eventually(lambda: not fake.loading and not fake.seeded and not janitor.leaked())
    assert await janitor.aclose() == []


async def test_a_database_that_never_appears_is_reported_then_given_up() -> None:
    async with running(FakeGym(missing_status=404)) as fake:
        janitor = quick_janitor()
        janitor.adopt(gym="g", url=fake.url, database_id="db_x", may_still_land=True)
        (left,) = await janitor.aclose()
        assert (left.database_id, left.attempts) == ("db_x", 1)
        assert "not there yet" in left.last_error
        patient = quick_janitor(landing_window=0.0)
        patient.adopt(gym="g", url=fake.url, database_id="db_y", may_still_land=True)
        assert await patient.aclose() == []


async def test_a_seed_the_gym_refused_is_not_watched(task: Task) -> None:
    janitor = quick_janitor()
    gym_name = task.gym_servers[0].name
    async with LocalGym.demo() as gym:
        gym.fail_next(1, 400, path="/api/seed-database")
        with pytest.raises(SeedError):
            await TaskSession.start(
                task,
                directory=GymDirectory({gym_name: gym.url}),
                seed_root=PATHS.directory,
                janitor=janitor,
            )
        assert janitor.leaked() == []
        assert gym.request_counts.get("/api/delete-database", 0) == 0


# -- 4, 5, 8, 18. TaskSession ------------------------------------------------------------


@attrs.define
class SlowGym:
    """The demo gym plus a tool ``wait_here`` that runs until the test calls ``release``."""

    gym: LocalGym
    started: asyncio.Event = attrs.Factory(asyncio.Event)
    released: asyncio.Event = attrs.Factory(asyncio.Event)

    async def wait_here(self, ctx: ToolContext) -> str:
        self.started.set()
        await self.released.wait()
        return "done"


@pytest.fixture
async def slow() -> AsyncIterator[SlowGym]:
    slow = SlowGym(LocalGym.demo())
    slow.gym.tool(name="wait_here", input_schema={"type": "object", "properties": {}})(
        slow.wait_here
    )
    async with slow.gym:
        yield slow


async def test_the_janitor_never_reaps_a_session_whose_call_is_in_flight(
    task: Task, slow: SlowGym
) -> None:
    gym = slow.gym
    now = [0.0]
    janitor = Janitor(ttl=10.0, clock=lambda: now[0])
    session = await TaskSession.start(
        task,
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=PATHS.directory,
        janitor=janitor,
        forward_any_tool=True,
    )
    call = asyncio.ensure_future(session.call_tool("wait_here", {}))
    async with asyncio.timeout(10):
        await slow.started.wait()
    now[0] = 1e12  # long past the TTL
    await janitor.sweep()
    assert not session.closed and gym.database_ids() == list(session.database_ids.values())
    slow.released.set()
    assert (await call).text == "done"
    now[0] = 2e12
    await janitor.sweep()  # idle now: reaped
    assert session.closed and gym.database_ids() == []
    await janitor.aclose()


async def test_a_second_aclose_waits_for_the_first(task: Task) -> None:
    async with LocalGym.demo() as gym:
        session = await TaskSession.start(
            task,
            directory=GymDirectory({gym.name: gym.url}),
            seed_root=PATHS.directory,
            janitor=Janitor(),
        )
        gym.set_latency(0.2)
        first = asyncio.ensure_future(session.aclose())
        await asyncio.sleep(0)  # the first close is now waiting on the gym
        await session.aclose()
        assert gym.database_ids() == []
        await first


async def test_a_cancelled_call_is_recorded_as_cancelled(task: Task, slow: SlowGym) -> None:
    gym = slow.gym
    async with TaskSession.start(
        task,
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=PATHS.directory,
        janitor=Janitor(),
        forward_any_tool=True,
    ) as session:
        call = asyncio.ensure_future(session.call_tool("wait_here", {}))
        async with asyncio.timeout(10):
            await slow.started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        slow.released.set()
    (record,) = session.trajectory
    assert (record.name, record.cancelled, record.is_error, record.local) == (
        "wait_here",
        True,
        True,
        False,
    )


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (b'{"ticket": "\xff"}', "not UTF-8"),
        ('{"a": "\udcff"}', "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper"),
        ('{"a":' + "[" * 150 + "]" * 150 + "}", "nested deeper"),
        ('{"n": ' + "9" * 5000 + "}", "digits"),
        ('{"x": NaN}', "not a JSON number"),  # json.loads reads it; no JSON may send it
        ('{"x": Infinity}', "not a JSON number"),
    ],
    ids=["bytes", "surrogate", "recursion", "deep", "huge-int", "nan", "infinity"],
)
async def test_hostile_argument_strings_are_answered_locally(
    task: Task, arguments: str | bytes, why: str
) -> None:
    async with (
        LocalGym.demo() as gym,
        TaskSession.start(
            task,
            directory=GymDirectory({gym.name: gym.url}),
            seed_root=PATHS.directory,
            janitor=Janitor(),
        ) as session,
    ):
        name = session.tools.names[0]
        result = await session.call_tool(name, arguments)
    assert result.is_error and why in result.text
    (record,) = session.trajectory
    assert record.local and record.is_error and why in str(record.error)
    assert gym.tool_executions == {}


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"a": "\udcff"}, "not UTF-8"),
        ({"\ud800": 1}, "not UTF-8"),
        ({"a": _nested(100_000)}, "nested deeper"),
        ({"a": _nested(150)}, "nested deeper"),
        ({"n": 10**5000}, "digits"),
        ({"n": [-(10**4300)]}, "digits"),
        ({"x": float("nan")}, "not a JSON number"),
        ({"x": [float("-inf")]}, "not a JSON number"),
    ],
    ids=[
        "surrogate",
        "surrogate-key",
        "recursion",
        "deep",
        "huge-int",
        "huge-negative-int",
        "nan",
        "minus-infinity",
    ],
)
async def test_hostile_argument_mappings_are_answered_locally_as_strings_are(
    task: Task, arguments: dict[str, object], why: str
) -> None:
    async with (
        LocalGym.demo() as gym,
        TaskSession.start(
            task,
            directory=GymDirectory({gym.name: gym.url}),
            seed_root=PATHS.directory,
            janitor=Janitor(),
        ) as session,
    ):
        name = session.tools.names[0]
        result = await session.call_tool(name, arguments)
        fine = await session.call_tool(name, {"a": _nested(99), "n": 10**4299 - 1, "s": "\u00e9"})
    assert result.is_error and result.text.startswith("Error: arguments are not valid JSON (")
    assert why in result.text
    record = session.trajectory[0]
    assert record.local and record.is_error and why in str(record.error) and record.arguments == {}
    assert not session.trajectory[1].local and fine.raw  # within the limits: sent to the gym


# -- 6, 7. GymDirectory ------------------------------------------------------------------


async def test_an_unlisted_gym_goes_to_each_task_s_own_url() -> None:
    async with LocalGym() as first, LocalGym() as second:
        directory = GymDirectory({})
        lease_a = await directory.acquire("unlisted", fallback=first.url)
        lease_b = await directory.acquire("unlisted", fallback=second.url + "/")
        assert (lease_a.url, lease_b.url) == (first.url, second.url)
        directory.mark_down(lease_a)
        assert (await directory.acquire("unlisted", fallback=second.url)).url == second.url


async def test_acquire_reprobes_the_only_replica_while_it_restarts() -> None:
    port = free_port()
    directory = GymDirectory(
        {"g": f"http://127.0.0.1:{port}"}, probe_after=3600.0, reprobe_attempts=6, reprobe_delay=0.1
    )
    lease = Lease(gym="g", url=f"http://127.0.0.1:{port}")
    async with LocalGym(port=port) as gym:
        url = gym.url
        directory.mark_down(lease)  # a session saw it go away
    restarted = LocalGym(port=port)
    waiting = [asyncio.ensure_future(directory.acquire("g")) for _ in range(20)]
    await asyncio.sleep(0.05)  # every caller now waits on the same probes
    async with restarted:
        leases = await asyncio.gather(*waiting)
        assert {lease.url for lease in leases} == {url}
        assert restarted.request_counts["/health"] <= 6  # one shared probe per round


async def test_acquire_gives_up_after_bounded_reprobes() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens
    directory = GymDirectory({"g": url}, probe_after=3600.0, reprobe_attempts=2, reprobe_delay=0.01)
    directory.mark_down(Lease(gym="g", url=url))
    with pytest.raises(GymUnreachableError, match="no healthy replica"):
        await directory.acquire("g")


# -- 11. session ids ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "why"),
    [("default", r"control character\) in the head"), ("aiohttp", "mcp-session-id")],
)
async def test_a_session_id_with_a_control_byte_is_a_protocol_error(kind: str, why: str) -> None:
    """aiohttp's server refuses to send such a header, so this peer writes raw HTTP. The
    default transport's framing (llhttp) refuses the head; aiohttp takes it and the MCP
    layer refuses the session id."""
    seen: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        request = json.loads(await reader.readexactly(length))
        seen.append(request["method"].encode())
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {"protocolVersion": "2025-06-18", "capabilities": {}},
            }
        ).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"mcp-session-id: abc\x01def\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        transport = AiohttpTransport() if kind == "aiohttp" else None
        async with GymClient(f"http://127.0.0.1:{port}", transport=transport) as client:
            with pytest.raises(GymProtocolError, match=why):
                await client.call_tool("add", {}, database_id="db_1")
        if transport is not None:
            await transport.aclose()
    finally:
        server.close()
        await server.wait_closed()
    assert seen == [b"initialize"]


# -- 12. a second event loop -------------------------------------------------------------


@pytest.mark.parametrize("shared", [False, True], ids=["own-session", "shared-session"])
def test_a_client_works_from_a_second_event_loop(fastmcp_json: UvicornThread, shared: bool) -> None:
    client = GymClient(fastmcp_json.url, share_mcp=shared)

    async def add() -> str:
        return (await client.call_tool("add", {"a": 1, "b": 2}, database_id=None)).text

    assert asyncio.run(add()) == "3"
    assert asyncio.run(add()) == "3"  # a new loop: a new pool
    asyncio.run(client.aclose())
    gc.collect()  # an unclosed aiohttp session or socket would warn (warnings are errors)


@pytest.mark.parametrize("shared", [False, True], ids=["own-session", "shared-session"])
def test_a_whole_task_runs_on_uvloop(shared: bool) -> None:
    """uvloop's transports are not ``asyncio.Transport`` instances: the default transport's
    connections take them as they are (NeMo Gym serves its resources servers on uvloop)."""
    uvloop = pytest.importorskip("uvloop")
    task = load_task(demo_paths().task)

    async def lifecycle() -> tuple[bool, list[str]]:
        async with LocalGym.demo() as gym:
            directory = GymDirectory({gym.name: [gym.url]})
            async with (
                directory,
                TaskSession.start(
                    task, directory=directory, seed_root=demo_paths().directory, own_mcp=not shared
                ) as session,
            ):
                result = await session.call_tool("find_account", {"name": "Harbor Lane"})
                verdict = await session.verify()
            return not result.is_error and verdict.num_scored > 0, gym.database_ids()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(lifecycle()) == (True, [])
    gc.collect()


# -- 18. decided behaviours --------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "config"), (403, "config"), (404, "transport"), (400, "database")]
)
async def test_sql_runner_failures_are_classified(status: int, kind: str) -> None:
    async with LocalGym() as gym, GymClient(gym.url) as client:
        gym.fail_next(1, status, path="/api/sql-runner")
        outcome = await client.run_sql("SELECT 1", database_id="db_1")
    assert (outcome.success, outcome.error_kind, outcome.status) == (False, kind, status)


async def test_health_probes_carry_the_task_s_credentials() -> None:
    from aiohttp import web

    from eog_core.tasks import AuthConfig

    seen: list[str | None] = []

    async def health(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        ok = request.headers.get("Authorization") == "Bearer t0ken"
        return web.json_response({"status": "ok"}, status=200 if ok else 401)

    app = web.Application()
    app.router.add_get("/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        directory = GymDirectory({"g": url}, probe_after=0.0, reprobe_attempts=0)
        directory.mark_down(Lease(gym="g", url=url))
        lease = await directory.acquire("g", auth=AuthConfig(type="bearer", token="t0ken"))
    finally:
        await runner.cleanup()
    assert (lease.url, seen) == (url, ["Bearer t0ken"])


# -- 15. server-to-client requests on the response stream ---------------------------------


async def test_a_ping_on_the_response_stream_is_answered(fastmcp_sse: UvicornThread) -> None:
    async with GymClient(fastmcp_sse.url, timeouts=Timeouts(rpc=20)) as client:
        result = await client.call_tool("pings", {}, database_id=None)
    assert (result.is_error, result.text) == (False, "pong")


@pytest.mark.parametrize("tool", ["elicits", "samples"])
async def test_unsupported_server_requests_get_method_not_found(
    fastmcp_sse: UvicornThread, tool: str
) -> None:
    """The server's request fails at once (-32601), so the tool ends instead of hanging."""
    async with GymClient(fastmcp_sse.url, timeouts=Timeouts(rpc=20)) as client:
        result = await client.call_tool(tool, {}, database_id=None)
        after = await client.call_tool("add", {"a": 1, "b": 1}, database_id=None)
    assert result.is_error and "Method not found" in result.text
    assert after.text == "2"


# -- 2, 3, 16. handshakes and closing -----------------------------------------------------


async def test_cancelling_between_initialize_and_initialized_orphans_nothing() -> None:
    async with running(FakeGym(initialized_gate=asyncio.Event())) as fake:
        client = GymClient(fake.url)
        call = asyncio.ensure_future(client.call_tool("add", {}, database_id="db_1"))
        await eventually(lambda: "notifications/initialized" in fake.methods)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        closing = asyncio.ensure_future(client.aclose())
        await asyncio.sleep(0)
        assert fake.initialized_gate is not None
        fake.initialized_gate.set()
        await closing
    (session,) = fake.sessions
    (ended,) = fake.delete_headers
    assert (ended["mcp-session-id"], ended["MCP-Protocol-Version"]) == (session, "2025-06-18")


async def test_closing_during_the_handshake_ends_the_session_it_opened() -> None:
    async with running(FakeGym(initialized_gate=asyncio.Event())) as fake:
        client = GymClient(fake.url, timeouts=Timeouts(admin=0.2))
        call = asyncio.ensure_future(client.call_tool("add", {}, database_id="db_1"))
        await eventually(lambda: "notifications/initialized" in fake.methods)
        await client.aclose()  # the notification never completes: close gives up on it
        with pytest.raises(ClosedError):
            await call
        (session,) = fake.sessions
        assert [h["mcp-session-id"] for h in fake.delete_headers] == [session]
        assert fake.methods.count("initialize") == 1


async def test_a_cancelled_close_still_ends_the_session() -> None:
    gate = asyncio.Event()
    async with running(FakeGym(initialized_gate=gate)) as fake:
        client = GymClient(fake.url)
        call = asyncio.ensure_future(client.call_tool("add", {}, database_id="db_1"))
        await eventually(lambda: "notifications/initialized" in fake.methods)
        closing = asyncio.ensure_future(client.aclose())
        await eventually(call.done)  # the close has begun: the call ended
        closing.cancel()  # while the close waits for the handshake
        with pytest.raises(asyncio.CancelledError):
            await closing
        gate.set()
        await eventually(lambda: bool(fake.delete_headers))
        assert fake.delete_headers[0]["mcp-session-id"] == fake.sessions[0]
        with pytest.raises(ClosedError):
            await call


@pytest.mark.parametrize("shared", [False, True], ids=["own-session", "shared-session"])
async def test_closing_a_client_ends_every_request_in_flight_with_closed_error(
    shared: bool,
) -> None:
    async with running(FakeGym(list_gate=asyncio.Event())) as fake:
        client = GymClient(fake.url, share_mcp=shared)
        other = GymClient(fake.url, share_mcp=shared)
        calls = [
            asyncio.ensure_future(client.call_tool("wait", {}, database_id="db_1"))
            for _ in range(3)
        ]
        calls.append(asyncio.ensure_future(client.list_tools()))
        bystander = asyncio.ensure_future(other.call_tool("wait", {}, database_id="db_2"))
        await eventually(lambda: fake.executions["wait"] == 4 and "tools/list" in fake.methods)
        await client.aclose()
        for call in calls:
            with pytest.raises(ClosedError):
                await call
        with pytest.raises(ClosedError):
            await client.call_tool("add", {}, database_id="db_1")
        fake.expired.update(fake.sessions)  # a 404 now would tempt a re-initialization
        assert fake.list_gate is not None
        fake.list_gate.set()
        fake.call_gate.set()
        assert (await bystander).text == "ran wait"  # another client's call is not ours to end
        await other.aclose()
    assert fake.methods.count("initialize") == (1 if shared else 2)
    gc.collect()  # an unclosed aiohttp session would warn here (warnings are errors)


async def test_a_failed_handshake_is_every_waiter_s_outcome() -> None:
    gate = asyncio.Event()
    fake = FakeGym(initialize_gate=gate, initialize_status=500)
    async with running(fake), GymClient(fake.url, share_mcp=True) as client:
        calls = [
            asyncio.ensure_future(client.call_tool("add", {}, database_id="db_1")) for _ in range(5)
        ]
        await eventually(lambda: "initialize" in fake.methods)
        for _ in range(5):
            await asyncio.sleep(0)  # let every caller reach the handshake
        gate.set()
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(o, GymHTTPError) and o.status == 500 for o in outcomes), outcomes
    assert fake.methods.count("initialize") == 1


async def test_a_hanging_handshake_costs_every_waiter_one_timeout() -> None:
    fake = FakeGym(initialize_gate=asyncio.Event())
    async with running(fake), GymClient(fake.url, timeouts=Timeouts(rpc=0.3)) as client:
        outcomes = await asyncio.gather(
            *(client.call_tool("add", {}, database_id="db_1") for _ in range(5)),
            return_exceptions=True,
        )
        assert all(isinstance(o, GymTimeoutError) for o in outcomes), outcomes
        assert fake.methods.count("initialize") == 1


async def test_a_server_reusing_a_session_id_is_re_initialized_once() -> None:
    """Found by the JSON-RPC property test: the re-initialization is counted, not compared
    by id, so a gym answering 404 under an id it hands out again cannot loop the client."""
    fake = FakeGym(fixed_session_id="s1")
    async with running(fake), GymClient(fake.url, timeouts=Timeouts(rpc=10)) as client:
        await client.call_tool("add", {}, database_id="db_1")
        fake.expired.add("s1")
        with pytest.raises(GymHTTPError) as caught:
            await client.call_tool("add", {}, database_id="db_1")
    assert caught.value.status == 404
    assert fake.methods.count("initialize") == 2
