"""The orchestrators' differential on the 13 shared upstream tasks, request by request.

    EOG_UPSTREAM_DIR=/path/to/EnterpriseOps-Gym EOG_DATA_DIR=/path/to/eog-data \\
        python tests/golden/generators/gen_shared_tasks_parity.py

(``nox -s planner_parity`` installs upstream's LangChain dependencies and runs it after
``gen_planner_parity.py``.) For each task file under ``EOG_DATA_DIR/tasks`` and each of
``react`` (upstream's ``ReactOrchestrator``), ``planner_react`` (its
``PlannerReactOrchestrator``) and ``decomposing`` (its ``DecomposingPlannerOrchestrator``, as
``gen_decomposing_parity.py`` drives it), upstream runs unmodified as ``gen_planner_parity.py`` runs it
(``BenchmarkExecutor.initialize``: MCP handshake and tool discovery over its own ``MCPClient``,
its ``LLMClient`` with LangChain's ``ChatOpenAI``; then the orchestrator as
``execute_single_run`` builds it; the database seeded by eog_core), and ours by
``run_evaluation``. Both talk to the same stub gyms (``tests/run/stub_gym.py``: the tool
snapshots of ``EOG_DATA_DIR/tools`` listed as they are, calls echoed) and the same scripted
model (``tests/run/shared_tasks.py``: per task, three of its own tools called with arguments
built from their schemas, then an answer; under ``decomposing`` two subtasks, the first call
then the parallel pair).

Compared per task and orchestrator: every model request (reduced by
``tests/run/planner_requests.py``, ``decomposing``'s by ``tests/run/decomposing_requests.py``),
the tool calls and the headers the gym received, the plan, each subtask's result and the final
answer. Written to ``tests/golden/shared_tasks_parity.json`` with hashes and our reduced
requests (upstream's texts replaced by hashes of what was filled in), which
``tests/run/test_shared_tasks_parity.py`` replays without upstream. Exit 1 on a difference
not in ``KEPT``.
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
OUT = REPO / "tests" / "golden" / "shared_tasks_parity.json"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.run.planner_requests import compare_requests, normalise_requests  # noqa: E402
from tests.run.shared_tasks import (  # noqa: E402
    EFFORT,
    RUNS,
    StubGyms,
    kept_outcome,
    normalise_shared_decomposing,
    our_run,
    planner_for,
    run_name,
    script_name,
    seed_folder,
    shared_model,
    shared_tasks,
    withhold_prose,
)

from eog_core.gym import TaskSession  # noqa: E402
from eog_core.local import ScriptedModel  # noqa: E402
from eog_core.run import (  # noqa: E402
    DECOMPOSING_SHA256,
    PLANNER_REACT_SHA256,
    UPSTREAM_REVISION,
    DecomposingTemplate,
    PlannerTemplate,
    load_decomposing_template,
    load_planner_template,
)
from eog_core.tasks import Task  # noqa: E402

KEPT = {"stream"}
"""Request fields allowed to differ (docs/parity.md, "planner_react"): LangChain sends
``stream: false``, the default, which we leave out."""


def _import_upstream(folder: str) -> Any:
    sys.path.insert(0, folder)
    from benchmark.executor import BenchmarkExecutor
    from benchmark.models import BenchmarkConfig, LLMConfig
    from orchestrators.decomposing_planner import DecomposingPlannerOrchestrator
    from orchestrators.planner_react import PlannerReactOrchestrator
    from orchestrators.react import ReactOrchestrator

    return (
        BenchmarkExecutor,
        BenchmarkConfig,
        LLMConfig,
        {
            "react": ReactOrchestrator,
            "planner_react": PlannerReactOrchestrator,
            "decomposing": DecomposingPlannerOrchestrator,
        },
    )


async def _upstream_run(
    upstream: Any,
    orchestrator: str,
    api: str,
    model: ScriptedModel,
    gyms: StubGyms,
    document: dict[str, Any],
    task: Task,
    seed_root: Path,
) -> dict[str, Any]:
    executor_class, config_class, llm_class, orchestrators = upstream
    names = {f.name for f in dataclasses.fields(config_class)}
    config = config_class(**{k: v for k, v in document.items() if k in names})
    config.gym_servers_config = [
        {**g, "mcp_server_url": gyms.gyms[g["mcp_server_name"]].url}
        for g in config.gym_servers_config
    ]
    os.environ["OPENAI_BASE_URL"] = model.base_url  # the openai provider's ChatOpenAI reads it
    llm = llm_class(
        llm_provider="openai",
        llm_model=script_name(task),
        llm_api_key="sk-differential",
        effort=EFFORT if api == "responses" else None,
    )
    executor = executor_class(config, llm, orchestrator_class=orchestrators[orchestrator])
    async with TaskSession.start(task, directory=gyms.directory(), seed_root=seed_root) as session:
        await executor.initialize()
        for name, client in executor.mcp_clients.items():
            client.database_id = session.database_ids[name]
        runner = executor.orchestrator_class(
            llm_client=executor.llm_client,
            mcp_clients=executor.mcp_clients,
            tool_to_server_mapping=executor.tool_to_server_mapping,
            available_tools=executor.available_tools,
            config=executor.config,
            **executor.orchestrator_kwargs,
        )
        result = await runner.execute()
    outcome = getattr(runner, "_orchestration_result", None)  # decomposing's
    return {
        "plan": runner.get_result_metadata().get("generated_plan")
        if outcome is None
        else outcome.plan,
        "final_answer": result["final_response"],
        "tool_calls": [[r["tool_name"], r["arguments"]] for r in result["tool_results"]],
        "results": []
        if outcome is None
        else [
            {
                "success": r.success,
                "summary": r.summary,
                "error": r.error,
                "memory": r.structured_output,
            }
            for r in outcome.subtask_results
        ],
    }


def _read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _compare(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[str]:
    return compare_requests(ours, theirs, kept=KEPT)


async def main() -> int:
    folder = os.environ.get("EOG_UPSTREAM_DIR")
    if not folder:
        sys.exit("set EOG_UPSTREAM_DIR to a checkout of ServiceNow/EnterpriseOps-Gym @271f2c3")
    data = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))
    if not (data / "tools").is_dir():
        sys.exit(f"no shared data at {data}: set EOG_DATA_DIR to the eog-data folder")
    template: PlannerTemplate = load_planner_template(folder)
    decomposing: DecomposingTemplate = load_decomposing_template(folder)
    for known in (template, decomposing):
        if not known.known_revision:
            sys.exit(f"{known.source} is not upstream's file at {UPSTREAM_REVISION[:7]}")
    upstream = _import_upstream(folder)
    tasks = shared_tasks(data)
    results: dict[str, Any] = {}
    failed = False
    with tempfile.TemporaryDirectory(prefix="shared-seeds-") as seeds:
        seed_root = seed_folder(Path(seeds), [task for _, task in tasks])
        async with StubGyms(data) as gyms, shared_model(data) as model:
            for path, task in tasks:
                gym_url = gyms.gyms[task.gym_servers[0].name].url

                def reduced(orchestrator: str, url: str = gym_url) -> list[dict[str, Any]]:
                    bodies = [r["body"] for r in model.requests]
                    model.requests.clear()
                    if orchestrator == "decomposing":
                        return normalise_shared_decomposing(
                            bodies, template=decomposing, gym_url=url
                        )
                    return normalise_requests(
                        bodies,
                        prompt_template=template.prompt,
                        handoff=template.handoff,
                        gym_url=url,
                    )

                for orchestrator, api in RUNS:
                    name = run_name(task, orchestrator, api)
                    model.requests.clear()
                    gyms.take_calls(task)
                    theirs_run = await _upstream_run(
                        upstream, orchestrator, api, model, gyms, _read(path), task, seed_root
                    )
                    theirs, their_calls = reduced(orchestrator), gyms.take_calls(task)
                    planner = planner_for(orchestrator, template, decomposing)
                    ours_run = await our_run(task, model, gyms, seed_root, planner, api)
                    ours, our_calls = reduced(orchestrator), gyms.take_calls(task)
                    problems = _compare(ours, theirs)
                    for key in ("plan", "final_answer", "tool_calls", "results"):
                        if ours_run[key] != theirs_run[key]:
                            problems.append(
                                f"{key}: ours {ours_run[key]!r}, upstream {theirs_run[key]!r}"
                            )
                    if our_calls != their_calls:
                        problems.append(f"gym calls: ours {our_calls}, upstream {their_calls}")
                    failed |= bool(problems)
                    for line in problems:
                        print(f"{name}: {line}", file=sys.stderr)
                    results[name] = {
                        "equal": not problems,
                        "requests": withhold_prose(ours, task),
                        "upstream": [
                            {k: v for k, v in r.items() if k != "messages"} for r in theirs
                        ],
                        "tool_calls": ours_run["tool_calls"],
                        "gym_calls": our_calls,
                        **kept_outcome(orchestrator, decomposing, ours_run),
                    }
    document = {
        "upstream_revision": UPSTREAM_REVISION,
        "planner_react_sha256": PLANNER_REACT_SHA256,
        "decomposing_planner_sha256": DECOMPOSING_SHA256,
        "made_with": {
            name: importlib.metadata.version(name)
            for name in ("langchain-core", "langchain-openai", "openai", "httpx")
        },
        "kept_differences": sorted(KEPT),
        "tasks": len(tasks),
        "runs": results,
    }
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}: {'DIFFERENCES' if failed else 'requests equal'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
