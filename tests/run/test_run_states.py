"""``run`` with state capture: content-addressed states beside the records (docs/state.md)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from eog_core.cli import main
from eog_core.local import LocalGym, demo_paths
from eog_core.metrics import read_run
from eog_core.report import load_run
from eog_core.run import ROLLOUTS_FILE
from eog_core.state import load_damage_specs
from tests.run.conftest import evaluate
from tests.run.scripted_model import ScriptedModel


def lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / ROLLOUTS_FILE).read_text().splitlines()]


def stored(out: Path) -> dict[str, bytes]:
    folder = out / "states"
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.is_dir() else {}


async def test_a_captured_rollout_names_its_states_and_they_are_stored(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    report = await evaluate(gym, model, tmp_path, capture_state=True)
    [record] = lines(tmp_path)
    assert record == report.records[0]
    assert record["success"] is True and "_pending_states" not in record
    state = record["state"]
    assert set(state) == {"before", "after", "bytes"} and state["before"] != state["after"]
    files = stored(tmp_path)
    assert sorted(files) == sorted(f"{state[k]}.json.gz" for k in ("before", "after"))
    assert state["bytes"] == sum(len(data) for data in files.values())
    for key in ("before", "after"):
        data = gzip.decompress(files[f"{state[key]}.json.gz"])
        assert hashlib.sha256(data).hexdigest() == state[key]  # content-addressed
        assert json.loads(data)["format"] == "eog-state/1"


async def test_equal_states_are_stored_once(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, capture_state=True, repeats=3)
    records = lines(tmp_path)
    assert len({r["state"]["before"] for r in records}) == 1  # a fresh seed is one state
    shas = {r["state"][k] for r in records for k in ("before", "after")}
    assert sorted(stored(tmp_path)) == sorted(f"{sha}.json.gz" for sha in shas)


async def test_no_capture_no_state_field_and_no_folder(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path)
    [record] = lines(tmp_path)
    assert "state" not in record and not (tmp_path / "states").exists()


async def test_past_the_size_bound_the_rollout_keeps_its_verdict_and_says_why(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, capture_state=True, max_state_bytes=100)
    [record] = lines(tmp_path)
    assert record["status"] == "evaluated" and record["success"] is True
    assert record["state"]["skipped"].endswith("past --max-state-bytes 100")
    assert stored(tmp_path) == {}


async def test_a_table_past_max_state_rows_skips_the_capture_not_the_rollout(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, capture_state=True, max_state_rows=1)
    [record] = lines(tmp_path)
    assert record["success"] is True
    assert record["state"]["skipped"].startswith("StateError: gym 'demo-csm-server': ")
    assert "more than 1 rows" in record["state"]["skipped"]


async def test_resume_reruns_a_rollout_whose_state_file_is_gone_and_clears_torn_writes(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, capture_state=True)
    again = await evaluate(gym, model, tmp_path, capture_state=True)
    assert (again.skipped, again.ran) == (1, 0)  # its states are there: kept
    [first] = lines(tmp_path)
    gone = tmp_path / "states" / f"{first['state']['after']}.json.gz"
    gone.unlink()
    torn = tmp_path / "states" / ".partial-abc.tmp"
    torn.write_bytes(b"\x1f\x8b half")
    report = await evaluate(gym, model, tmp_path, capture_state=True)
    assert (report.skipped, report.ran) == (0, 1)  # a record's state file must exist
    assert not torn.exists()
    [record] = lines(tmp_path)  # the rerun's (its after-state may hold a new timestamp)
    assert record["started_at"] != first["started_at"]
    for key in ("before", "after"):
        assert (tmp_path / "states" / f"{record['state'][key]}.json.gz").is_file()


async def test_records_with_states_read_as_before_by_score_and_report(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, capture_state=True)
    [verdict] = read_run(tmp_path)
    assert verdict.success is True
    assert len(load_run(tmp_path).records) == 1


SPECS = Path(__file__).resolve().parents[2] / "examples" / "damage-specs"
SUSPEND_OTHER = {  # another account's entitlement, no part of the task
    "name": "update_entitlement",
    "arguments": {"entitlement_id": "ent_004", "status": "suspended"},
}


async def test_the_damage_verdict_is_recorded_beside_strict_and_parity(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    """The correct trajectory passes; the same plus a wrecked unrelated row is a strict
    success and FAIL_DAMAGE; strict and parity are what they were without capture."""
    correct = model.scripts["demo-correct"]
    model.scripts["demo-damaging"] = [*correct[:-1], [SUSPEND_OTHER], correct[-1]]
    specs = load_damage_specs(SPECS)
    clean, damaging = tmp_path / "clean", tmp_path / "damaging"
    await evaluate(gym, model, clean, capture_state=True, damage_specs=specs)
    await evaluate(
        gym, model, damaging, name="demo-damaging", capture_state=True, damage_specs=specs
    )
    [ok], [wreck] = lines(clean), lines(damaging)
    assert (ok["success"], ok["damage"]["outcome"]) == (True, "PASS")
    assert (wreck["success"], wreck["parity"]["success"]) == (True, ok["parity"]["success"])
    assert (wreck["damage"]["outcome"], wreck["damage"]["severity"]) == ("FAIL_DAMAGE", "HIGH")
    [damage] = [d for d in wreck["damage"]["deltas"] if d["verdict"] == "damage"]
    assert (damage["table"], damage["key"], damage["after"]) == (
        "entitlement",
        {"sys_id": "ent_004"},
        {"status": "suspended"},
    )


async def test_without_a_spec_the_writes_are_recorded_unjudged(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, capture_state=True)
    [record] = lines(tmp_path)
    damage = record["damage"]
    assert (damage["outcome"], damage["severity"], damage["dollars"]) == ("unjudged", None, None)
    assert damage["deltas"] and {d["verdict"] for d in damage["deltas"]} == {"unjudged"}


def test_damage_specs_need_capture_and_a_bad_spec_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["run", str(demo_paths().task), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    base += ["--out", str(tmp_path / "out"), "--no-preflight"]
    assert main([*base, "--damage-specs", str(SPECS)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "eog-core run: error: --damage-specs needs --capture-state (the verdict diffs the states)"
    ]
    broken = tmp_path / "specs" / "demo_csm_fleet_renewal"
    broken.mkdir(parents=True)
    (broken / "damage.json").write_text('{"allowed": [{"table": "case", "opp": "added"}]}')
    assert main([*base, "--capture-state", "--damage-specs", str(tmp_path / "specs")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("eog-core run: error: --damage-specs: ") and "damage.json" in line
    assert not (tmp_path / "out").exists()


async def test_capture_adds_new_fields_only(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    """A captured record is the uncaptured one plus ``state`` and ``damage``: every other
    field has the same value (times and ids aside), so readers of 0.2's records read it."""
    specs = load_damage_specs(SPECS)
    await evaluate(gym, model, tmp_path / "plain")
    await evaluate(gym, model, tmp_path / "captured", capture_state=True, damage_specs=specs)
    [plain], [captured] = lines(tmp_path / "plain"), lines(tmp_path / "captured")
    assert set(captured) - set(plain) == {"state", "damage"} and set(plain) <= set(captured)
    assert untimed(plain) == untimed({k: v for k, v in captured.items() if k in plain})


def untimed(value: Any) -> Any:
    """A record without its clock readings (``*_at``, ``*_ms``, ``*_seconds``) and the
    scripted model's ``input_tokens``, which it counts from the request's length: the tool
    answers in it carry the gym's timestamps, whose printed length varies (a whole second
    prints without its fraction)."""
    if isinstance(value, dict):
        return {
            k: untimed(v)
            for k, v in value.items()
            if not k.endswith(("_at", "_ms", "_seconds")) and k != "input_tokens"
        }
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value
