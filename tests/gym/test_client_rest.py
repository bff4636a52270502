"""The REST database endpoints and the SQL runner, against the reference LocalGym."""

from __future__ import annotations

import re
import string
from collections.abc import AsyncIterator
from typing import Any

import pytest

from eog_core.errors import ClosedError, GymHTTPError, GymProtocolError
from eog_core.gym import (
    AiohttpTransport,
    GymClient,
    HttpSqlRunner,
    RetryPolicy,
    new_database_id,
    seed_timeout,
)
from eog_core.gym._records import random_chars
from eog_core.gym._transport import lease_pool, release_pool
from eog_core.local import LocalGym, ToolContext
from eog_core.verify._outcome import SqlOutcome

from .conftest import TransportClass
from .fake_gym import FakeGym, running

SEED = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);\nINSERT INTO notes VALUES (1, 'a');"


def build_gym(mode: Any = "json") -> LocalGym:
    gym = LocalGym(name="local", response_mode=mode)

    @gym.tool(
        name="add_note",
        input_schema={
            "type": "object",
            "properties": {"body": {"type": "string"}},
            "required": ["body"],
        },
    )
    def add_note(ctx: ToolContext, body: str) -> dict[str, Any]:
        cursor = ctx.connection.execute("INSERT INTO notes (body) VALUES (?)", (body,))
        ctx.connection.commit()
        return {"id": cursor.lastrowid, "user": ctx.user_email}

    return gym


@pytest.fixture(params=["json", "sse"])
async def local_gym(request: pytest.FixtureRequest) -> AsyncIterator[LocalGym]:
    async with build_gym(request.param) as gym:
        yield gym


@pytest.fixture
async def client(local_gym: LocalGym, transport_class: TransportClass) -> AsyncIterator[GymClient]:
    transport = transport_class(retry=RetryPolicy(initial_delay=0.0, max_delay=0.0))
    async with GymClient(local_gym.url, name="local", transport=transport) as gym_client:
        yield gym_client
    await transport.aclose()


def test_database_ids_look_like_upstream() -> None:
    assert re.fullmatch(r"db_\d{13}_[a-z0-9]{9}", new_database_id())
    assert len({new_database_id()[-9:] for _ in range(2000)}) == 2000


def test_id_characters_cover_the_alphabet_and_nothing_else() -> None:
    chars = random_chars(36 * 200)
    assert len(chars) == 36 * 200
    assert set(chars) == set(string.ascii_lowercase + string.digits)


def test_seed_timeout_scales_with_size() -> None:
    assert seed_timeout("x" * 1000) == 1200.0
    assert seed_timeout("\u00e9" * 1000) == 1200.0  # non-ASCII: counted in bytes
    assert seed_timeout("\u00e9" * (100 * 1024 * 1024)) == 120 + 200 * 1024 * 1024 / 102400
    assert seed_timeout("x" * (200 * 1024 * 1024)) == 120 + 200 * 1024 * 1024 / 102400


async def test_seed_query_call_delete(local_gym: LocalGym, client: GymClient) -> None:
    health = await client.health()
    assert isinstance(health, dict)
    assert health["status"] == "ok"
    database_id = await client.seed_database(SEED)
    assert [database_id] == local_gym.database_ids()
    result = await client.call_tool(
        "add_note", {"body": "b"}, database_id=database_id, context={"user_email": "u@x.io"}
    )
    assert (result.is_error, result.structured) == (False, {"id": 2, "user": "u@x.io"})
    outcome = await client.run_sql("SELECT COUNT(*) AS n FROM notes", database_id=database_id)
    query = "SELECT COUNT(*) AS n FROM notes LIMIT 100"  # as a real gym, LocalGym caps and echoes
    assert SqlOutcome.ok({"data": [{"n": 2}], "query": query}) == outcome
    assert await client.delete_database(database_id) is True
    assert local_gym.database_ids() == []


async def test_explicit_database_id(local_gym: LocalGym, client: GymClient) -> None:
    assert await client.seed_database(SEED, database_id="db_mine", name="n") == "db_mine"
    assert local_gym.database_ids() == ["db_mine"]


async def test_rejected_query_is_a_database_failure(client: GymClient) -> None:
    database_id = await client.seed_database(SEED)
    outcome = await client.run_sql("SELECT * FROM missing", database_id=database_id)
    assert (
        SqlOutcome.failed(
            "SQL API call failed (HTTP 400): no such table: missing", kind="database", status=400
        )
        == outcome
    )


