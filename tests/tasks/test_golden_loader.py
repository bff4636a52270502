"""Task files against upstream's own ``load_config``: what it accepts we accept, and what we write it reads.

``tests/golden/task_loader.json`` was made by tests/golden/generators/gen_task_loader.py
(real tasks with prose withheld, their mutations, synthetic ones). Where we differ
on purpose the case is listed here with the reason docs/parity.md gives.
``EOG_TASK_LOADER_GOLDEN_FILE`` names another file of the same format.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eog_core import load_task
from eog_core.errors import SchemaError
from eog_core.tasks import to_upstream

GOLDEN = Path(
    os.environ.get("EOG_TASK_LOADER_GOLDEN_FILE")
    or Path(__file__).parent.parent / "golden" / "task_loader.json"
)
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]
#: Upstream refuses, we load: dataset rows carry task_id/domain/mode; a missing
#: system prompt reads as "" (and is written back, as upstream requires it); a task
#: with no gym settings at all (built for checks that need no database), a legacy
#: single-gym task without database_id (each run creates its database anyway).
WE_ACCEPT = {"row_keys", "missing_system_prompt", "no_gyms_at_all", "legacy_without_database_id"}
#: Upstream loads, we refuse: two gyms of one name (upstream mixes their settings),
#: null verifiers (every upstream run of it fails).
WE_REFUSE = {"dup_gym", "verifiers_null"}


def test_golden_file_is_complete() -> None:
    assert len(CASES) >= 500 or "EOG_TASK_LOADER_GOLDEN_FILE" in os.environ
    assert {c["origin"] for c in CASES} == {
        "real",
        "synthetic",
    } or "EOG_TASK_LOADER_GOLDEN_FILE" in os.environ


@pytest.mark.parametrize("index", range(len(CASES)))
def test_load_config_verdicts_and_written_files(index: int) -> None:
    case = CASES[index]
    mutation, upstream = case["mutation"], case["upstream"]
    try:
        task = load_task(case["task"])
    except SchemaError:
        assert not upstream["accepted"] or mutation in WE_REFUSE, upstream
        return
    assert upstream["accepted"] or mutation in WE_ACCEPT, upstream["error"]
    assert mutation not in WE_REFUSE
    written = to_upstream(task)
    expected = case["task"] if case["written"] is None else case["written"]
    if mutation == "missing_system_prompt":
        expected = {"system_prompt": ""} | expected
    elif mutation not in ("no_gyms_at_all", "legacy_without_database_id"):
        assert case["written_upstream"]["accepted"], case["written_upstream"]
        if upstream["accepted"]:  # what we write is the config upstream built from the source
            assert case["written_upstream"]["config_sha256"] == upstream["config_sha256"]
    assert json.dumps(written) == json.dumps(expected)
