"""Run upstream's whole harness on tasks and write tests/golden/task_parity.json.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_task_parity.py

Each case is a task (a real one from ``EOG_DATA_DIR/tasks`` with its prompts
and descriptions replaced by placeholders, a mutation of one, or a synthetic
one), the HTTP status and body the gym's ``/api/sql-runner`` answers for each
query, the judge's reply for each ``response_check`` prompt, and the agent's
final response and tool calls. Upstream's ``load_config`` reads the task file
and ``BenchmarkExecutor.execute_benchmark`` runs it once (upstream_harness.py
says which edges are replaced); recorded are the run record's verifier keys
(``verification_results``, ``verification_summary``, ``overall_success``, or the
run error ``{"error", "overall_success"}``) and every SQL request it sent (url,
database id, headers). Tasks are stored once and referenced by key; queries
once per task.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import upstream_harness as harness

SEED = 7
SYNTHETIC = 3300
PER_REAL = 150
#: An outcome whose JSON text is longer is stored as its sha256 (and summary) to keep the file small.
FULL_OUTCOME_LIMIT = 700
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
OUT = HERE.parent / "task_parity.json"
DATA = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))
PLACEHOLDER = "<prose withheld>"

MUTATIONS = [
    "none",
    "subset",
    "subset",
    "subset",
    "dup_names",
    "unknown_gym",
    "no_gym_name",
    "no_validation_config",
    "empty_verifiers",
    "response_check",
    "tool_execution",
    "context_null",
    "gym_extra_keys",
    "comparison_variants",
    "missing_query",
    "unknown_type",
    "unnamed",
    "second_gym",
    "legacy_top_level",
    "dup_gym",
    "config_extra_key",
]

JUDGE_REPLIES: list[Any] = [
    '{"score": 8, "reasoning": "matches"}',
    '{"score": 3, "reasoning": "wrong"}',
    '{"score": 8, "reasoning": null}',
    '{"score": 7}',
    '{"score": 7.5}',
    '{"reasoning": "no score"}',
    '{"score": "9"}',
    '{"score": true}',
    '{"score": null}',
    '{"score": [9]}',
    "not json",
    "[8]",
    "8",
    '"text"',
    "null",
    "",
    '\u00a0{"score": 9}',
    ' {"score": 9} ',
    '```json\n{"score": 9}\n```',
    '```\n{"score": 2, "reasoning": "fenced"}\n```',
    '```json\n\u00a0{"score": 9}\u00a0\n```',
    'Here: ```json {"score": 10} ``` done',
    '{"score": 8, "reasoning": {"why": [1, 2]}}',
    '{"score": NaN}',
    '{"score": 1e400}',
    {"raise": "model overloaded"},
    {"raise": ""},
]
MINIMUMS: list[Any] = [7, 7, 7.0, 5, 8.5, None, "missing", 0, -1]


def value_pool(rng: random.Random) -> Any:
    return rng.choice(
        [
            0,
            1,
            2,
            5,
            -3,
            10**20,
            2.5,
            1.0,
            "1",
            "open",
            "closed",
            "",
            "2025-01-01T10:00:00Z",
            "2025-01-01 10:00:00",
            True,
            False,
            None,
            [1, 2],
            {"a": 1},
            "ümlaut",
            "a\nb",
        ]
    )


def passing_value(expected: Any, comparison: Any, rng: random.Random) -> Any:
    if (
        comparison == "greater_than"
        and isinstance(expected, int | float)
        and not isinstance(expected, bool)
    ):
        return expected + rng.choice([1, 0.5])
    if (
        comparison == "less_than"
        and isinstance(expected, int | float)
        and not isinstance(expected, bool)
    ):
        return expected - 1
    if comparison == "contains" and isinstance(expected, str):
        return f"x{expected}y"
    return expected


def answer(expected: Any, comparison: Any, rng: random.Random) -> tuple[int, str]:
    """An HTTP status and exact body for one verifier query."""
    roll = rng.random()
    column = rng.choice(["v", "count", "COUNT(*)", "state"])
    if roll < 0.35:
        return 200, json.dumps({"data": [{column: passing_value(expected, comparison, rng)}]})
    if roll < 0.55:
        return 200, json.dumps({"data": [{column: value_pool(rng)}]})
    if roll < 0.72:
        value = value_pool(rng)
        return 200, rng.choice(
            [
                json.dumps({"data": []}),
                json.dumps({"data": [{"a": value, "b": 2}]}),
                json.dumps({"data": [{"a": value}, {"a": 2}]}),
                json.dumps({"rows": [[value]]}),
                json.dumps({"rows": [{"c": value}]}),
                json.dumps({"rows": []}),
                json.dumps({"content": [{"type": "text", "text": str(value)}]}),
                json.dumps({"result": value}),
                json.dumps([value]),
                json.dumps(value),
                json.dumps({"other": 1}),
                json.dumps({"data": value}),
                '{"data": [{"v": NaN}]}',
                '{"data": [{"v": 1e999}]}',
                json.dumps({"data": [{"v": expected}]}, ensure_ascii=False),
            ]
        )
    if roll < 0.88:
        return rng.choice([400, 404, 422, 500, 503]), rng.choice(
            [
                '{"detail": "no such table: t"}',
                '{"detail": {"msg": "", "code": 1}}',
                '{"detail": null}',
                '{"detail": ["a", 1]}',
                '{"message": " padded message "}',
                '{"error": {"message": "e"}}',
                "[1, 2]",
                "Not Found",
                "",
                "  ",
                '{"detail": 3.5}',
                '{"detail": "ünïcode"}',
                '{"message": null, "detail": "both"}',
                "<html>bad gateway</html>",
            ]
        )
    return 200, rng.choice(
        ["", "   ", "<html>", "not json", "NaN", '{"data": [', "\ufeff{}", "null"]
    )


def gym(name: str, url: str, rng: random.Random, context: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"mcp_server_name": name, "mcp_server_url": url}
    if rng.random() < 0.5:
        out["seed_database_file"] = f"{name}.sql"
    out["context"] = (
        context
        if context is not None
        else rng.choice(
            [
                {},
                {"x-user-email": "a@b.c"},
                {"user_email": " pad@b.c "},
                {"x-token": 5, "tenant_id": "t1"},
            ]
        )
    )
    return out


def synthetic_verifier(index: int, gyms: list[str], rng: random.Random) -> dict[str, Any]:
    kind = rng.choices(["database_state", "response_check", "tool_execution"], [6, 2, 2])[0]
    verifier: dict[str, Any] = {"verifier_type": kind}
    if rng.random() < 0.85:
        verifier["name"] = rng.choice([f"check_{index}", f"check_{index}", "same", "other"])
    if rng.random() < 0.9:
        verifier["gym_name"] = rng.choice(gyms)
    query = f"SELECT v FROM t WHERE id = {index}"
    if kind == "database_state":
        expected = value_pool(rng)
        config: dict[str, Any] = {"query": query, "expected_value": expected}
        if rng.random() < 0.8:
            config["comparison_type"] = rng.choice(
                ["equals", "equals", "greater_than", "less_than", "contains", "between", None]
            )
    elif kind == "response_check":
        config = {"sql_query": query, "comparison_prompt": f"Does the answer state row {index}?"}
        minimum = rng.choice(MINIMUMS)
        if minimum != "missing":
            config["minimum_comparison_value"] = minimum
    else:
        config = {
            "selected_tools": rng.sample(["a", "b", "c"], rng.randint(0, 2)),
            "minimum_tool_calls": rng.randint(0, 3),
        }
    verifier["validation_config"] = config
    return verifier


def synthetic_task(rng: random.Random) -> dict[str, Any]:
    names = ["gym-a"] if rng.random() < 0.6 else ["gym-a", "gym-b"]
    return {
        "system_prompt": "<system prompt>",
        "user_prompt": "<user prompt>",
        "gym_servers_config": [gym(n, f"http://{n}.test:80{i}", rng) for i, n in enumerate(names)],
        "verifiers": [synthetic_verifier(i, names, rng) for i in range(rng.randint(1, 6))],
    }


def withheld(task: dict[str, Any]) -> dict[str, Any]:
    """A real task with its prose replaced (prompts, descriptions): only structure is kept."""
    out = copy.deepcopy(task)
    for key in ("system_prompt", "user_prompt"):
        if key in out:
            out[key] = PLACEHOLDER
    for verifier in out.get("verifiers", []):
        if "description" in verifier:
            verifier["description"] = PLACEHOLDER
    return out


def database_checks(verifiers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        v["validation_config"]
        for v in verifiers
        if v.get("verifier_type") == "database_state"
        and isinstance(v.get("validation_config"), dict)
    ]


def mutate(task: dict[str, Any], kind: str, rng: random.Random) -> dict[str, Any]:
    task = copy.deepcopy(task)
    verifiers = task["verifiers"]
    gyms = task["gym_servers_config"]
    if kind == "subset" and verifiers:
        task["verifiers"] = rng.sample(verifiers, rng.randint(1, min(4, len(verifiers))))
    elif kind == "dup_names" and len(verifiers) > 1:
        donor = rng.choice(verifiers)
        for verifier in rng.sample(verifiers, 2):
            verifier["name"] = donor.get("name", "dup")
    elif kind == "unknown_gym" and verifiers:
        rng.choice(verifiers)["gym_name"] = "not-a-gym"
        if rng.random() < 0.3:
            for verifier in verifiers:
                verifier["gym_name"] = "not-a-gym"
    elif kind == "no_gym_name" and verifiers:
        rng.choice(verifiers).pop("gym_name", None)
    elif kind == "no_validation_config" and verifiers:
        rng.choice(verifiers).pop("validation_config", None)
    elif kind == "empty_verifiers":
        task["verifiers"] = []
    elif kind == "response_check":
        verifiers.append(
            synthetic_verifier(90, [g["mcp_server_name"] for g in gyms], rng)
            | {
                "verifier_type": "response_check",
                "name": "judged",
                "validation_config": {
                    "sql_query": "SELECT 1",
                    "comparison_prompt": "Judge it.",
                    "minimum_comparison_value": rng.choice([7, 7.0, None]),
                },
            }
        )
    elif kind == "tool_execution":
        verifiers.append(
            {
                "verifier_type": "tool_execution",
                "name": "tools",
                "validation_config": {
                    "selected_tools": rng.sample(["a", "b", "c"], 2),
                    "minimum_tool_calls": rng.randint(1, 3),
                },
            }
        )
    elif kind == "context_null":
        rng.choice(gyms)["context"] = None
    elif kind == "gym_extra_keys":
        rng.choice(gyms).update(
            rng.choice(
                [
                    {"database_id": ""},
                    {"database_id": "db_preset"},
                    {"description": "x", "timeout": 30},
                ]
            )
        )
    elif kind == "comparison_variants" and (checks := database_checks(verifiers)):
        config = rng.choice(checks)
        choice = rng.choice(["drop_type", "null_type", "drop_expected", "contains", "greater_than"])
        if choice == "drop_type":
            config.pop("comparison_type", None)
        elif choice == "null_type":
            config["comparison_type"] = None
        elif choice == "drop_expected":
            config.pop("expected_value", None)
        else:
            config["comparison_type"] = choice
    elif kind == "missing_query" and (checks := database_checks(verifiers)):
        config = rng.choice(checks)
        if rng.random() < 0.5:
            config.pop("query", None)
        else:
            config["query"] = ""
    elif kind == "unknown_type" and verifiers:
        rng.choice(verifiers)["verifier_type"] = "llm_vibes"
    elif kind == "unnamed":
        for verifier in verifiers:
            if rng.random() < 0.6:
                verifier.pop("name", None)
    elif kind == "second_gym":
        gyms.append(gym("gym-second", "http://second.test:8099", rng))
        for verifier in verifiers:
            if rng.random() < 0.4:
                verifier["gym_name"] = "gym-second"
    elif kind == "legacy_top_level":
        task["database_id"] = rng.choice(["", "db_legacy"])
        task["context"] = rng.choice([{}, {"user_email": "legacy@b.c"}, None])
        for verifier in verifiers:
            if rng.random() < 0.5:
                verifier.pop("gym_name", None)
    elif kind == "config_extra_key" and (checks := database_checks(verifiers)):
        rng.choice(checks)["expected_values"] = 1  # a typo upstream ignores
    elif kind == "dup_gym":
        gyms.append(gym(gyms[0]["mcp_server_name"], "http://dup.test:8098", rng))
    return task


def queries(task: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """(gym url, query, expected, comparison) for every query upstream could send, first gym of a name."""
    urls: dict[str, str] = {}
    for server in task.get("gym_servers_config", []):
        urls[server["mcp_server_name"]] = server[
            "mcp_server_url"
        ]  # the last of a name is the client
    default = next(iter(urls.values()), None)
    found: dict[tuple[str, str], tuple[Any, Any]] = {}
    for verifier in task.get("verifiers", []):
        config = verifier.get("validation_config") or {}
        query = config.get("query") or config.get("sql_query")
        url = urls.get(verifier.get("gym_name") or "") if verifier.get("gym_name") else default
        if isinstance(query, str) and query and url is not None:
            found.setdefault(
                (url, query),
                (config.get("expected_value"), config.get("comparison_type", "equals")),
            )
    return [(url, query, *rest) for (url, query), rest in found.items()]


class Tables:
    """Distinct objects stored once; JSON text (key order kept) is the identity."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Any]] = {
            "gyms": [],
            "verifiers": [],
            "queries": [],
            "headers": [],
        }
        self.index: dict[str, dict[str, int]] = {name: {} for name in self.rows}

    def ref(self, table: str, value: Any) -> int:
        text = json.dumps(value)
        if text not in self.index[table]:
            self.index[table][text] = len(self.rows[table])
            self.rows[table].append(value)
        return self.index[table][text]

    def task(self, task: dict[str, Any]) -> dict[str, Any]:
        out = dict(task)
        out["gym_servers_config"] = [self.ref("gyms", g) for g in task["gym_servers_config"]]
        out["verifiers"] = [self.ref("verifiers", v) for v in task["verifiers"]]
        return out