async def test_unknown_database_on_delete_is_false(client: GymClient) -> None:
    # Upstream reads 404 as "deletion not supported"; an unknown id answers it too.
    assert await client.delete_database("db_nope") is False


async def test_bad_seed_raises_http_error(client: GymClient) -> None:
    with pytest.raises(GymHTTPError) as caught:
        await client.seed_database("CREATE TABLE")
    assert caught.value.status == 400
    assert "Failed to seed" in caught.value.detail


async def test_missing_database_id_is_an_error_result(client: GymClient) -> None:
    result = await client.call_tool("add_note", {"body": "b"}, database_id=None)
    assert result.is_error
    assert "x-database-id" in result.text


async def test_tool_dropped_after_running_is_not_re_run(
    local_gym: LocalGym, client: GymClient
) -> None:
    database_id = await client.seed_database(SEED)
    local_gym.drop_next(after_tool_call=True)
    with pytest.raises(GymProtocolError):
        await client.call_tool("add_note", {"body": "once"}, database_id=database_id)
    assert local_gym.tool_executions["add_note"] == 1
    assert local_gym.query(database_id, "SELECT COUNT(*) AS n FROM notes WHERE body = 'once'") == [
        {"n": 1}
    ]


async def test_expired_sessions_are_renewed(local_gym: LocalGym, client: GymClient) -> None:
    database_id = await client.seed_database(SEED)
    await client.call_tool("add_note", {"body": "1"}, database_id=database_id)
    assert local_gym.expire_sessions() == 1
    await client.call_tool("add_note", {"body": "2"}, database_id=database_id)
    assert local_gym.tool_executions["add_note"] == 2
    assert [client.mcp_session_id] == local_gym.session_ids()


async def test_http_sql_runner_routes_by_gym_name(client: GymClient) -> None:
    database_id = await client.seed_database(SEED)
    runner = HttpSqlRunner({"local": client})
    outcome = await runner.run_sql("local", database_id, "SELECT body FROM notes", {})
    assert SqlOutcome.ok(
        {"data": [{"body": "a"}], "query": "SELECT body FROM notes LIMIT 100"}
    ) == (outcome)
    missing = await runner.run_sql("other", database_id, "SELECT 1", {})
    assert (missing.success, missing.error_kind) == (False, "transport")
    assert "'other'" in str(missing.error)


async def test_sql_runner_sends_the_database_header() -> None:
    async with running(FakeGym()) as fake, GymClient(fake.url) as client:
        await client.run_sql("SELECT 1", database_id="db_h", context={"user_email": "u"})
        outcome = await client.run_sql("crash", database_id="db_h")
    assert fake.sql_seen == [("SELECT 1", "db_h", "db_h"), ("crash", "db_h", "db_h")]
    assert (
        SqlOutcome.failed(
            "SQL API call failed (HTTP 500): Internal Server Error", kind="database", status=500
        )
        == outcome
    )


async def test_delete_unsupported_is_false() -> None:
    async with running(FakeGym(delete_supported=False)) as fake, GymClient(fake.url) as client:
        assert await client.delete_database("db_x") is False


async def test_delete_refused_raises() -> None:
    async with running(FakeGym()) as fake, GymClient(fake.url) as client:
        with pytest.raises(GymHTTPError) as caught:
            await client.delete_database("db_x")
    assert (caught.value.status, caught.value.detail) == (400, "unknown database")


async def test_a_request_on_a_closed_pool_is_a_closed_error(local_gym: LocalGym) -> None:
    pool = lease_pool()
    transport = AiohttpTransport.on_pool(pool)
    await pool.session.close()  # closed under the transport (aiohttp raises RuntimeError)
    client = GymClient(local_gym.url, transport=transport)
    try:
        with pytest.raises(ClosedError, match="connection pool was closed"):
            await client.health()
    finally:
        await client.aclose()
        await release_pool(pool)


async def test_the_transport_s_aiohttp_session_is_http_session_and_the_old_name_warns() -> None:
    from eog_core.gym import AiohttpTransport

    transport = AiohttpTransport()
    assert transport.http_session is None  # before first use
    with pytest.warns(DeprecationWarning, match="http_session"):
        assert transport.session is None
