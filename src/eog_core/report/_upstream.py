"""Transcripts of upstream result files: ``runs[i].conversation_flow`` in the viewer's shape.

Upstream records each model message (``ai_message`` with its ``tool_calls``)
followed by one ``tool_result`` per call, in order, and the verdict of its own
engine (parity) as ``verification_results``. There are no latencies; a call
whose ``result.success`` is false shows as an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eog_core.metrics import RunRecord
from eog_core.report._fastjson import loads
from eog_core.report._transcript import _call, _short, turn_usage

__all__ = ["UpstreamFiles"]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _observation(result: Any) -> tuple[str, bool]:
    if not isinstance(result, Mapping):
        return _text(result), False
    if result.get("success") is False:
        return _text(result.get("error")), True
    return _text(result.get("result")), False


def _turns(flow: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    turns: list[dict[str, Any]] = []
    prompts: dict[str, str | None] = {"system_prompt": None, "user_prompt": None}
    pending: list[dict[str, Any]] = []
    for item in flow:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in ("system_message", "user_message"):  # the task's prompts: shown whole
            content = item.get("content")
            prompts["system_prompt" if kind == "system_message" else "user_prompt"] = (
                content if isinstance(content, str) else _short(content)
            )
        elif kind == "ai_message":
            raw_calls = item.get("tool_calls")
            calls = raw_calls if isinstance(raw_calls, list) else []
            pending = [
                _call({"name": c.get("name"), "arguments": _text(c.get("args"))})
                for c in calls
                if isinstance(c, Mapping)
            ]
            metadata = item.get("response_metadata")
            turns.append(
                {
                    "turn": len(turns) + 1,
                    "text": _short(item.get("content")),
                    "reasoning": None,
                    "finish_reason": _short(metadata.get("finish_reason"))
                    if isinstance(metadata, Mapping)
                    else None,
                    "model_latency_ms": None,
                    "usage": turn_usage(item.get("usage_metadata")),
                    "tool_calls": pending,
                }
            )
            pending = list(pending)
        elif kind == "tool_result" and pending:
            call = pending.pop(0)
            observation, call["is_error"] = _observation(item.get("result"))
            call["observation"] = _short(observation)
            call["gym"] = _short(item.get("gym_server")) or "?"
    return turns, prompts


def upstream_detail(run: Mapping[str, Any]) -> dict[str, Any]:
    """One upstream run as the transcript viewer's detail (parity verdict only)."""
    flow = run.get("conversation_flow")
    turns, prompts = _turns(flow if isinstance(flow, list) else [])
    results = run.get("verification_results")
    verdicts = [
        {
            "name": _short(name),
            "kind": None,
            "gym": None,
            "query": _short(r.get("query")),
            "expected": _short(r.get("expected")),
            "actual": _short(r.get("actual")),
            "comparison_type": _short(r.get("comparison_type")),
            "passed": r.get("passed"),
            "counted": True,
            "error": _short(r.get("error")),
            "details": _short(r.get("details")),
            "failure_kind": None,
        }
        for name, r in (results.items() if isinstance(results, Mapping) else ())
        if isinstance(r, Mapping)
    ]
    summary = run.get("verification_summary")
    return {
        **prompts,
        "turns": turns,
        "final_answer": _short(run.get("model_response")),
        "failure_reason": _short(run.get("error")),
        "context_overflow": None,
        "model": None,
        "started_at": _short(run.get("started_at"))
        if isinstance(run.get("started_at"), str)
        else None,
        "verdicts": {"strict": [], "parity": verdicts},
        "pass_rate": {
            "strict": None,
            "parity": summary.get("pass_rate") if isinstance(summary, Mapping) else None,
        },
    }


class UpstreamFiles:
    """Reads each upstream result file once, for the runs of it the report shows."""

    def __init__(self) -> None:
        self._files: dict[str, Any] = {}

    def detail(self, record: RunRecord) -> dict[str, Any] | None:
        if record.source is None or record.source_index is None:
            return None
        if record.source not in self._files:
            try:
                self._files[record.source] = loads(Path(record.source).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._files[record.source] = None
        data = self._files[record.source]
        runs = data.get("runs") if isinstance(data, Mapping) else None
        if not isinstance(runs, list) or not 0 <= record.source_index < len(runs):
            return None
        run = runs[record.source_index]
        return upstream_detail(run) if isinstance(run, Mapping) else None
