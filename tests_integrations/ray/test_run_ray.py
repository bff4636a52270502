"""``eog-core run --ray local``: rollouts sharded over Ray actors give the same output as a
local run. The gym and the scripted model run in the test's event loop; each command runs
in its own process (the sharded one starts its own local Ray instance)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.run.scripted_model import ScriptedModel
from tests.run.test_run_cli import command, finish, records, spawn

from eog_core.local import LocalGym
from eog_core.run import ROLLOUTS_FILE, UPSTREAM_DIR

#: What a rollout's record says about the rollout (clocks, ids and latencies vary by run).
_OUTCOME = (
    "task_id",
    "domain",
    "mode",
    "repeat",
    "status",
    "success",
    "reward",
    "num_passed",
    "num_scored",
    "failure_kind",
    "stop_reason",
    "final_answer",
    "tools_used",
    "num_turns",
    "num_tool_calls",
    "model",
)


def _outcome(record: dict[str, Any]) -> dict[str, Any]:
    parity = record["parity"]
    return {k: record.get(k) for k in _OUTCOME} | {
        "parity": {k: parity.get(k) for k in ("success", "reward", "num_passed")},
        "verifiers": [(r.get("name"), r.get("passed")) for r in record.get("results") or ()],
    }


def _upstream(out: Path) -> dict[str, Any]:
    """Each upstream result file's name and what compute_score.py reads of it."""
    root = out / UPSTREAM_DIR
    files = {str(p.relative_to(root)): json.loads(p.read_text()) for p in root.rglob("*.json")}
    return {
        name: (
            [(run["overall_success"], run["verification_results"]) for run in data["runs"]],
            {k: v for k, v in data["statistics"].items() if "time" not in k},
        )
        for name, data in sorted(files.items())
    }


async def test_sharded_run_matches_a_local_run(tmp_path: Path) -> None:
    async with LocalGym.demo() as gym, ScriptedModel() as model:
        code, _, err = await finish(
            await spawn(command(gym, model, tmp_path / "local", "--repeats", "3"))
        )
        assert code == 0, err
        code, _, err = await finish(
            await spawn(
                command(
                    gym,
                    model,
                    tmp_path / "ray",
                    "--repeats",
                    "3",
                    "--ray",
                    "local",
                    "--ray-actors",
                    "2",
                )
            )
        )
        assert code == 0, err
        assert "sharding 3 rollouts over 2 Ray actors" in err
        assert gym.database_ids() == []

    local, sharded = records(tmp_path / "local"), records(tmp_path / "ray")

    def by_repeat(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(map(_outcome, rows), key=lambda r: r["repeat"])

    assert by_repeat(sharded) == by_repeat(local)
    assert all(r["success"] is True for r in sharded) and len(sharded) == 3
    assert _upstream(tmp_path / "ray") == _upstream(tmp_path / "local") != {}
    assert (tmp_path / "ray" / ROLLOUTS_FILE).read_text().endswith("\n")


async def test_sharded_run_resumes_and_the_wrong_trajectory_scores_zero(tmp_path: Path) -> None:
    async with LocalGym.demo() as gym, ScriptedModel() as model:
        argv = command(
            gym, model, tmp_path / "out", "--ray", "local", "--ray-actors", "2", name="demo-wrong"
        )
        code, _, err = await finish(await spawn(argv))
        assert code == 0, err
        first = records(tmp_path / "out")
        code, _, err = await finish(await spawn([*argv, "--repeats", "2"]))
        assert code == 0, err
        assert gym.database_ids() == []
    both = records(tmp_path / "out")
    assert both[0] == first[0] and [r["repeat"] for r in both] == [0, 1]
    assert [r["success"] for r in both] == [False, False]
    assert all(r["reward"] == 0.0 and r["parity"]["reward"] == 0.0 for r in both)
