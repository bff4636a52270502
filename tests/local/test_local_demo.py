"""The demo domain: seed, tools, task file, and the trajectory that passes every verifier."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import aiohttp
import pytest

from eog_core.local import (
    DEMO_SERVER_NAME,
    LocalGym,
    demo_paths,
    load_demo_task,
    load_demo_trajectory,
    read_demo_seed,
)

DB = "db_demo"


def extract(body: dict[str, Any]) -> Any:
    """Upstream's reading of a sql-runner answer: one cell, one row, or every row."""
    data = body["data"]
    if not isinstance(data, list) or not data:
        return data
    if len(data) == 1:
        row = data[0]
        return next(iter(row.values())) if len(row) == 1 else row
    return data


async def verifier_outcomes(gym: LocalGym, http: aiohttp.ClientSession) -> list[tuple[str, bool]]:
    outcomes = []
    for verifier in load_demo_task()["verifiers"]:
        config = verifier["validation_config"]
        body = {"query": config["query"], "database_id": DB}
        async with http.post(
            f"{gym.url}/api/sql-runner", json=body, headers={"x-database-id": DB}
        ) as response:
            assert response.status == 200, await response.text()
            actual = extract(await response.json())
        assert config["comparison_type"] == "equals"
        outcomes.append((verifier["name"], actual == config["expected_value"]))
    return outcomes


@pytest.fixture
async def demo_gym(http: aiohttp.ClientSession) -> Any:
    async with LocalGym.demo() as gym:
        body = {
            "database_id": DB,
            "name": "demo",
            "description": "demo",
            "sql_content": read_demo_seed(),
        }
        async with http.post(f"{gym.url}/api/seed-database", json=body) as response:
            assert response.status == 200
        yield gym


def context_headers() -> dict[str, str]:
    (config,) = load_demo_task()["gym_servers_config"]
    return {"x-database-id": DB, **config["context"]}


def test_demo_files_are_package_data() -> None:
    paths = demo_paths()
    for path in (paths.seed_sql, paths.task, paths.trajectory):
        assert path.is_file()
        assert path.parent == paths.directory
    assert paths.seed_sql.read_text(encoding="utf-8") == read_demo_seed()
    assert json.loads(paths.task.read_text(encoding="utf-8")) == load_demo_task()


def test_demo_task_shape() -> None:
    task = load_demo_task()
    assert set(task) == {  # the upstream task keys plus the dataset row's id, domain and mode
        "task_id",
        "domain",
        "mode",
        "system_prompt",
        "user_prompt",
        "gym_servers_config",
        "selected_tools",
        "restricted_tools",
        "verifiers",
        "mcp_endpoint",
        "number_of_runs",
        "reset_database_between_runs",
    }
    assert (task["mcp_endpoint"], task["number_of_runs"], task["reset_database_between_runs"]) == (
        "/mcp",
        1,
        True,
    )
    (gym_config,) = task["gym_servers_config"]
    assert gym_config["mcp_server_name"] == DEMO_SERVER_NAME
    assert gym_config["mcp_server_url"] == "http://localhost:8101"
    assert gym_config["seed_database_file"] == "seed.sql"
    assert set(gym_config["context"]) == {"x-user-email"}
    verifiers = task["verifiers"]
    assert 4 <= len(verifiers) <= 6
    assert {v["verifier_type"] for v in verifiers} == {"database_state"}
    assert {v["gym_name"] for v in verifiers} == {DEMO_SERVER_NAME}
    names = Counter(v["name"] for v in verifiers)
    assert [name for name, count in names.items() if count > 1] == ["telemetry_case_opened"]
    assert sum("COUNT(*)" in v["validation_config"]["query"] for v in verifiers) == 1
    tool_names = set(LocalGym.demo().tools.names())
    assert set(task["selected_tools"]) <= tool_names
    assert {call["name"] for call in load_demo_trajectory()} <= set(task["selected_tools"])


async def test_demo_tools_are_listed(demo_gym: LocalGym, mcp: Any) -> None:
    client = mcp(demo_gym)
    result = await client.initialize()
    assert result["serverInfo"]["name"] == "demo-csm-server"
    tools = (await client.rpc("tools/list"))["result"]["tools"]
    assert 6 <= len(tools) <= 10
    for tool in tools:
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"


