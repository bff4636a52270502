"""The gateway with state capture: the states of a finished rollout beside its record."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from eog_core.local import FINAL_TEXT, LocalGym, load_demo_trajectory
from eog_core.run import ROLLOUTS_FILE, StateCapture
from eog_core.state import load_damage_specs
from tests.gateway.conftest import make_gateway

SPECS = Path(__file__).resolve().parents[2] / "examples" / "damage-specs"


async def test_a_finished_rollout_records_its_before_and_after_states(
    gym: LocalGym, tmp_path: Path
) -> None:
    async with make_gateway(gym, tmp_path, capture_state=StateCapture()) as gateway:
        rollout = await gateway.open_rollout()
        for step in load_demo_trajectory():
            await rollout.session.call_tool(step["name"], step["arguments"])
        record = await gateway.finish(rollout, "done")
    [line] = [json.loads(x) for x in (tmp_path / ROLLOUTS_FILE).read_text().splitlines()]
    assert line["state"] == record["state"] and "_pending_states" not in line
    state = line["state"]
    assert state["before"] != state["after"]
    for key in ("before", "after"):
        data = gzip.decompress((tmp_path / "states" / f"{state[key]}.json.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == state[key]


async def test_the_gateway_s_size_bound_skips_the_capture_not_the_verdict(
    gym: LocalGym, tmp_path: Path
) -> None:
    capture = StateCapture(max_bytes=10)
    async with make_gateway(gym, tmp_path, capture_state=capture) as gateway:
        rollout = await gateway.open_rollout()
        record = await gateway.finish(rollout, "done")
    assert record["status"] == "evaluated"
    assert "past --max-state-bytes 10" in record["state"]["skipped"]
    assert not (tmp_path / "states").exists()


async def test_without_capture_the_gateway_writes_no_state(gym: LocalGym, tmp_path: Path) -> None:
    async with make_gateway(gym, tmp_path) as gateway:
        record = await gateway.finish(await gateway.open_rollout(), "done")
    assert "state" not in record


async def test_the_gateway_records_the_damage_verdict_over_its_spec(
    gym: LocalGym, tmp_path: Path
) -> None:
    """An MCP agent that does the task and suspends another account's entitlement: strict
    success, and the record's damage verdict says FAIL_DAMAGE."""
    specs = load_damage_specs(SPECS)
    capture = StateCapture(damage_specs=specs)
    async with make_gateway(gym, tmp_path, capture_state=capture) as gateway:
        rollout = await gateway.open_rollout()
        for step in load_demo_trajectory():
            await rollout.session.call_tool(step["name"], step["arguments"])
        other = {"entitlement_id": "ent_004", "status": "suspended"}
        await rollout.session.call_tool("update_entitlement", other)
        record = await gateway.finish(rollout, FINAL_TEXT)
    assert record["success"] is True
    assert (record["damage"]["outcome"], record["damage"]["severity"]) == ("FAIL_DAMAGE", "HIGH")
    [line] = [json.loads(x) for x in (tmp_path / ROLLOUTS_FILE).read_text().splitlines()]
    assert line["damage"] == record["damage"]


async def test_a_gateway_that_recorded_nothing_leaves_nothing(
    gym: LocalGym, tmp_path: Path
) -> None:
    """As a run that records nothing: no empty rollouts.jsonl, no folder it made for it;
    a folder that was there, with what it held, stays as it was."""
    async with make_gateway(gym, tmp_path / "new" / "gw"):
        pass
    assert names(tmp_path) == []
    kept = tmp_path / "kept"
    mine(kept)
    async with make_gateway(gym, kept) as gateway:
        await gateway.abandon(await gateway.open_rollout(), "test")  # recorded: it stays
    assert names(kept) == ["notes.txt", ROLLOUTS_FILE]
    mine(kept)
    async with make_gateway(gym, kept):
        pass
    assert names(kept) == ["notes.txt"]


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def mine(folder: Path) -> None:
    """The folder holding only the user's own notes."""
    folder.mkdir(exist_ok=True)
    (folder / ROLLOUTS_FILE).unlink(missing_ok=True)
    (folder / "notes.txt").write_text("mine")
