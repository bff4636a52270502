"""Hostile agents: every way out of the rollout is refused with a clear error, nothing leaks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import pytest

import eog_core
from eog_core.errors import UsageError
from eog_core.gateway import Gateway
from eog_core.gym import HttpRequest, HttpResponse, LeanTransport
from eog_core.local import LocalGym, read_demo_seed
from tests.gateway.conftest import Records, make_gateway

ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "6.6.6"},
    },
}


async def open_rollout(http: aiohttp.ClientSession, gateway: Gateway) -> dict[str, Any]:
    async with http.post(f"{gateway.url}/rollouts", json={}) as response:
        assert response.status == 201, await response.text()
        rollout: dict[str, Any] = await response.json()
    return rollout


async def initialize(http: aiohttp.ClientSession, mcp_url: str, **headers: str) -> str:
    async with http.post(mcp_url, json=INIT, headers={**ACCEPT, **headers}) as response:
        assert response.status == 200, await response.text()
        body = await response.json()
        assert body["result"]["protocolVersion"] == "2025-06-18"
        return response.headers["mcp-session-id"]


async def rpc(
    http: aiohttp.ClientSession,
    url: str,
    session_id: str | None,
    message: Any,
    *,
    raw: bytes | None = None,
    **headers: str,
) -> tuple[int, Any]:
    sent = {**ACCEPT, "Content-Type": "application/json", **headers}
    if session_id is not None:
        sent["mcp-session-id"] = session_id
    data = raw if raw is not None else json.dumps(message).encode()
    async with http.post(url, data=data, headers=sent) as response:
        text = await response.text()
        return response.status, json.loads(text) if text else None


def call(name: str, arguments: dict[str, Any], request_id: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def everything_said(gateway_answers: list[Any]) -> str:
    return json.dumps(gateway_answers)


@pytest.mark.parametrize(
    "path",
    [
        "/api/sql-runner",
        "/api/seed-database",
        "/api/delete-database",
        "/health",
        "/mcp",
        "/rollouts/../api/sql-runner",
        "/rollouts/x/api/sql-runner",
        "/rollouts/x/mcp/../../api/sql-runner",
    ],
)
async def test_gym_routes_are_not_reachable(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession, path: str
) -> None:
    rollout = await open_rollout(http, gateway)
    database_id = gym.database_ids()[0]
    body = {"database_id": database_id, "query": "SELECT * FROM cases", "sql_content": "SELECT 1"}
    async with http.post(f"{gateway.url}{path}", json=body) as response:
        assert response.status == 404
        answer = await response.json()
    assert answer["error"]["code"] in {"not_found", "unknown_rollout"}
    assert gym.request_counts.get("/api/sql-runner", 0) == 0
    assert gym.database_ids() == [database_id]
    text = json.dumps(answer) + json.dumps(rollout)
    assert database_id not in text and gym.url not in text and gym.url.rsplit(":", 1)[1] not in text


async def test_nothing_of_the_gym_leaks_in_answers(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    rollout = await open_rollout(http, gateway)
    database_id = gym.database_ids()[0]
    url = rollout["mcp_url"]
    session_id = await initialize(http, url)
    answers = [rollout]
    for message in (
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call("find_account", {"name": "Harbor Lane"}),
        call("find_account", {"name": 7}),
        call("nope", {}),
    ):
        status, body = await rpc(http, url, session_id, message)
        assert status == 200
        answers.append(body)
    async with http.get(f"{gateway.url}/rollouts") as response:
        answers.append(await response.json())
    said = everything_said(answers)
    seed = read_demo_seed()
    assert database_id not in said
    assert gym.url not in said and ":" + gym.url.rsplit(":", 1)[1] not in said
    assert "INSERT INTO" not in said and seed[:60] not in said
    assert "sql-runner" not in said


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("PUT", "/rollouts", 405),
        ("DELETE", "/rollouts", 405),
        ("POST", "/rollouts/", 404),
        ("GET", "/", 404),
        ("POST", "/rollouts/{id}", 405),
        ("GET", "/rollouts/{id}/finish", 405),
        ("POST", "/rollouts/{id}/finish/", 404),
        ("POST", "/rollouts/{id}/verify", 404),
        ("POST", "/rollouts//finish", 404),
        ("POST", "/mcp/", 404),
        ("POST", "/mcp/{key}/", 404),
        ("POST", "/mcp/{key}/x", 404),
        ("PUT", "/mcp/{key}", 405),
        ("PATCH", "/mcp/forged", 405),
        ("GET", "/mcp/{key}", 405),
        ("HEAD", "/mcp/{key}", 405),
        ("POST", "/MCP/{key}", 404),
    ],
)
async def test_only_the_routes_of_the_table_answer(
    gateway: Gateway, http: aiohttp.ClientSession, method: str, path: str, status: int
) -> None:
    rollout = await open_rollout(http, gateway)
    key = rollout["mcp_url"].rsplit("/", 1)[1]
    url = gateway.url + path.format(id=rollout["rollout_id"], key=key)
    async with http.request(method, url, json=INIT) as response:
        assert response.status == status, (method, path)
        if method != "HEAD":
            error = (await response.json())["error"]
            assert error["code"] in {"not_found", "http_error", "method_not_allowed"}, error
    assert [r.rollout_id for r in gateway.rollouts()] == [rollout["rollout_id"]]  # still active
    async with http.head(f"{gateway.url}/rollouts") as response:  # HEAD of a GET route answers
        assert response.status == 200


async def test_expect_100_continue_is_answered(
    gateway: Gateway, http: aiohttp.ClientSession
) -> None:
    """A client that waits for ``100 Continue`` before sending its body (curl does, for a body
    over 1 KiB) gets it; an unknown expectation is refused with 417."""
    timeout = aiohttp.ClientTimeout(total=10)
    async with http.post(
        f"{gateway.url}/rollouts", json={}, expect100=True, timeout=timeout
    ) as response:
        assert response.status == 201
        rollout = await response.json()
    async with http.post(
        rollout["mcp_url"],
        json=INIT,
        expect100=True,
        timeout=timeout,
        headers={"Accept": "application/json, text/event-stream"},
    ) as response:
        assert response.status == 200
        info = (await response.json())["result"]["serverInfo"]
        assert info == {"name": "eog-core-gateway", "version": eog_core.__version__}
    async with http.post(rollout["mcp_url"], json=INIT, headers={"Expect": "teapot"}) as response:
        assert response.status == 417
        assert (await response.json())["error"]["code"] == "http_error"


async def test_forged_rollout_ids_are_refused(
    gateway: Gateway, http: aiohttp.ClientSession
) -> None:
    await open_rollout(http, gateway)
    for path, method in (
        ("/mcp/forged", "POST"),
        ("/rollouts/forged/finish", "POST"),
        ("/rollouts/forged/mcp", "POST"),
        ("/rollouts/forged", "DELETE"),
        ("/rollouts/%2e%2e/mcp", "POST"),
    ):
        async with http.request(method, f"{gateway.url}{path}", json=INIT) as response:
            assert response.status == 404, path
            assert (await response.json())["error"]["code"] in {"unknown_rollout", "not_found"}
    assert len(gateway.rollouts()) == 1


async def test_one_rollouts_session_cannot_touch_another(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    first, second = await open_rollout(http, gateway), await open_rollout(http, gateway)
    first_session = await initialize(http, first["mcp_url"])
    status, body = await rpc(
        http, second["mcp_url"], first_session, call("find_account", {"name": "Harbor Lane"})
    )
    assert status == 404
    assert body["error"]["message"] == "Session not found on this rollout"
    status, body = await rpc(http, second["mcp_url"], None, call("find_account", {"name": "x"}))
    assert status == 400 and "Missing session ID" in body["error"]["message"]
    assert gym.tool_executions == {}
    # each rollout writes to its own database only
    status, body = await rpc(
        http,
        first["mcp_url"],
        first_session,
        call(
            "update_entitlement",
            {"entitlement_id": "ent_002", "status": "active", "end_date": "2027-06-30"},
        ),
    )
    assert status == 200 and body["result"]["isError"] is False
    mine = gateway.rollouts()[0].session.database_ids[gym.name]
    dates = {
        database: gym.query(database, "SELECT end_date FROM entitlement WHERE sys_id = 'ent_002'")[
            0
        ]["end_date"]
        for database in gym.database_ids()
    }
    assert dates.pop(mine) == "2027-06-30"
    assert list(dates.values()) == ["2025-06-30"]
    assert len(gateway.rollouts()[1].calls) == 0


async def test_malformed_and_oversized_json_rpc(
    gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with make_gateway(gym, tmp_path / "out", max_request_bytes=4096) as gateway:
        rollout = await open_rollout(http, gateway)
        url = rollout["mcp_url"]
        session_id = await initialize(http, url)
        cases: list[tuple[bytes | None, Any, int, str]] = [
            (b"{not json", None, 400, "Parse error"),
            (b"\xff\xfe", None, 400, "Parse error"),
            (None, [call("find_account", {"name": "x"})], 400, "batches"),
            (None, {"id": 3, "method": "tools/list"}, 400, "JSON-RPC 2.0"),
            (None, {"jsonrpc": "2.0", "id": 3, "method": 12}, 400, "'method'"),
            (None, {"jsonrpc": "2.0", "id": {"forged": 1}, "method": "ping"}, 400, "'id'"),
            (
                None,
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1]},
                400,
                "params",
            ),
        ]
        for raw, message, status, text in cases:
            got, body = await rpc(http, url, session_id, message, raw=raw)
            assert (got, text in body["error"]["message"]) == (status, True), (raw, message, body)
        got, body = await rpc(
            http, url, session_id, {"jsonrpc": "2.0", "id": 4, "method": "resources/read"}
        )
        assert got == 200 and body["error"]["code"] == -32601
        got, body = await rpc(
            http,
            url,
            session_id,
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": 5}},
        )
        assert got == 200 and body["error"]["code"] == -32602
        got, body = await rpc(http, url, session_id, call("find_account", {"name": "x" * 10_000}))
        assert got == 413 and body["error"]["code"] == "too_large"
        got, body = await rpc(
            http,
            url,
            session_id,
            call("find_account", {"name": "Harbor Lane"}),
            **{"mcp-protocol-version": "1999-01-01"},
        )
        assert got == 400 and "Unsupported protocol version" in body["error"]["message"]
        # arguments that are not an object: answered by the task session, never sent
        got, body = await rpc(http, url, session_id, call("find_account", "not an object"))  # type: ignore[arg-type]
        assert got == 200 and body["result"]["isError"] is True
        assert gym.tool_executions == {}


async def test_requests_after_finish_are_refused(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession, records: Records
) -> None:
    rollout = await open_rollout(http, gateway)
    url = rollout["mcp_url"]
    session_id = await initialize(http, url)
    async with http.post(
        f"{gateway.url}/rollouts/{rollout['rollout_id']}/finish", json={}
    ) as response:
        assert response.status == 200
    status, body = await rpc(http, url, session_id, call("find_account", {"name": "Harbor Lane"}))
    assert status == 410 and body["error"]["code"] == "rollout_finished"
    for method, path in (("POST", "/finish"), ("DELETE", "")):
        async with http.request(
            method, f"{gateway.url}/rollouts/{rollout['rollout_id']}{path}", json={}
        ) as response:
            assert response.status == 410
    assert len(await records.wait_for(1)) == 1
    assert gym.database_ids() == [] and gym.tool_executions == {}


async def test_abandoning_records_incomplete_and_deletes(
    gateway: Gateway, gym: LocalGym, http: aiohttp.ClientSession, records: Records
) -> None:
    rollout = await open_rollout(http, gateway)
    async with http.delete(f"{gateway.url}/rollouts/{rollout['rollout_id']}") as response:
        assert response.status == 200
        record = await response.json()
    assert (record["status"], record["failure_kind"], record["evaluation_completed"]) == (
        "incomplete",
        "abandoned",
        False,
    )
    assert gym.database_ids() == []
    assert await records.wait_for(1) == [record]
    async with http.get(f"{gateway.url}/rollouts") as response:
        listing = await response.json()
    assert listing["rollouts"] == []
    assert listing["ended"] == [
        {
            "rollout_id": rollout["rollout_id"],
            "task_id": rollout["task_id"],
            "repeat": rollout["repeat"],
            "state": "abandoned",
            "status": "incomplete",
            "reward": None,
        }
    ]
    # abandoned work goes back to the queue: the next rollout is that task x repeat again
    again = await open_rollout(http, gateway)
    assert (again["task_id"], again["repeat"]) == (rollout["task_id"], rollout["repeat"])


async def test_idle_rollouts_are_abandoned_after_the_ttl(
    gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    records = Records()
    async with make_gateway(gym, tmp_path / "out", rollout_ttl=0.2, on_record=records) as gateway:
        rollout = await open_rollout(http, gateway)
        [record] = await records.wait_for(1)
        assert record["rollout_id"] == rollout["rollout_id"]
        assert record["failure_kind"] == "abandoned" and "TTL" in record["failure_reason"]
        assert gym.database_ids() == []
        status, body = await rpc(http, rollout["mcp_url"], "x", call("find_account", {}))
        assert status == 410 and body["error"]["code"] == "rollout_abandoned"


async def test_bearer_token(gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession) -> None:
    token = "s3cret-token-0123456789"
    async with make_gateway(gym, tmp_path / "out", token=token) as gateway:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            async with http.post(f"{gateway.url}/rollouts", json={}, headers=headers) as response:
                assert response.status == 401
                assert (await response.json())["error"]["code"] == "unauthorized"
        auth = {"Authorization": f"Bearer {token}"}
        async with http.post(f"{gateway.url}/rollouts", json={}, headers=auth) as response:
            assert response.status == 201
            rollout = await response.json()
        status, _ = await rpc(http, rollout["mcp_url"], None, INIT)
        assert status == 401
        assert await initialize(http, rollout["mcp_url"], **auth)
        assert len(gym.database_ids()) == 1
    assert gym.database_ids() == []


async def test_loopback_only_unless_told_and_foreign_origins(
    gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with pytest.raises(UsageError, match="not a loopback address"):
        await make_gateway(gym, tmp_path / "out", host="0.0.0.0").start()
    assert gym.database_ids() == []
    async with make_gateway(gym, tmp_path / "out") as gateway:
        async with http.post(
            f"{gateway.url}/rollouts", json={}, headers={"Origin": "http://evil.example"}
        ) as response:
            assert response.status == 403
        assert gym.database_ids() == []


async def test_header_injection_in_context_is_refused(
    gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession, demo_task: Any
) -> None:
    import attrs

    gyms = tuple(
        attrs.evolve(g, context={"user_email": "a@b.example\r\nx-database-id: other"})
        for g in demo_task.gym_servers
    )
    task = attrs.evolve(demo_task, gym_servers=gyms)
    async with make_gateway(gym, tmp_path / "out", tasks=[task]) as gateway:
        rollout = await open_rollout(http, gateway)
        session_id = await initialize(http, rollout["mcp_url"])
        status, body = await rpc(
            http,
            rollout["mcp_url"],
            session_id,
            call("find_account", {"name": "Harbor\r\nx-database-id: x"}),
        )
        assert status == 200 and body["result"]["isError"] is True
        assert "cannot be sent" in body["result"]["content"][0]["text"]
        assert gym.tool_executions == {}


async def test_sse_when_the_client_asks(gateway: Gateway, http: aiohttp.ClientSession) -> None:
    rollout = await open_rollout(http, gateway)
    session_id = await initialize(http, rollout["mcp_url"])
    headers = {"Accept": "text/event-stream", "mcp-session-id": session_id}
    async with http.post(
        rollout["mcp_url"], json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers
    ) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        text = await response.text()
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert [json.loads(d) for d in data] == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


async def test_mcp_sessions_per_rollout_are_bounded(
    gateway: Gateway, http: aiohttp.ClientSession
) -> None:
    from eog_core.gateway._mcp import MAX_SESSIONS

    rollout = await open_rollout(http, gateway)
    sessions = [await initialize(http, rollout["mcp_url"]) for _ in range(MAX_SESSIONS)]
    status, body = await rpc(http, rollout["mcp_url"], None, INIT)
    assert status == 400 and "MCP sessions open" in body["error"]["message"]
    async with http.delete(rollout["mcp_url"], headers={"mcp-session-id": sessions[0]}) as response:
        assert response.status == 200
    assert await initialize(http, rollout["mcp_url"])
    status, _ = await rpc(
        http, rollout["mcp_url"], sessions[0], {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    )
    assert status == 404  # the ended session is gone


async def test_finish_tool(gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession) -> None:
    records = Records()
    async with make_gateway(gym, tmp_path / "out", finish_tool=True, on_record=records) as gateway:
        rollout = await open_rollout(http, gateway)
        session_id = await initialize(http, rollout["mcp_url"])
        _, listed = await rpc(
            http,
            rollout["mcp_url"],
            session_id,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        )
        assert listed["result"]["tools"][-1]["name"] == "finish"
        _, body = await rpc(http, rollout["mcp_url"], session_id, call("finish", {"answer": 3}))
        assert body["result"]["isError"] is True and not records.items
        _, body = await rpc(http, rollout["mcp_url"], session_id, call("finish", {"answer": "ok"}))
        assert body["result"]["isError"] is False
        [record] = await records.wait_for(1)
        assert (record["final_answer"], record["status"], record["num_tool_calls"]) == (
            "ok",
            "evaluated",
            0,
        )
        assert gym.database_ids() == []


def test_a_task_tool_called_finish_wins() -> None:
    from eog_core.gateway import FINISH_TOOL, mcp_tools
    from eog_core.tasks import ToolSpec

    own = ToolSpec(name="finish", description="the task's own", input_schema={"type": "object"})
    other = ToolSpec(name="find_account", description="", input_schema={"type": "object"})
    assert [t["description"] for t in mcp_tools((own,), finish=True)] == ["the task's own"]
    assert mcp_tools((other,), finish=True)[-1] == FINISH_TOOL
    assert [t["name"] for t in mcp_tools((other,), finish=False)] == ["find_account"]


async def test_a_gym_failure_is_answered_by_its_kind_only(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    gym = LocalGym.demo()
    await gym.start()
    try:
        gym_url = gym.url
        async with make_gateway(gym, tmp_path / "out") as gateway:
            rollout = await open_rollout(http, gateway)
            session_id = await initialize(http, rollout["mcp_url"])
            await gym.stop()  # the gym goes away mid-rollout
            status, body = await rpc(
                http, rollout["mcp_url"], session_id, call("find_account", {"name": "Harbor Lane"})
            )
            assert status == 200 and body["result"]["isError"] is True
            text = body["result"]["content"][0]["text"]
            assert text == "Error: the gym could not complete the call (gym_unreachable)"
            async with http.post(
                f"{gateway.url}/rollouts/{rollout['rollout_id']}/finish", json={}
            ) as response:
                assert response.status == 200
                record = await response.json()
            assert record["evaluation_completed"] is False
            assert record["failure_kind"] == "gym_unreachable"
            [recorded] = [c for turn in record["turns"] for c in turn["tool_calls"]]
            assert recorded["is_error"] is True and recorded["gym"] == gym.name
            assert gym_url not in json.dumps(body)
    finally:
        await gym.stop()


async def test_a_rollout_id_never_reaches_its_mcp_endpoint(
    gateway: Gateway, http: aiohttp.ClientSession
) -> None:
    mine, other = await open_rollout(http, gateway), await open_rollout(http, gateway)
    async with http.get(f"{gateway.url}/rollouts") as response:
        listing = await response.text()
    other_key = other["mcp_url"].rsplit("/", 1)[1]
    assert other["rollout_id"] in listing and other_key not in listing
    assert other_key != other["rollout_id"]
    for guess in (f"/mcp/{other['rollout_id']}", f"/rollouts/{other['rollout_id']}/mcp"):
        status, _ = await rpc(http, f"{gateway.url}{guess}", None, INIT)
        assert status == 404, guess
    assert await initialize(http, mine["mcp_url"])


async def test_a_control_token_keeps_agents_off_the_control_api(
    gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    agent = {"Authorization": "Bearer agent-token-0123"}
    boss = {"Authorization": "Bearer control-token-4567"}
    async with make_gateway(
        gym, tmp_path / "out", token="agent-token-0123", control_token="control-token-4567"
    ) as gateway:
        async with http.post(f"{gateway.url}/rollouts", json={}, headers=agent) as response:
            assert response.status == 401
        async with http.get(f"{gateway.url}/rollouts", headers=agent) as response:
            assert response.status == 401
        async with http.post(f"{gateway.url}/rollouts", json={}, headers=boss) as response:
            assert response.status == 201
            rollout = await response.json()
        status, _ = await rpc(http, rollout["mcp_url"], None, INIT, **boss)
        assert status == 401
        assert await initialize(http, rollout["mcp_url"], **agent)
        async with http.delete(
            f"{gateway.url}/rollouts/{rollout['rollout_id']}", headers=agent
        ) as response:
            assert response.status == 401
    with pytest.raises(UsageError, match="must differ"):
        await make_gateway(gym, tmp_path / "out", token="same", control_token="same").start()
    assert gym.database_ids() == []


async def test_the_gym_hop_uses_the_gateway_s_transport_or_the_caller_s(
    tmp_path: Path, gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    """By default a LeanTransport of the gateway's own, closed with it; a caller's transport
    is used for every request to the gym and left open."""
    own = make_gateway(gym, tmp_path / "own")
    async with own:
        made = own._own_transport
        assert isinstance(made, LeanTransport)
        rollout = await open_rollout(http, own)
        session_id = await initialize(http, rollout["mcp_url"])
        _, body = await rpc(
            http, rollout["mcp_url"], session_id, call("find_account", {"name": "Harbor Lane"})
        )
        assert body["result"]["isError"] is False
        assert made._idle  # the call's connection waits for the next one
    assert own._own_transport is None and made._closed and not made._idle

    seen: list[str] = []

    @attrs.define
    class Counting:
        inner: LeanTransport = attrs.Factory(LeanTransport)

        async def send(self, request: HttpRequest) -> HttpResponse:
            seen.append(f"{request.method} {request.url.rsplit('/', 1)[-1]}")
            return await self.inner.send(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    theirs = Counting()
    async with make_gateway(gym, tmp_path / "theirs", transport=theirs) as gateway:
        assert gateway._own_transport is None
        rollout = await open_rollout(http, gateway)
        session_id = await initialize(http, rollout["mcp_url"])
        await rpc(http, rollout["mcp_url"], session_id, call("find_account", {"name": "Harbor"}))
        async with http.delete(f"{gateway.url}/rollouts/{rollout['rollout_id']}") as response:
            assert response.status == 200
    assert "POST seed-database" in seen and "POST mcp" in seen and "DELETE delete-database" in seen
    assert not theirs.inner._closed
    assert gym.database_ids() == []
    await theirs.aclose()
