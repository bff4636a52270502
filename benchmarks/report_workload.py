"""Synthetic but realistic rollout records for the report benchmark (no gym, no model needed).

The shapes follow real ``eog-core run`` records (``docs/run.md``): 2,500 tasks in
8 domains x 4 repeats = 10,000 rollouts; 3-15 turns of 1-2 tool calls with JSON
arguments and JSON observations of 0.1-4 kB (rows of an enterprise table, as the
gyms answer), 4-10 verifiers with SQL queries per verdict in strict and parity,
token usage with cached and reasoning tokens, 2 % incomplete rollouts of several
failure kinds and the stop reasons of a real run. Seeded, so every run of the
benchmark reads the same file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DOMAINS = ("csm", "hr", "itsm", "email", "calendar", "teams", "drive", "hybrid")
TOOLS = (
    "list_records",
    "get_record",
    "create_record",
    "update_record",
    "search",
    "add_comment",
    "assign",
    "close_case",
    "send_message",
    "schedule_meeting",
)
KINDS = ("gym_unreachable", "model_unreachable", "verifier_error", "malformed_tool_call")
STOPS = ("answered",) * 14 + ("max_turns", "context_overflow", "truncated")


def _row(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "sys_id": f"rec_{rng.randrange(10**6):06d}",
        "number": f"CS{rng.randrange(10**7):07d}",
        "state": rng.choice(["new", "in_progress", "resolved", "closed"]),
        "priority": rng.randint(1, 4),
        "short_description": " ".join(
            rng.choice(
                ["printer", "login", "badge", "vpn", "refund", "invoice", "laptop", "access"]
            )
            for _ in range(6)
        ),
        "assigned_to": f"agent{i}@example.com",
        "sys_updated_on": "2026-01-05 12:00:00",
    }


def _call(rng: random.Random, when: str) -> dict[str, Any]:
    rows = [_row(rng, i) for i in range(rng.choice([0, 1, 1, 1, 2, 3, 6]))]
    body = json.dumps({"records": rows})
    observation = json.dumps({"content": [{"type": "text", "text": body}], "isError": False})
    return {
        "call_id": f"call_{rng.randrange(10**9)}",
        "name": rng.choice(TOOLS),
        "arguments": json.dumps(
            {
                "table": "case",
                "query": f"number={rng.randrange(10**7)}",
                "fields": ["state", "priority", "assigned_to"],
            }
        ),
        "started_at": when,
        "latency_ms": round(rng.uniform(2, 400), 3),
        "gym": "sn-csm-server",
        "is_error": rng.random() < 0.03,
        "observation": observation,
    }


def _verdict(rng: random.Random, success: bool, count: int) -> list[dict[str, Any]]:
    results = []
    for index in range(count):
        passed = success or rng.random() < 0.6
        expected = rng.choice(["resolved", 1, "agent3@example.com", "2027-06-30"])
        results.append(
            {
                "index": index,
                "name": f"check_{index}",
                "kind": "database_state",
                "gym": "sn-csm-server",
                "passed": passed,
                "counted": True,
                "expected": expected,
                "actual": expected if passed else "in_progress",
                "comparison_type": "equals",
                "details": "Comparison equals",
                "error": None,
                "failure_kind": None,
                "query": f"SELECT state FROM \"case\" WHERE number = 'CS{rng.randrange(10**7):07d}'",
            }
        )
    return results


def _record(rng: random.Random, task: int, repeat: int, ability: float) -> dict[str, Any]:
    domain = DOMAINS[task % len(DOMAINS)]
    when = "2026-01-05T12:00:00.000+00:00"
    turns = []
    for number in range(1, rng.randint(2, 14) + 1):
        calls = [_call(rng, when) for _ in range(rng.choice([1, 1, 1, 1, 2]))]
        turns.append(
            {
                "turn": number,
                "started_at": when,
                "finished_at": when,
                "model_latency_ms": round(rng.uniform(300, 9000), 3),
                "attempts": 1,
                "usage": {
                    "input_tokens": 2000 * number,
                    "output_tokens": 120,
                    "cached_tokens": 1024,
                    "reasoning_tokens": 64,
                    "total_tokens": 2000 * number + 120,
                },
                "finish_reason": "tool_calls",
                "text": "Let me look that up." if number == 1 else "",
                "reasoning": "The user wants the case resolved; first find it."
                if number < 3
                else None,
                "tool_calls": calls,
            }
        )
    turns.append(
        {
            "turn": len(turns) + 1,
            "started_at": when,
            "finished_at": when,
            "model_latency_ms": 800.0,
            "attempts": 1,
            "usage": {"input_tokens": 30000, "output_tokens": 80, "cached_tokens": 2048},
            "finish_reason": "stop",
            "text": "Done: the case is resolved and the customer told.",
            "reasoning": None,
            "tool_calls": [],
        }
    )
    success = rng.random() < ability
    verifiers = 4 + task % 7
    incomplete = rng.random() < 0.02
    strict = {
        "success": success and not incomplete,
        "pass_rate": 1.0 if success else 0.5,
        "evaluation_completed": not incomplete,
        "failure_kind": rng.choice(KINDS) if incomplete else None,
        "num_defined": verifiers,
        "num_scored": verifiers,
        "results": _verdict(rng, success, verifiers),
    }
    parity = {**strict, "policy": "parity", "results": _verdict(rng, success, verifiers)}
    calls = sum(len(t["tool_calls"]) for t in turns)
    return {
        "format": "eog_core.rollout/1",
        "task_id": f"{domain}_task_{task:05d}",
        "domain": domain,
        "mode": "oracle",
        "repeat": repeat,
        "model": "bench-model",
        "api": "chat",
        "attempts": 1,
        "started_at": when,
        "finished_at": when,
        "duration_ms": round(rng.uniform(5e3, 3e5), 3),
        "status": "incomplete" if incomplete else "evaluated",
        "policy": "strict",
        **strict,
        "reward": 1.0 if strict["success"] else 0.0,
        "failure_reason": "gym went away" if incomplete else None,
        "parity": parity,
        "stop_reason": rng.choice(STOPS),
        "final_answer": turns[-1]["text"],
        "tools_used": sorted({c["name"] for t in turns for c in t["tool_calls"]}),
        "tools_offered": 40,
        "num_turns": len(turns),
        "num_tool_calls": calls,
        "usage": {
            "input_tokens": 150000,
            "output_tokens": 2000,
            "cached_tokens": 60000,
            "reasoning_tokens": 800,
            "total_tokens": 152000,
        },
        "model_latency_ms": 40000.0,
        "tool_latency_ms": 3000.0,
        "turns": turns,
    }


def write_workload(folder: Path, *, tasks: int = 2500, repeats: int = 4, seed: int = 0) -> Path:
    """``folder/rollouts.jsonl`` with ``tasks x repeats`` records; returns the folder."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "rollouts.jsonl").open("w", encoding="utf-8") as out:
        for task in range(tasks):
            ability = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
            for repeat in range(repeats):
                out.write(json.dumps(_record(rng, task, repeat, ability)) + "\n")
    return folder
