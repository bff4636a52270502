"""A part of ``eog-core score``'s output beside the rates: for ``planner_react`` and
``decomposing`` runs the planner's share (plans, tokens per role; the subtasks and how many
succeeded) and each plan.

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
    """Tokens of ``role``'s answers; ``sub-agents``: of every ``sub-agent N``."""
    total = {"input_tokens": 0, "output_tokens": 0}
    for record in records:
        by_role = record.get("usage_by_role") or {}
        for name, usage in by_role.items() if isinstance(by_role, Mapping) else ():
            if name != role and not (role == "sub-agents" and name.startswith("sub-agent ")):
                continue
            for key in total:
                value = usage.get(key) if isinstance(usage, Mapping) else None
                total[key] += value if isinstance(value, int) else 0
    return total


def _subtasks(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    results = [
        result
        for record in records
        for result in ((record.get("decomposition") or {}).get("results") or ())
        if isinstance(result, Mapping)
    ]
    return {"run": len(results), "succeeded": sum(r.get("success") is True for r in results)}


def planner_json(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "rollouts": len(records),
        "no_plan": sum(r.get("stop_reason") == "no_plan" for r in records),
        "bad_decomposition": sum(r.get("stop_reason") == "bad_decomposition" for r in records),
        "subtasks": _subtasks(records),
        "tokens": {role: _tokens(records, role) for role in ("planner", "executor", "sub-agents")},
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
    tokens = summary["tokens"]
    lines = [f"== Orchestrator: {', '.join(names)} =="]
    shares = ["planner", "executor"] if "planner_react" in names else ["planner"]
    if "decomposing" in names:
        subtasks = summary["subtasks"]
        lines.append(
            f"rollouts decomposed: {summary['rollouts']:,} "
            f"(no decomposition: {summary['bad_decomposition']:,}); subtasks run: "
            f"{subtasks['run']:,}, succeeded: {subtasks['succeeded']:,}"
        )
        shares.append("sub-agents")
    if "planner_react" in names:
        lines.insert(
            1, f"rollouts planned: {summary['rollouts']:,} (no plan: {summary['no_plan']:,})"
        )
    lines.append(
        "tokens: "
        + "; ".join(
            f"{role} {tokens[role]['input_tokens']:,} in / {tokens[role]['output_tokens']:,} out"
            for role in shares
        )
    )
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
