"""The scripted runs of the shared upstream tasks: what the model plays and how ours is run.

Used by ``tests/golden/generators/gen_shared_tasks_parity.py`` (upstream's orchestrators and
ours against :class:`~tests.run.stub_gym.StubGym` and the scripted model) and by
``tests/run/test_shared_tasks_parity.py`` (ours alone, against the golden).

Each task gets its own executor script, named ``shared-<task id>``: a call of the task's first
selected tool, then its next two in parallel, then a final answer naming them. Arguments are
built from each tool's input schema alone (its required properties, or its first property when
none is required; strings carry a non-ASCII letter, so both harnesses' JSON escaping is
compared). The planner, asked with no tools, answers :data:`SHARED_PLAN`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eog_core import Task, load_task
from eog_core.gym import GymDirectory
from eog_core.local import ScriptedModel
from eog_core.local._model import Turn
from eog_core.run import EvaluationPlan, ModelSettings, Planner, RolloutOptions, run_evaluation
from eog_core.tasks import ToolSnapshot, load_tool_snapshots, merge_tools
from tests.run.planner_requests import digest
from tests.run.stub_gym import StubGym

__all__ = [
    "EFFORT",
    "ORCHESTRATORS",
    "RUNS",
    "SHARED_PLAN",
    "StubGyms",
    "our_run",
    "run_name",
    "schema_arguments",
    "script_name",
    "seed_folder",
    "shared_model",
    "shared_scripts",
    "shared_tasks",
    "withhold_prose",
]

ORCHESTRATORS = ("react", "planner_react")
RUNS = tuple((o, api) for api in ("chat", "responses") for o in ORCHESTRATORS)
"""Each task runs under both orchestrators on both APIs (upstream speaks Responses when an
``effort`` is set: both harnesses then send ``reasoning: {"effort": EFFORT}``)."""
EFFORT = "low"
SHARED_PLAN = "PLAN: read what the task names first, then change it, then say what changed."
API_KEY = "sk-differential"


def shared_tasks(data: Path) -> list[tuple[Path, Task]]:
    """The shared upstream task files under ``data/tasks``, sorted by path, loaded."""
    return [(path, load_task(path)) for path in sorted((data / "tasks").rglob("*.json"))]


def script_name(task: Task) -> str:
    return f"shared-{task.task_id}"


def run_name(task: Task, orchestrator: str, api: str) -> str:
    """The golden's key of one run: ``<task id>/<orchestrator>``, ``@responses`` on that API."""
    return f"{task.task_id}/{orchestrator}" + ("" if api == "chat" else f"@{api}")


def _value(name: str, schema: Mapping[str, Any]) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "integer":
        return 7
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "array":
        items = schema.get("items")
        return [_value(name, items)] if isinstance(items, Mapping) else []
    if kind == "object":
        return schema_arguments(schema)
    return f"{name} é"


def schema_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Simple arguments satisfying ``schema``: its required properties (else its first one)."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    names = list(schema.get("required") or ()) or list(properties)[:1]
    return {name: _value(name, properties.get(name) or {}) for name in names}


def shared_scripts(
    tasks: Sequence[Task], snapshots: Mapping[str, ToolSnapshot]
) -> dict[str, list[Turn]]:
    """Each task's executor script (the module says what it plays)."""
    scripts: dict[str, list[Turn]] = {}
    for task in tasks:
        tools = {tool.name: tool for tool in merge_tools(task, snapshots).tools}
        chosen = [tools[name] for name in task.selected_tools or () if name in tools]
        chosen = chosen or list(tools.values())
        calls: list[dict[str, Any]] = [
            {"name": t.name, "arguments": schema_arguments(t.input_schema)} for t in chosen
        ]
        turns: list[Turn] = [calls[:1]]
        if calls[1:3]:
            turns.append(calls[1:3])
        names = ", ".join(t.name for t in chosen[:3])
        turns.append(f"Done: called {names}.")
        scripts[script_name(task)] = turns
    return scripts


def shared_model(data: Path) -> ScriptedModel:
    """The scripted model of the shared tasks (enter it to serve)."""
    snapshots = load_tool_snapshots(data / "tools")
    tasks = [task for _, task in shared_tasks(data)]
    return ScriptedModel(
        scripts=shared_scripts(tasks, snapshots),
        plans={"shared-plan": SHARED_PLAN},
        default_plan="shared-plan",
    )


def withhold_prose(requests: list[dict[str, Any]], task: Task) -> list[dict[str, Any]]:
    """Reduced requests (``normalise_requests``) with the task's system and user prompts, as
    message contents, replaced by their sha256: the golden keeps no task prose."""
    prose = {task.system_prompt, task.user_prompt} - {None, ""}
    for request in requests:
        for message in request["messages"]:
            if isinstance(message.get("content"), str) and message["content"] in prose:
                message["content"] = {"prose_sha256": digest(message["content"])}
    return requests


def seed_folder(folder: Path, tasks: Sequence[Task]) -> Path:
    """``folder`` holding a stand-in SQL file at every seed path the tasks name (the stub gym
    keeps the database id and never runs the SQL)."""
    for task in tasks:
        for gym in task.gym_servers:
            path = folder / (gym.seed_database_file or "")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("-- a stand-in seed: the stub gym does not run it\n", encoding="utf-8")
    return folder


class StubGyms:
    """One :class:`StubGym` per tool snapshot in ``data/tools``, by gym name."""

    def __init__(self, data: Path) -> None:
        self.gyms = {
            gym.name: gym
            for gym in (StubGym.from_snapshot(p) for p in sorted((data / "tools").glob("*.json")))
        }

    async def __aenter__(self) -> StubGyms:
        started: list[StubGym] = []
        try:
            for gym in self.gyms.values():
                await gym.__aenter__()
                started.append(gym)
        except BaseException:
            for gym in reversed(started):
                await gym.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for gym in reversed(self.gyms.values()):
            await gym.__aexit__(None, None, None)

    def directory(self) -> GymDirectory:
        return GymDirectory({name: gym.url for name, gym in self.gyms.items()})

    def take_calls(self, task: Task) -> list[dict[str, Any]]:
        """The calls the task's gyms received since the last take, then forgotten."""
        calls = []
        for server in task.gym_servers:
            gym = self.gyms[server.name]
            calls += [{"gym": gym.name, **call} for call in gym.calls]
            gym.calls.clear()
        return calls


async def our_run(
    task: Task,
    model: ScriptedModel,
    gyms: StubGyms,
    seed_root: Path,
    planner: Planner | None,
    api: str = "chat",
) -> dict[str, Any]:
    """Our rollout of ``task`` (``planner_react`` when a planner is given): what it recorded."""
    settings = ModelSettings(
        model=script_name(task),
        base_url=model.base_url,
        api_key=API_KEY,
        api=api,  # type: ignore[arg-type]
        extra_body={"reasoning": {"effort": EFFORT}} if api == "responses" else {},
    )
    with tempfile.TemporaryDirectory(prefix="shared-parity-") as out:
        report = await run_evaluation(
            [task],
            settings,
            out,
            plan=EvaluationPlan(repeats=1, concurrency=1, preflight=False),
            directory=gyms.directory(),
            options=RolloutOptions.build(seed_root=seed_root, planner=planner, rollout_retries=0),
        )
    [record] = report.records
    return {
        "plan": record.get("plan"),
        "final_answer": record["final_answer"],
        "tool_calls": [
            [c["name"], json.loads(c["arguments"])]
            for t in record["turns"]
            for c in t["tool_calls"]
        ],
    }
