"""The ``decomposing`` differential: upstream's orchestrator and ours, request by request.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_decomposing_parity.py

(``nox -s decomposing_parity`` installs upstream's LangChain dependencies and runs it.)
As ``gen_planner_parity.py``: upstream runs unmodified with its real dependencies
(``BenchmarkExecutor.initialize``: MCP handshake and tool discovery over its own
``MCPClient``, its ``LLMClient`` building LangChain's ``ChatOpenAI``), then
``DecomposingPlannerOrchestrator`` as ``execute_single_run`` builds it (with a
``planner_llm_config`` when the scenario names a planner model: upstream's
``_initialize_planner_llm``). The one edge replaced: the database is seeded by eog_core.
Both harnesses talk to the same demo gym (``LocalGym``) and the same scripted model
(``ScriptedModel``), on Chat Completions and, as upstream does when an ``effort`` is set,
on Responses.

Compared per scenario: every request the model received (messages and tools, reduced by
``tests/run/decomposing_requests.py``), the tool calls made, the plan, each subtask's
result (success, summary, error, what it added to the working memory) and the final
answer. The outcome goes to ``tests/golden/decomposing_parity.json`` with our reduced
requests, which ``tests/run/test_decomposing_parity.py`` checks our harness against
without upstream. Exit 1 when anything differs beyond ``KEPT`` and a scenario's declared
ending.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = REPO / "tests" / "golden" / "decomposing_parity.json"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.run.decomposing_requests import (  # noqa: E402
    normalise_decomposing,
    our_outcome,
    reduced_outcome,
    without_error_wording,
)
from tests.run.planner_requests import compare_requests  # noqa: E402

from eog_core import load_task  # noqa: E402
from eog_core.gym import GymDirectory, TaskSession  # noqa: E402
from eog_core.local import LocalGym, ScriptedModel, demo_paths  # noqa: E402
from eog_core.run import (  # noqa: E402
    DECOMPOSING_SHA256,
    UPSTREAM_REVISION,
    Decomposer,
    EvaluationPlan,
    ModelSettings,
    RolloutOptions,
    load_decomposing_template,
    run_evaluation,
)

SCENARIOS = (
    ("demo", "chat", None),
    ("demo", "responses", None),
    ("demo-truncated", "chat", None),
    ("noop", "chat", None),
    ("demo-overflow", "chat", None),  # each sub-agent's 3rd request over the window
    ("demo", "chat", "plan-forward"),
    ("demo", "chat", "plan-no-json"),
)
"""(executor script, API, planner model): the executor's scripts of the scripted model (a
``demo`` sub-agent plays its part, ``demo#K``; the others their whole script); the planner
answers the demo decomposition, or the named planner answer (via upstream's
``--planner_llm_config``)."""
EFFORT = "low"
KEPT = {"stream"}
"""Request fields allowed to differ (docs/parity.md, "decomposing"): LangChain sends
``stream: false``, the default, which we leave out. Beyond requests, a failed subtask's error
is compared without its wording (``without_error_wording``: upstream's is the ``openai``
exception's, ours the endpoint's message)."""
RETRIED = {"demo-overflow"}
"""Scenarios where upstream's ``with_retry`` sends a refused request 3 times (any exception, a
400 too) and we send it once (docs/run.md, "model errors"): upstream's repeats of a request,
identical to the one before, are counted and left out of the comparison."""
NO_DECOMPOSITION = {"plan-forward", "plan-no-json"}
"""Planner answers upstream never decomposes: upstream composes "Failed to generate plan"
and verifies; ours ends ``bad_decomposition`` after the same requests (docs/parity.md)."""


def _import_upstream(folder: str) -> Any:
    sys.path.insert(0, folder)
    from benchmark.executor import BenchmarkExecutor
    from benchmark.models import BenchmarkConfig, LLMConfig
    from orchestrators.decomposing_planner import DecomposingPlannerOrchestrator

    return BenchmarkExecutor, BenchmarkConfig, LLMConfig, DecomposingPlannerOrchestrator


async def _upstream_run(
    upstream: Any, model: ScriptedModel, gym: LocalGym, script: str, api: str, planner: str | None
) -> dict[str, Any]:
    executor_class, config_class, llm_class, orchestrator_class = upstream
    data = json.loads(demo_paths().task.read_text(encoding="utf-8"))
    names = {f.name for f in dataclasses.fields(config_class)}
    config = config_class(**{k: v for k, v in data.items() if k in names})
    config.gym_servers_config = [
        {**g, "mcp_server_url": gym.url} for g in config.gym_servers_config
    ]
    os.environ["OPENAI_BASE_URL"] = model.base_url  # the openai provider's ChatOpenAI reads it
    effort = EFFORT if api == "responses" else None

    def llm(name: str) -> Any:
        return llm_class(
            llm_provider="openai", llm_model=name, llm_api_key="sk-differential", effort=effort
        )

    kwargs = {} if planner is None else {"planner_llm_config": llm(planner)}
    executor = executor_class(
        config, llm(script), orchestrator_class=orchestrator_class, orchestrator_kwargs=kwargs
    )
    task = load_task(demo_paths().task)
    async with TaskSession.start(
        task, directory=GymDirectory({gym.name: gym.url}), seed_root=demo_paths().directory
    ) as session:
        await executor.initialize()
        for name, client in executor.mcp_clients.items():
            client.database_id = session.database_ids[name]
        orchestrator = executor.orchestrator_class(
            llm_client=executor.llm_client,
            mcp_clients=executor.mcp_clients,
            tool_to_server_mapping=executor.tool_to_server_mapping,
            available_tools=executor.available_tools,
            config=executor.config,
            **executor.orchestrator_kwargs,
        )
        result = await orchestrator.execute()
    outcome = orchestrator._orchestration_result
    return {
        "plan": outcome.plan if outcome.subtasks else None,
        "final_answer": result["final_response"] if outcome.subtasks else "",
        "tool_calls": [[r["tool_name"], r["arguments"]] for r in result["tool_results"]],
        "results": [
            {
                "success": r.success,
                "summary": r.summary,
                "error": r.error,
                "memory": r.structured_output,
            }
            for r in outcome.subtask_results
        ],
    }


async def _our_run(
    planner: Decomposer, model: ScriptedModel, gym: LocalGym, script: str, api: str
) -> Any:
    extra = {"reasoning": {"effort": EFFORT}} if api == "responses" else {}
    settings = ModelSettings(
        model=script,
        base_url=model.base_url,
        api_key="sk-differential",
        api=api,  # type: ignore[arg-type]
        extra_body=extra,
    )
    with tempfile.TemporaryDirectory(prefix="decomposing-parity-") as out:
        report = await run_evaluation(
            [load_task(demo_paths().task)],
            settings,
            out,
            plan=EvaluationPlan(repeats=1, concurrency=1, preflight=False),
            directory=GymDirectory({gym.name: gym.url}),
            options=RolloutOptions.build(seed_root=demo_paths().directory, planner=planner),
        )
    [record] = report.records
    return our_outcome(record)


def _collapse_retries(requests: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``requests`` without those equal to the one before (upstream's retries), and how many."""
    kept: list[dict[str, Any]] = []
    for request in requests:
        if not kept or request != kept[-1]:
            kept.append(request)
    return kept, len(requests) - len(kept)


