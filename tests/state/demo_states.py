"""Before/after states of scripted rollouts on the demo task, exported with plain SQLite.

A rollout runs the demo task's tools through a real ``TaskSession`` on ``LocalGym.demo()``;
its databases are read straight from the gym's SQLite connections (``LocalGym.query``) into
the ``eog-state/1`` document, so these tests do not depend on the capture code.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from typing import Any

import attrs

from eog_core import load_task
from eog_core.gym import GymDirectory, TaskSession
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory

PATHS = demo_paths()


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    return value


def export(gym: LocalGym, databases: dict[str, str]) -> dict[str, Any]:
    """``{gym: database_id}`` as an eog-state/1 document, rows ordered by primary key."""
    gyms: dict[str, Any] = {}
    for gym_name, database_id in databases.items():
        tables: dict[str, Any] = {}
        names = gym.query(
            database_id,
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )
        for (name,) in (tuple(row.values()) for row in names):
            info = gym.query(database_id, f"PRAGMA table_info({quoted(name)})")
            columns = [row["name"] for row in info]
            key = [row["name"] for row in sorted(info, key=lambda r: r["pk"]) if row["pk"]]
            order = ", ".join(quoted(c) for c in key) or "rowid"
            rows = gym.query(database_id, f"SELECT * FROM {quoted(name)} ORDER BY {order}")
            tables[name] = {
                "columns": columns,
                "primary_key": key,
                "rows": [{c: cell(v) for c, v in row.items()} for row in rows],
            }
        gyms[gym_name] = {"database_id": database_id, "tables": tables}
    return {"format": "eog-state/1", "gyms": gyms}


@attrs.frozen
class Rollout:
    before: dict[str, Any]
    after: dict[str, Any]
    strict_success: bool


def step(name: str) -> dict[str, Any]:
    """The demo trajectory's call of tool ``name``."""
    return next(s for s in load_demo_trajectory() if s["name"] == name)


async def play(calls: Sequence[dict[str, Any]], *, final_response: str) -> Rollout:
    """Seed the demo task, export, make ``calls``, export again, verify (strict)."""
    task = load_task(PATHS.task)
    async with (
        LocalGym.demo() as gym,
        GymDirectory({gym.name: gym.url}) as directory,
        TaskSession.start(task, directory=directory, seed_root=PATHS.directory) as session,
    ):
        databases = dict(session.database_ids)
        before = export(gym, databases)
        for call in calls:
            result = await session.call_tool(call["name"], call["arguments"])
            assert not result.is_error, (call, result)
        after = export(gym, databases)
        verdict = await session.verify(final_response=final_response)
    return Rollout(before=before, after=after, strict_success=verdict.success)
