"""The gym's ledger (seeds, deletes, tool executions), its journal, and a gym process killed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eog_core.local import ExecutionKey, GymProcess, Ledger, LocalGym

from .conftest import SCHEMA, McpTestClient


async def test_ledger_counts_what_the_gym_did(
    make_gym: Any, mcp: Any, seed: Any, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    journal = tmp_path / "gym.jsonl"
    gym: LocalGym = await make_gym(journal=journal)
    await seed(gym, "db_1")
    await seed(gym, "db_2")
    client = mcp(gym)
    await client.initialize()
    await client.call_tool("add_item", {"name": "a", "qty": 1}, **{"x-database-id": "db_1"})
    await client.call_tool("add_item", {"qty": 1, "name": "a"}, **{"x-database-id": "db_1"})
    await client.call_tool("add_item", {"name": "b", "qty": 1}, **{"x-database-id": "db_1"})
    await client.call_tool("list_items", **{"x-database-id": "db_unknown"})  # never ran
    async with http.delete(f"{gym.url}/api/delete-database", json={"database_id": "db_2"}) as r:
        assert r.status == 200
    async with http.delete(f"{gym.url}/api/delete-database", json={"database_id": "db_2"}) as r:
        assert r.status == 404

    ledger = gym.ledger
    assert ledger.seeds == {"db_1": 1, "db_2": 1}
    assert ledger.deletes == {"db_2": 1}
    assert ledger.live_databases == ["db_1"]
    assert ledger.tool_executions == 3
    twice = ledger.executed_more_than_once()
    assert list(twice.values()) == [2]  # argument order does not make a call different
    (key,) = twice
    assert (key.database_id, key.tool) == ("db_1", "add_item")

    replayed = Ledger.from_journal(journal)
    assert (replayed.seeds, replayed.deletes, replayed.executions) == (
        ledger.seeds,
        ledger.deletes,
        ledger.executions,
    )
    assert replayed.live_databases == ["db_1"]
    assert replayed.incarnation == 1


def test_journal_replay_survives_a_torn_line_and_counts_incarnations(tmp_path: Path) -> None:
    journal = tmp_path / "gym.jsonl"
    journal.write_text(
        '{"event":"start","pid":1}\n'
        '{"event":"seed","database_id":"a"}\n'
        '{"event":"tool","database_id":"a","tool":"t","digest":"d"}\n'
        '{"event":"start","pid":2}\n'
        '{"event":"seed","database_id":"b"}\n'
        '{"event":"tool","database_id":"a","tool":"t","digest":"d"}\n'
        '{"event":"delete","datab'
    )
    ledger = Ledger.from_journal(journal)
    assert ledger.incarnation == 2
    assert ledger.live_databases == ["b"]  # "a" died with the first process
    assert ledger.executed_more_than_once() == {ExecutionKey("a", "t", "d"): 2}


async def test_gym_process_killed_and_restarted_on_its_port(tmp_path: Path) -> None:
    journal = tmp_path / "gym.jsonl"
    async with GymProcess(domain="demo", journal=journal, log=tmp_path / "gym.log") as gym:
        url = gym.url
        assert (await gym.health() or {}).get("name") == "demo-csm-server"
        async with aiohttp.ClientSession() as http:
            body = {"database_id": "db_k", "sql_content": SCHEMA}
            async with http.post(f"{url}/api/seed-database", json=body) as response:
                assert response.status == 200
            client = McpTestClient(http, f"{url}/mcp")
            await client.initialize()
            await client.call_tool("find_account", {"name": "Harbor"}, **{"x-database-id": "db_k"})
            await gym.kill()
            assert not gym.running
            assert await gym.health() is None
            await gym.restart()
            assert gym.url == url and gym.restarts == 1
            health = await gym.health()
            assert health is not None and health["databases"] == 0
            # The old MCP session died with the process.
            status, _, _ = await client.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
            assert status == 404
    assert not gym.running
    ledger = Ledger.from_journal(journal)
    assert ledger.incarnation == 2
    assert ledger.seeds == {"db_k": 1}
    assert ledger.live_databases == []
    assert ledger.tool_executions == 1


async def test_gym_process_that_cannot_serve_says_so(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="exited"):
        async with asyncio.timeout(120):
            await GymProcess(domain="no-such-domain", log=tmp_path / "gym.log").start()