async def test_fresh_database_fails_the_verifiers(
    demo_gym: LocalGym, http: aiohttp.ClientSession
) -> None:
    outcomes = await verifier_outcomes(demo_gym, http)
    assert not any(passed for _, passed in outcomes), outcomes


async def test_trajectory_passes_every_verifier(
    demo_gym: LocalGym, mcp: Any, http: aiohttp.ClientSession
) -> None:
    client = mcp(demo_gym)
    await client.initialize("2024-11-05")
    for call in load_demo_trajectory():
        result = await client.call_tool(call["name"], call["arguments"], **context_headers())
        assert result["isError"] is False, (call, result)
    outcomes = await verifier_outcomes(demo_gym, http)
    assert all(passed for _, passed in outcomes), outcomes
    assert demo_gym.tool_executions == Counter(call["name"] for call in load_demo_trajectory())


async def test_demo_business_rules(demo_gym: LocalGym, mcp: Any) -> None:
    client = mcp(demo_gym)
    await client.initialize()
    headers = context_headers()
    # The telemetry entitlement is expired until renewed.
    result = await client.call_tool(
        "create_case",
        {"account_id": "acc_001", "short_description": "x", "entitlement_id": "ent_002"},
        **headers,
    )
    assert result["isError"] is True
    assert "ent_002 is expired" in result["content"][0]["text"]
    # Another account's entitlement is refused.
    result = await client.call_tool(
        "create_case",
        {"account_id": "acc_001", "short_description": "x", "entitlement_id": "ent_006"},
        **headers,
    )
    assert result["isError"] is True
    # Resolving needs close notes.
    result = await client.call_tool(
        "update_case", {"case_id": "case_003", "state": "resolved"}, **headers
    )
    assert result["isError"] is True
    assert "close_notes" in result["content"][0]["text"]
    # Bad dates and unknown enum values.
    result = await client.call_tool(
        "update_entitlement", {"entitlement_id": "ent_002", "end_date": "next year"}, **headers
    )
    assert result["isError"] is True
    result = await client.call_tool(
        "update_entitlement", {"entitlement_id": "ent_002", "status": "gold"}, **headers
    )
    assert result["isError"] is True
    assert demo_gym.query(DB, "SELECT status FROM entitlement WHERE sys_id = 'ent_002'") == [
        {"status": "expired"}
    ]


async def test_demo_reads(demo_gym: LocalGym, mcp: Any) -> None:
    client = mcp(demo_gym)
    await client.initialize()
    headers = context_headers()
    accounts = (await client.call_tool("find_account", {"name": "harbor"}, **headers))[
        "structuredContent"
    ]
    assert [a["sys_id"] for a in accounts["accounts"]] == ["acc_001"]
    products = (await client.call_tool("find_product", {"query": "EGW-300"}, **headers))[
        "structuredContent"
    ]
    assert [p["name"] for p in products["products"]] == ["Edge Gateway"]
    case = (await client.call_tool("get_case", {"case_id": "CS0001003"}, **headers))[
        "structuredContent"
    ]
    assert case["sys_id"] == "case_003"
    assert len(case["comments"]) == 2
    cases = (await client.call_tool("list_cases", {"state": "closed"}, **headers))[
        "structuredContent"
    ]
    assert [c["number"] for c in cases["cases"]] == ["CS0001006"]
    result = await client.call_tool("find_account", {}, **headers)
    assert result["isError"] is True


async def test_comment_author_is_the_acting_user(demo_gym: LocalGym, mcp: Any) -> None:
    client = mcp(demo_gym)
    await client.initialize()
    result = await client.call_tool(
        "add_case_comment",
        {"case_id": "case_002", "body": "Checking in."},
        **{"x-database-id": DB, "x-user-email": "sam@ourdesk.example"},
    )
    assert result["structuredContent"]["author"] == "sam@ourdesk.example"
    assert result["structuredContent"]["sys_id"] == "cmt_004"