def stored_outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(outcome)
    if len(text) <= FULL_OUTCOME_LIMIT:
        return outcome
    return {
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "summary": {
            k: outcome[k]
            for k in ("error", "verification_summary", "overall_success")
            if k in outcome
        },
    }


def build_case(
    up: Any,
    tables: Tables,
    task_key: str,
    task: dict[str, Any],
    mutation: str,
    rng: random.Random,
    folder: Path,
) -> dict[str, Any]:
    asked = queries(task)
    answers = [answer(expected, comparison, rng) for _, _, expected, comparison in asked]
    prompts = [
        v["validation_config"]["comparison_prompt"]
        for v in task.get("verifiers", [])
        if v.get("verifier_type") == "response_check"
        and isinstance(v.get("validation_config"), dict)
        and isinstance(v["validation_config"].get("comparison_prompt"), str)
    ]
    judge = {prompt: rng.choice(JUDGE_REPLIES) for prompt in prompts}
    final = rng.choice(["", "Done: ticket 1 closed.", "Row 3 holds 5."])
    tools = rng.sample(["a", "b", "c", "d"], rng.randint(0, 4))
    path = folder / "task.json"
    path.write_text(json.dumps(task), encoding="utf-8")
    scenario = harness.Scenario(
        answers={(u, q): a for (u, q, _, _), a in zip(asked, answers, strict=True)},
        judge=judge,
        final_response=final,
        tools=tools,
    )
    outcome = harness.run_task(up, str(path), scenario)
    position = {(u, q): i for i, (u, q, _, _) in enumerate(asked)}
    requests = [
        [
            position[(r["url"][: -len("/api/sql-runner")], r["query"])],
            r["database_id"],
            tables.ref("headers", r["headers"]),
        ]
        for r in scenario.requests
    ]
    return {
        "task": task_key,
        "mutation": mutation,
        "answers": [list(a) for a in answers],
        "judge": judge,
        "final_response": final,
        "tools": tools,
        "outcome": stored_outcome(outcome),
        "requests": requests,
    }


