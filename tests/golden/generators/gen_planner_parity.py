"""The ``planner_react`` differential: upstream's orchestrator and ours, request by request.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym python tests/golden/generators/gen_planner_parity.py

(``nox -s planner_parity`` installs upstream's LangChain dependencies and runs it.)
Upstream runs unmodified with its real dependencies: ``BenchmarkExecutor.initialize`` (MCP
handshake and tool discovery over its own ``MCPClient``, its ``LLMClient`` building
LangChain's ``ChatOpenAI``), then ``PlannerReactOrchestrator`` as ``execute_single_run``
builds it. The one edge replaced: the database is seeded by eog_core (upstream's
``create_database_from_file`` is synchronous and would block the loop serving the gym).
Both harnesses talk to the same demo gym (``LocalGym``) and the same scripted model
(``ScriptedModel``), on Chat Completions and, as upstream does when an ``effort`` is set,
on Responses.

Compared per scenario: every request the model received (messages and tools, reduced by
``tests/run/planner_requests.py``: ids numbered, the texts of upstream's file replaced by
hashes of what was filled in), the tool calls made, the plan and the final answer. The
outcome is written to ``tests/golden/planner_parity.json`` with our reduced requests, which
``tests/run/test_planner_parity.py`` checks our harness against without upstream. Exit 1
when a request differs in anything not listed in ``KEPT``.
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
OUT = REPO / "tests" / "golden" / "planner_parity.json"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.run.planner_requests import (  # noqa: E402
    compare_requests,
    digest,
    normalise_requests,
    template_pattern,
)

from eog_core import load_task  # noqa: E402
from eog_core.gym import GymDirectory, TaskSession  # noqa: E402
from eog_core.local import LocalGym, ScriptedModel, demo_paths  # noqa: E402
from eog_core.run import (  # noqa: E402
    PLANNER_REACT_SHA256,
    UPSTREAM_REVISION,
    EvaluationPlan,
    ModelSettings,
    Planner,
    PlannerTemplate,
    RolloutOptions,
    load_planner_template,
    planner_tool_entries,
    run_evaluation,
)
from eog_core.tasks import load_tool_snapshots, merge_tools  # noqa: E402

SCENARIOS = (
    ("demo", "chat"),
    ("demo-wrong", "chat"),
    ("demo-truncated", "chat"),
    ("noop", "chat"),
    ("demo", "responses"),
    ("demo-truncated", "responses"),
)
"""Executor scripts of the scripted model, on each API; the planner answers the demo plan.
Upstream speaks Responses when an ``effort`` is set (``reasoning_effort`` on the request): both
harnesses then send ``reasoning: {"effort": "low"}``."""
EFFORT = "low"
KEPT = {"stream"}
"""Request fields allowed to differ (docs/parity.md, "planner_react"): LangChain sends
``stream: false``, the default, which we leave out."""


def _import_upstream(folder: str) -> Any:
    sys.path.insert(0, folder)
    from benchmark.executor import BenchmarkExecutor
    from benchmark.models import BenchmarkConfig, LLMConfig
    from orchestrators.planner_react import PlannerReactOrchestrator

    return BenchmarkExecutor, BenchmarkConfig, LLMConfig, PlannerReactOrchestrator


async def _shared_task_prompts(upstream: Any, template: PlannerTemplate, data: Path) -> Any:
    """The planner prompt of every shared upstream task, upstream's and ours: upstream's
    ``BenchmarkExecutor.initialize`` with its MCP client's ``connect``/``list_tools`` answering
    from the tool snapshots (the one edge), then ``SimplePlanGenerator.construct_prompt``;
    ours from ``merge_tools`` on the same snapshots. Recorded: hashes of the filled values."""
    executor_class, config_class, llm_class, orchestrator_class = upstream
    from benchmark import executor as executor_module
    from orchestrators.planner_react import SimplePlanGenerator

    snapshots = load_tool_snapshots(data / "tools")
    raw = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in (data / "tools").glob("*.json")
    }
    by_gym = {doc["gym_name"]: doc["tools"] for doc in raw.values()}
    client = executor_module.MCPClient
    urls: dict[str, str] = {}

    async def connect(self: Any) -> bool:
        return True

    async def list_tools(self: Any) -> list[dict[str, Any]]:
        return [dict(tool) for tool in by_gym[urls[self.base_url]]]

    saved = client.connect, client.list_tools
    client.connect, client.list_tools = connect, list_tools
    results: dict[str, Any] = {}
    pattern = template_pattern(template.prompt)
    try:
        for path in sorted((data / "tasks").rglob("*.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            names = {f.name for f in dataclasses.fields(config_class)}
            config = config_class(**{k: v for k, v in document.items() if k in names})
            for gym in config.gym_servers_config:
                urls[gym["mcp_server_url"].rstrip("/")] = gym["mcp_server_name"]
            llm = llm_class(llm_provider="openai", llm_model="m", llm_api_key="sk-differential")
            executor = executor_class(config, llm, orchestrator_class=orchestrator_class)
            await executor.initialize()
            theirs = SimplePlanGenerator(planner_llm=None).construct_prompt(
                config.system_prompt, config.user_prompt, executor.available_tools
            )
            task = load_task(path)
            tools = merge_tools(task, snapshots).tools
            gym_urls = {g.name: g.url for g in task.gym_servers}
            ours = template.planner_prompt(
                task.system_prompt or "",
                task.user_prompt or "",
                planner_tool_entries(tools, gym_urls),
            )
            found = pattern.fullmatch(ours)
            assert found is not None
            results[task.task_id or path.stem] = {
                "equal": ours == theirs,
                "tools": len(tools),
                "values_sha256": {k: digest(v) for k, v in found.groupdict().items()},
            }
    finally:
        client.connect, client.list_tools = saved
    return results


async def _upstream_run(
    upstream: Any, model: ScriptedModel, gym: LocalGym, script: str, api: str
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
    llm = llm_class(
        llm_provider="openai", llm_model=script, llm_api_key="sk-differential", effort=effort
    )
    executor = executor_class(config, llm, orchestrator_class=orchestrator_class)
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
    return {
        "plan": orchestrator.get_result_metadata().get("generated_plan"),
        "final_answer": result["final_response"],
        "tool_calls": [[r["tool_name"], r["arguments"]] for r in result["tool_results"]],
    }


async def _our_run(
    planner: Planner, model: ScriptedModel, gym: LocalGym, script: str, api: str
) -> Any:
    extra = {"reasoning": {"effort": EFFORT}} if api == "responses" else {}
    settings = ModelSettings(
        model=script,
        base_url=model.base_url,
        api_key="sk-differential",
        api=api,  # type: ignore[arg-type]
        extra_body=extra,
    )
    with tempfile.TemporaryDirectory(prefix="planner-parity-") as out:
        report = await run_evaluation(
            [load_task(demo_paths().task)],
            settings,
            out,
            plan=EvaluationPlan(repeats=1, concurrency=1, preflight=False),
            directory=GymDirectory({gym.name: gym.url}),
            options=RolloutOptions.build(seed_root=demo_paths().directory, planner=planner),
        )
    [record] = report.records
    return {
        "plan": record["plan"],
        "final_answer": record["final_answer"],
        "tool_calls": [
            [c["name"], json.loads(c["arguments"])]
            for t in record["turns"]
            for c in t["tool_calls"]
        ],
    }


def _compare(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[str]:
    return compare_requests(ours, theirs, kept=KEPT)


async def main() -> int:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder:
        sys.exit("set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3")
    template = load_planner_template(folder)
    if not template.known_revision:
        sys.exit(f"{template.source} is not upstream's file at {UPSTREAM_REVISION[:7]}")
    upstream = _import_upstream(folder)
    scenarios: dict[str, Any] = {}
    failed = False
    async with LocalGym.demo() as gym, ScriptedModel() as model:

        def reduced() -> list[dict[str, Any]]:
            bodies = [r["body"] for r in model.requests]
            model.requests.clear()
            return normalise_requests(
                bodies, prompt_template=template.prompt, handoff=template.handoff, gym_url=gym.url
            )

        for script, api in SCENARIOS:
            name = script if api == "chat" else f"{script}@{api}"
            model.requests.clear()
            theirs_run = await _upstream_run(upstream, model, gym, script, api)
            theirs = reduced()
            ours_run = await _our_run(Planner(template), model, gym, script, api)
            ours = reduced()
            problems = _compare(ours, theirs)
            for key in ("plan", "final_answer", "tool_calls"):
                if ours_run[key] != theirs_run[key]:
                    problems.append(f"{key}: ours {ours_run[key]!r}, upstream {theirs_run[key]!r}")
            failed |= bool(problems)
            for line in problems:
                print(f"{name}: {line}", file=sys.stderr)
            scenarios[name] = {
                "equal": not problems,
                "requests": ours,
                "upstream": [{k: v for k, v in r.items() if k != "messages"} for r in theirs],
                "tool_calls": ours_run["tool_calls"],
                "plan_sha256": digest(ours_run["plan"]),
                "final_answer": ours_run["final_answer"],
            }
    data = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))
    shared = (
        await _shared_task_prompts(upstream, template, data) if (data / "tools").is_dir() else {}
    )
    for task_id, outcome in shared.items():
        if not outcome["equal"]:
            failed = True
            print(f"shared task {task_id}: the planner prompts differ", file=sys.stderr)
    document = {
        "upstream_revision": UPSTREAM_REVISION,
        "planner_react_sha256": PLANNER_REACT_SHA256,
        "made_with": {
            name: importlib.metadata.version(name)
            for name in ("langchain-core", "langchain-openai", "openai", "httpx")
        },
        "kept_differences": sorted(KEPT),
        "scenarios": scenarios,
        "shared_task_prompts": shared,
    }
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}: {'DIFFERENCES' if failed else 'requests equal'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
