"""Replay whole tasks run by upstream's own harness: parity's run record must be upstream's, byte for byte.

``tests/golden/task_parity.json`` was made by tests/golden/generators/gen_task_parity.py
(upstream's ``load_config`` and ``BenchmarkExecutor`` on real, mutated and synthetic
tasks, with recorded sql-runner answers and judge replies). Each case is replayed
through ``verify_task(policy=PARITY)``: the answers go through the same reading
as the HTTP runner (``sql_answer``/``sql_error_text``), the first cases also over a
real loopback gym with ``GymClient``. The SQL requests (gym, database id, headers)
must be upstream's too. ``EOG_TASK_PARITY_GOLDEN_FILE`` names another file of the
same format.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from eog_core import PARITY, SqlOutcome, Task, load_task, verify_task
from eog_core.errors import SchemaError
from eog_core.gym import GymClient, HttpSqlRunner
from eog_core.gym._headers import auth_headers, context_headers
from eog_core.gym._sql_answer import sql_answer, sql_error_text
from eog_core.verify import JudgeRequest
from tests.verify.sql_gym import serve_sql_answers

GOLDEN = Path(
    os.environ.get("EOG_TASK_PARITY_GOLDEN_FILE")
    or Path(__file__).parent.parent / "golden" / "task_parity.json"
)
DATA: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]
#: Mutations our loader refuses on purpose (docs/parity.md, "Deliberate differences").
REFUSED = {"dup_gym": "duplicate gym name", "config_extra_key": "extra fields found"}
OVER_HTTP = 150


def task_mapping(key: str) -> dict[str, Any]:
    task = dict(DATA["tasks"][key]["task"])
    task["gym_servers_config"] = [DATA["gyms"][i] for i in task["gym_servers_config"]]
    task["verifiers"] = [DATA["verifiers"][i] for i in task["verifiers"]]
    return task


def answers_of(case: dict[str, Any]) -> dict[tuple[str, str], tuple[int, str]]:
    asked = [DATA["queries"][i] for i in DATA["tasks"][case["task"]]["queries"]]
    return {
        (url, query): (status, body)
        for (url, query), (status, body) in zip(asked, case["answers"], strict=True)
    }


class ReplayRunner:
    """Answers each query with the recorded HTTP answer, read as the HTTP runner reads it."""

    def __init__(self, task: Task, answers: Mapping[tuple[str, str], tuple[int, str]]) -> None:
        self.urls = {gym.name: gym.url for gym in task.gym_servers}
        self.auth = {gym.name: gym.auth for gym in task.gym_servers}
        self.answers = answers
        self.requests: list[list[Any]] = []

    async def run_sql(
        self, gym_name: str, database_id: str | None, query: str, context: Mapping[str, str]
    ) -> SqlOutcome:
        headers = auth_headers(self.auth[gym_name]) | context_headers(context, mode="upstream")
        headers["x-database-id"] = str(database_id)
        self.requests.append([self.urls[gym_name], query, database_id, headers])
        status, body = self.answers[(self.urls[gym_name], query)]
        if 200 <= status < 300:
            return sql_answer(body.encode("utf-8"))
        return SqlOutcome.failed(sql_error_text(status, body.encode("utf-8")))


def judge_for(case: dict[str, Any]) -> Any:
    async def judge(request: JudgeRequest) -> str:
        reply = case["judge"][request.comparison_prompt]
        if isinstance(reply, dict):
            raise RuntimeError(reply["raise"])
        return str(reply)

    return judge


def same_outcome(record: dict[str, Any], stored: dict[str, Any]) -> bool:
    text = json.dumps(record)
    if "sha256" in stored:
        return hashlib.sha256(text.encode("utf-8")).hexdigest() == stored["sha256"]
    return text == json.dumps(stored)


def upstream_requests(case: dict[str, Any]) -> list[str]:
    asked = [DATA["queries"][i] for i in DATA["tasks"][case["task"]]["queries"]]
    return sorted(
        json.dumps([*asked[q], database_id, DATA["headers"][h]], sort_keys=True)
        for q, database_id, h in case["requests"]
    )


async def replay(case: dict[str, Any], sql: Any = None) -> tuple[dict[str, Any], ReplayRunner]:
    task = load_task(task_mapping(case["task"]))
    runner = ReplayRunner(task, answers_of(case))
    verdict = await verify_task(
        task,
        sql=sql or runner,
        policy=PARITY,
        database_ids={gym.name: f"db-{i}" for i, gym in enumerate(task.gym_servers)},
        final_response=case["final_response"],
        tool_calls=case["tools"],
        judge=judge_for(case),
    )
    return verdict.to_dict(), runner


def test_golden_file_is_complete() -> None:
    assert len(CASES) >= 5000 or "EOG_TASK_PARITY_GOLDEN_FILE" in os.environ
    kinds = {case["mutation"].split(":")[0] for case in CASES}
    assert kinds == {"real", "synthetic"} or "EOG_TASK_PARITY_GOLDEN_FILE" in os.environ
    assert all(
        set(case["outcome"]) - {"sha256", "summary"}
        <= {"error", "verification_results", "verification_summary", "overall_success"}
        for case in CASES
    )


@pytest.mark.parametrize("chunk", range(0, len(CASES), 250), ids=lambda start: f"cases{start}")
async def test_parity_run_record_is_upstreams(chunk: int) -> None:
    failures = []
    for index in range(chunk, min(chunk + 250, len(CASES))):
        case = CASES[index]
        mutation = case["mutation"].split(":")[1]
        if mutation in REFUSED:
            with pytest.raises(SchemaError, match=REFUSED[mutation]):
                load_task(task_mapping(case["task"]))
            continue
        record, runner = await replay(case)
        if not same_outcome(record, case["outcome"]):
            failures.append((index, case["mutation"], record, case["outcome"]))
            continue
        ours = sorted(
            json.dumps([url, query, database_id, headers], sort_keys=True)
            for url, query, database_id, headers in runner.requests
        )
        theirs = upstream_requests(case)
        if "error" in record:  # upstream's run stopped at the failing verifier: a prefix of ours
            unmatched = Counter(theirs) - Counter(ours)
            if unmatched:
                failures.append((index, "requests", ours, theirs))
        elif ours != theirs:
            failures.append((index, "requests", ours, theirs))
    assert not failures, json.dumps(failures[:3], indent=1, default=str)


@pytest.fixture
async def recorded_gym() -> AsyncIterator[tuple[str, dict[str, tuple[int, str]]]]:
    """A real loopback gym answering each query with the case's recorded answer."""
    answers: dict[str, tuple[int, str]] = {}

    async with serve_sql_answers(answers) as url:
        yield url, answers


async def test_first_cases_over_a_real_gym(
    recorded_gym: tuple[str, dict[str, tuple[int, str]]],
) -> None:
    """The same records when the answers travel over HTTP through GymClient and HttpSqlRunner."""
    url, served = recorded_gym
    checked = 0
    for case in CASES:
        task_key = case["task"]
        mapping = task_mapping(task_key)
        if case["mutation"].split(":")[1] in REFUSED or len(mapping["gym_servers_config"]) != 1:
            continue
        if any(status in (429, 502, 503, 504) for status, _ in case["answers"]):
            continue  # our client retries those: same text, slower test
        served.clear()
        served.update({query: answer for (_, query), answer in answers_of(case).items()})
        task = load_task(mapping)
        async with GymClient(url, name=task.gym_servers[0].name) as client:
            record, _ = await replay(case, HttpSqlRunner({task.gym_servers[0].name: client}))
        assert same_outcome(record, case["outcome"]), (case["mutation"], record)
        checked += 1
        if checked == OVER_HTTP:
            break
    assert checked == OVER_HTTP or "EOG_TASK_PARITY_GOLDEN_FILE" in os.environ
    await asyncio.sleep(0)