def main() -> None:
    up = harness.import_upstream()
    harness.install_edges(up)
    rng = random.Random(SEED)
    real_files = sorted((DATA / "tasks").rglob("*.json"))
    if not real_files:
        sys.exit(f"no real task files under {DATA / 'tasks'} (set EOG_DATA_DIR)")
    tables = Tables()
    tasks: dict[str, dict[str, Any]] = {}
    cases: list[dict[str, Any]] = []

    def add(task: dict[str, Any], mutation: str, folder: Path, original: dict[str, Any]) -> None:
        if task == original:  # the mutation found nothing to change
            mutation = mutation.split(":")[0] + ":none"
        key = json.dumps(task)
        if key not in tasks:
            tasks[key] = {
                "key": f"t{len(tasks)}",
                "task": tables.task(task),
                "queries": [tables.ref("queries", [u, q]) for u, q, _, _ in queries(task)],
            }
        cases.append(build_case(up, tables, tasks[key]["key"], task, mutation, rng, folder))

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for path in real_files:
            real = withheld(json.loads(path.read_text(encoding="utf-8")))
            for number in range(PER_REAL):
                kind = "none" if number < 10 else rng.choice(MUTATIONS)
                add(mutate(real, kind, rng), f"real:{kind}", folder, real)
        for _ in range(SYNTHETIC):
            kind = rng.choice(["none"] * 6 + MUTATIONS)
            base = synthetic_task(rng)
            add(mutate(base, kind, rng), f"synthetic:{kind}", folder, base)
    out = {
        "generator_seed": SEED,
        "upstream": "ServiceNow/EnterpriseOps-Gym@271f2c3",
        "full_outcome_limit": FULL_OUTCOME_LIMIT,
        **tables.rows,
        "tasks": {
            entry["key"]: {"task": entry["task"], "queries": entry["queries"]}
            for entry in tasks.values()
        },
        "cases": cases,
    }
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases over {len(tasks)} tasks to {OUT}")


if __name__ == "__main__":
    main()
