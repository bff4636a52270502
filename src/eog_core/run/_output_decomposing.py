"""A ``decomposing`` rollout in upstream's result format: the ``conversation_flow`` and the
``orchestration_metadata`` and ``usage`` that upstream's ``DecomposingPlannerOrchestrator``
adds to a run (``get_result_metadata``), rebuilt from our record."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from eog_core.tasks import Task

__all__ = ["decomposing_flow", "decomposing_metadata"]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _sub_agent_flow(record: Mapping[str, Any], role: str) -> list[dict[str, Any]]:
    """A sub-agent's answers and tool results as upstream's ``raw_conversation`` (its memory
    question is not in it); ``role``: ``sub-agent N`` (subtask ids need not be unique)."""
    flow: list[dict[str, Any]] = []
    for turn in record.get("turns") or ():
        if turn.get("role") != role or turn.get("memory_extraction"):
            continue
        calls = turn["tool_calls"]
        flow.append(
            {
                "type": "ai_message",
                "content": turn["text"],
                "tool_calls": [{"name": c["name"], "args": _value(c["arguments"])} for c in calls],
            }
        )
        flow.extend(
            {
                "type": "tool_result",
                "tool_name": c["name"],
                "arguments": _value(c["arguments"]),
                "result": {"success": True, "result": _value(c["observation"]), "error": None},
            }
            for c in calls
        )
    return flow


def _results(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    decomposition = record.get("decomposition") or {}
    by_role = record.get("usage_by_role") or {}
    results = []
    for index, result in enumerate(decomposition.get("results") or (), start=1):
        flow = _sub_agent_flow(record, f"sub-agent {index}")
        usage = by_role.get(f"sub-agent {index}") or {}
        results.append(
            {
                "subtask_id": result["subtask_id"],
                "title": result["title"],
                "success": result["success"],
                "summary": result["summary"],
                "structured_output": result["memory"],
                "tools_used": result["tools_used"],
                "conversation_length": len(flow),
                "raw_conversation": flow,
                "error": result["error"],
                "usage": {
                    "input_tokens": usage.get("input_tokens", 0),
                    "output_tokens": usage.get("output_tokens", 0),
                },
            }
        )
    return results


def decomposing_flow(task: Task, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Upstream's ``_build_conversation_flow``: the prompts, the plan, each subtask's flow."""
    decomposition = record.get("decomposition") or {}
    flow: list[dict[str, Any]] = [
        {"type": "system_message", "content": task.system_prompt or ""},
        {"type": "user_message", "content": task.user_prompt or ""},
        {
            "type": "meta_agent_plan",
            "plan": record.get("plan") or "",
            "subtasks": list(decomposition.get("subtasks") or ()),
        },
    ]
    for result in _results(record):
        flow.append(
            {"type": "subtask_start", "subtask_id": result["subtask_id"], "title": result["title"]}
        )
        flow.extend(result["raw_conversation"])
        flow.append(
            {
                "type": "subtask_complete",
                "subtask_id": result["subtask_id"],
                "summary": result["summary"],
                "success": result["success"],
            }
        )
    return flow


def decomposing_metadata(record: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's ``get_result_metadata``: ``orchestration_metadata`` and ``usage``."""
    decomposition = record.get("decomposition") or {}
    results = _results(record)
    planner = (record.get("usage_by_role") or {}).get("planner") or {}
    planner_usage = {k: planner.get(k, 0) for k in ("input_tokens", "output_tokens")}
    subtasks = {f"subtask_{r['subtask_id']}": r["usage"] for r in results}
    total_in = planner_usage["input_tokens"] + sum(u["input_tokens"] for u in subtasks.values())
    total_out = planner_usage["output_tokens"] + sum(u["output_tokens"] for u in subtasks.values())
    return {
        "orchestration_metadata": {
            "strategic_plan": record.get("plan") or "",
            "num_subtasks": len(decomposition.get("subtasks") or ()),
            "subtask_details": list(decomposition.get("subtasks") or ()),
            "subtask_results": results,
            "overall_success": all(r["success"] for r in results),
            "total_iterations": sum(r["conversation_length"] for r in results),
            "working_memory": decomposition.get("working_memory") or {},
        },
        "usage": {
            "total": {
                "input_tokens": total_in,
                "output_tokens": total_out,
                "total_tokens": total_in + total_out,
            },
            "breakdown": {
                "planner": planner_usage,
                "meta_agent": {"input_tokens": 0, "output_tokens": 0},
                "subtasks": subtasks,
            },
        },
    }
