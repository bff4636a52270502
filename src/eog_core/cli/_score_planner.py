"""A part of ``eog-core score``'s output beside the rates: for ``planner_react`` runs the
planner's share (plans, tokens per role) and each plan.

A run whose records have no ``orchestrator`` (every ``react`` run) prints nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eog_core.metrics import MetricsError, locate_run

__all__ = ["planner_json", "planner_records", "planner_text"]

PLAN_ROWS = 20
"""Plans listed in the text output (``--json`` and ``eog-core report`` have every one)."""
_PLAN_CHARS = 100


def planner_records(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The rollout records of ``paths`` (run folders, ``rollouts.jsonl`` files) that a planner
    orchestrator wrote; lines ``score`` already read and could not use are passed over."""
    found: list[dict[str, Any]] = []
    for path in paths:
        try:
            location = locate_run(path)
        except MetricsError:
            continue
        if location.kind != "rollouts":
            continue
        with open(location.path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if '"orchestrator"' not in line:  # the usual: a react record, not parsed twice
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and record.get("orchestrator"):
                    found.append(record)
    return found


def _tokens(records: Sequence[Mapping[str, Any]], role: str) -> dict[str, int]:
    total = {"input_tokens": 0, "output_tokens": 0}
    for record in records:
        usage = (record.get("usage_by_role") or {}).get(role) or {}
        for key in total:
            value = usage.get(key)
            total[key] += value if isinstance(value, int) else 0
    return total


def planner_json(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "rollouts": len(records),
        "no_plan": sum(r.get("stop_reason") == "no_plan" for r in records),
        "tokens": {role: _tokens(records, role) for role in ("planner", "executor")},
        "plans": [
            {"task_id": r.get("task_id"), "repeat": r.get("repeat"), "plan": r.get("plan")}
            for r in records
        ],
    }


def _one_line(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        return "(no plan)"
    flat = " ".join(text.split())
    return flat if len(flat) <= _PLAN_CHARS else flat[: _PLAN_CHARS - 1] + "…"


def planner_text(records: Sequence[Mapping[str, Any]]) -> str:
    """The planner's part of the text output."""
    summary = planner_json(records)
    names = sorted({str(r.get("orchestrator")) for r in records})
    planner, executor = summary["tokens"]["planner"], summary["tokens"]["executor"]
    lines = [
        f"== Orchestrator: {', '.join(names)} ==",
        f"rollouts planned: {summary['rollouts']:,} (no plan: {summary['no_plan']:,})",
        f"tokens: planner {planner['input_tokens']:,} in / {planner['output_tokens']:,} out; "
        f"executor {executor['input_tokens']:,} in / {executor['output_tokens']:,} out",
    ]
    for record in records[:PLAN_ROWS]:
        lines.append(
            f"  {record.get('task_id')} repeat {record.get('repeat')}: "
            f"{_one_line(record.get('plan'))}"
        )
    if len(records) > PLAN_ROWS:
        lines.append(
            f"  ... {len(records) - PLAN_ROWS:,} more (--json or eog-core report show each plan)"
        )
    return "\n".join(lines)
