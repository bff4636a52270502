"""Two real run folders made by ``eog-core run`` (a subprocess) on the demo task, k = 3:
the correct scripted model and a do-nothing one, against LocalGym on loopback.

Shared by ``tests/report`` and the browser tests in ``tests_integrations/report_browser``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from eog_core.local import LocalGym, demo_paths
from tests.run.scripted_model import ScriptedModel

MODELS = {"correct": "demo-correct", "nothing": "demo-answer"}
REPEATS = 3
DEADLINE = 120.0
KEY_VAR = "EOG_TEST_MODEL_KEY"


async def _run(gym: LocalGym, model: ScriptedModel, name: str, out: Path) -> None:
    paths = demo_paths()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eog_core",
        "-q",
        "run",
        str(paths.task),
        "--base-url",
        model.base_url,
        "--model",
        name,
        "--api-key-env",
        KEY_VAR,
        "--gym",
        f"{gym.name}={gym.url}",
        "--seed-root",
        str(paths.directory),
        "--repeats",
        str(REPEATS),
        "--out",
        str(out),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, KEY_VAR: "sk-report-test"},
    )
    _, err = await asyncio.wait_for(process.communicate(), DEADLINE)
    if process.returncode != 0:
        raise AssertionError(f"eog-core run {name} exited {process.returncode}: {err.decode()}")


async def _make(root: Path) -> dict[str, Path]:
    folders = {label: root / label for label in MODELS}
    async with LocalGym.demo() as gym, ScriptedModel() as model:
        for label, name in MODELS.items():
            await _run(gym, model, name, folders[label])
        if gym.database_ids():
            raise AssertionError(f"databases left on the gym: {gym.database_ids()}")
    return folders


def make_run_folders(root: Path) -> dict[str, Path]:
    """``{"correct": DIR, "nothing": DIR}``, each holding ``rollouts.jsonl`` and ``upstream/``.

    The servers run on an event loop of their own thread, so a caller that has a loop
    running (Playwright's sync API does) can call this too."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(asyncio.run, _make(root)).result(timeout=4 * DEADLINE)


BIG_INTEGER = 123456789012345678901234567890
HOSTILE = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def hostile_copy(source: Path, target: Path) -> Path:
    """A copy of a run whose model text is hostile HTML, with record fields of newer writers:
    ``stop_reason: "truncated"``, a new failure kind, per-turn ``token_ids`` / ``logprobs`` and a
    record of replaced surrogates (the report must show them and ignore what it does not know)."""
    records = [json.loads(line) for line in (source / "rollouts.jsonl").read_text().splitlines()]
    records.sort(key=lambda r: r["repeat"])
    first, second, third = records
    first["final_answer"] = HOSTILE
    first["turns"][0]["text"] = HOSTILE
    first["turns"][0]["tool_calls"][0]["observation"] = HOSTILE
    second["stop_reason"] = "truncated"
    second["turns"][0] |= {"token_ids": [1, 2, 3], "logprobs": [-0.1, -0.2, -0.3]}
    second["surrogates_replaced"] = [{"turn": 1, "count": 2}]
    second["results"][0]["actual"] = BIG_INTEGER  # past 64 bits: must stay exact
    for verdict in (third, third["parity"]):
        verdict |= {
            "evaluation_completed": False,
            "success": False,
            "failure_kind": "malformed_tool_call",
        }
    third["status"] = "incomplete"
    target.mkdir(parents=True, exist_ok=True)
    (target / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return target


def read_records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "rollouts.jsonl").read_text().splitlines()]


def write_run(folder: Path, records: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def large_copy(source: Path, target: Path, rollouts: int) -> Path:
    """A run of ``rollouts`` rollouts of the demo task (task ids ``large_0000``...), each tool
    call's observation ``row N xxx...`` of 1.5 kB, so each transcript is about 20 kB."""
    template = read_records(source)[0]
    records = []
    for number in range(rollouts):
        record = copy.deepcopy(template) | {"task_id": f"large_{number:04d}", "repeat": 0}
        for turn in record["turns"]:
            for call in turn["tool_calls"]:
                call["observation"] = f"row {number} " + "x" * 1500
        records.append(record)
    return write_run(target, records)


SUSPEND_OTHER = {  # Quillfeather Analytics' entitlement, no part of the demo task
    "name": "update_entitlement",
    "arguments": {"entitlement_id": "ent_004", "status": "suspended"},
}


async def _damage_fields() -> list[dict[str, Any]]:
    """Real ``damage`` fields (``eog_core.state.damage_verdict`` on states exported from LocalGym):
    the correct trajectory (PASS), the correct one that also suspends another account's
    entitlement (FAIL_DAMAGE, a strict success), and that one without a spec (unjudged)."""
    from eog_core import load_task
    from eog_core.local import FINAL_TEXT, load_demo_trajectory
    from eog_core.state import damage_verdict, load_damage_specs
    from tests.state.demo_states import PATHS, play

    task = load_task(PATHS.task)
    spec = load_damage_specs(DAMAGE_SPECS)[task.task_id]
    clean = await play(load_demo_trajectory(), final_response=FINAL_TEXT)
    wreck = await play([*load_demo_trajectory(), SUSPEND_OTHER], final_response=FINAL_TEXT)
    return [
        damage_verdict(clean.before, clean.after, task=task, spec=spec, strict_success=True),
        damage_verdict(wreck.before, wreck.after, task=task, spec=spec, strict_success=True),
        damage_verdict(wreck.before, wreck.after, task=task, spec=None, strict_success=True),
    ]


DAMAGE_SPECS = Path(__file__).resolve().parents[2] / "examples" / "damage-specs"


def damage_copy(source: Path, target: Path) -> Path:
    """A copy of the correct run (three strict successes) whose records carry ``damage``:
    repeat 0 PASS, repeat 1 FAIL_DAMAGE (succeeds while damaging), repeat 2 unjudged."""
    records = sorted(read_records(source), key=lambda r: r["repeat"])
    with ThreadPoolExecutor(max_workers=1) as worker:
        fields = worker.submit(asyncio.run, _damage_fields()).result(timeout=DEADLINE)
    for record, damage in zip(records, fields, strict=True):
        assert record["success"] is True, record
        record["damage"] = damage
    return write_run(target, records)