def _compare(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[str]:
    return compare_requests(ours, theirs, kept=KEPT)


async def main() -> int:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder:
        sys.exit("set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3")
    template = load_decomposing_template(folder)
    if not template.known_revision:
        sys.exit(f"{template.source} is not upstream's file at {UPSTREAM_REVISION[:7]}")
    upstream = _import_upstream(folder)
    scenarios: dict[str, Any] = {}
    failed = False
    async with LocalGym.demo() as gym, ScriptedModel() as model:

        def reduced() -> list[dict[str, Any]]:
            bodies = [r["body"] for r in model.requests]
            model.requests.clear()
            return normalise_decomposing(bodies, template=template, gym_url=gym.url)

        for script, api, planner_model in SCENARIOS:
            name = script if api == "chat" else f"{script}@{api}"
            name += f"+{planner_model}" if planner_model else ""
            model.requests.clear()
            theirs_run = await _upstream_run(upstream, model, gym, script, api, planner_model)
            theirs, retries = reduced(), 0
            if script in RETRIED:
                theirs, retries = _collapse_retries(theirs)
            settings = None
            if planner_model is not None:
                extra = {"reasoning": {"effort": EFFORT}} if api == "responses" else {}
                settings = ModelSettings(
                    model=planner_model,
                    base_url=model.base_url,
                    api_key="sk-differential",
                    api=api,  # type: ignore[arg-type]
                    extra_body=extra,
                )
            ours_run = await _our_run(Decomposer(template, settings), model, gym, script, api)
            ours = reduced()
            problems = _compare(ours, theirs)
            if planner_model in NO_DECOMPOSITION:
                theirs_run = dict(theirs_run, plan=None, final_answer="")
            ours_run, theirs_run = (
                without_error_wording(ours_run),
                without_error_wording(theirs_run),
            )
            for key in ("plan", "final_answer", "tool_calls", "results"):
                if ours_run[key] != theirs_run[key]:
                    problems.append(f"{key}: ours {ours_run[key]!r}, upstream {theirs_run[key]!r}")
            failed |= bool(problems)
            for line in problems:
                print(f"{name}: {line}", file=sys.stderr)
            scenarios[name] = {
                "equal": not problems,
                "requests": ours,
                "upstream": [{k: v for k, v in r.items() if k != "messages"} for r in theirs],
                "upstream_retries": retries,
                **reduced_outcome(template, ours_run),
            }
    document = {
        "upstream_revision": UPSTREAM_REVISION,
        "decomposing_planner_sha256": DECOMPOSING_SHA256,
        "made_with": {
            name: importlib.metadata.version(name)
            for name in ("langchain-core", "langchain-openai", "openai", "httpx")
        },
        "kept_differences": sorted(KEPT),
        "scenarios": scenarios,
    }
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}: {'DIFFERENCES' if failed else 'requests equal'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
