"""The shared-task differential's stub gym, through our own gym client: it lists a snapshot's
tools as they are, echoes calls on seeded databases only, and answers the REST routes a run
uses."""

from __future__ import annotations

import json
from pathlib import Path

from eog_core.gym import GymClient
from tests.run.stub_gym import StubGym, echo_text

SNAPSHOT = {
    "gym_name": "stub-test",
    "gym_url": "http://localhost:1",
    "snapshot_at": "2026-01-01T00:00:00Z",
    "tools": [
        {
            "name": "find_thing",
            "title": "Find",
            "description": "Finds a thing.",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            "annotations": {"readOnlyHint": True},
            "meta": None,
        }
    ],
}


async def test_the_stub_gym_serves_its_snapshot_and_echoes_calls(tmp_path: Path) -> None:
    path = tmp_path / "stub.json"
    path.write_text(json.dumps(SNAPSHOT), encoding="utf-8")
    async with StubGym.from_snapshot(path) as gym, GymClient(gym.url, name=gym.name) as client:
        assert gym.name == "stub-test"
        assert await client.list_tools() == SNAPSHOT["tools"]
        unseeded = await client.call_tool("find_thing", {"name": "é"}, database_id="db_none")
        assert unseeded.is_error
        database_id = await client.seed_database("-- not run", database_id="db_1")
        called = await client.call_tool(
            "find_thing", {"name": "é"}, database_id=database_id, context={"user_email": "a@b.c"}
        )
        assert not called.is_error
        assert called.text == echo_text("find_thing", {"name": "é"})
        unknown = await client.call_tool("nope", {}, database_id=database_id)
        assert unknown.is_error
        outcome = await client.run_sql("SELECT 1", database_id=database_id)
        assert outcome.success and outcome.body == {"data": []}
        assert await client.delete_database(database_id)
        assert gym.calls == [
            {
                "name": "find_thing",
                "arguments": {"name": "é"},
                "database": False,
                "user_email": None,
            },
            {
                "name": "find_thing",
                "arguments": {"name": "é"},
                "database": True,
                "user_email": "a@b.c",
            },
            {"name": "nope", "arguments": {}, "database": True, "user_email": None},
        ]
        assert (gym.seeded, gym.databases) == (1, set())
