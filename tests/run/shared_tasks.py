"""The scripted runs of the shared upstream tasks: what the model plays and how ours is run.

Used by ``tests/golden/generators/gen_shared_tasks_parity.py`` (upstream's orchestrators and
ours against :class:`~tests.run.stub_gym.StubGym` and the scripted model) and by
``tests/run/test_shared_tasks_parity.py`` (ours alone, against the golden).

Each task gets its own executor script, named ``shared-<task id>``: a call of the task's first
selected tool, then its next two in parallel, then a final answer naming them. Arguments are
built from each tool's input schema alone (its required properties, or its first property when
none is required; strings carry a non-ASCII letter, so both harnesses' JSON escaping is
compared). The planner, asked with no tools, answers :data:`SHARED_PLAN`; ``decomposing``'s
planner answers :data:`SHARED_DECOMPOSITION` (two subtasks, ``[part 1]`` and ``[part 2]``),
whose sub-agents play the script cut in two (``shared-<task id>#1``: the first call, ``#2``:
the parallel pair, each then a summary) and whose memory questions are answered ``{}``.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eog_core import Task, load_task
from eog_core.gym import GymDirectory
from eog_core.local import ScriptedModel
from eog_core.local._model import Turn
from eog_core.run import (
    Decomposer,
    DecomposingTemplate,
    EvaluationPlan,
    ModelSettings,
    Planner,
    PlannerTemplate,
    RolloutOptions,
    run_evaluation,
)
from eog_core.tasks import ToolSnapshot, load_tool_snapshots, merge_tools
from tests.run.decomposing_requests import (
    _first_literal,
    _Pattern,
    normalise_decomposing,
    our_outcome,
    reduced_outcome,
)
from tests.run.planner_requests import digest, template_pattern
from tests.run.stub_gym import StubGym

__all__ = [
    "EFFORT",
    "ORCHESTRATORS",
    "RUNS",
    "SHARED_DECOMPOSITION",
    "SHARED_PLAN",
    "StubGyms",
    "kept_outcome",
    "normalise_shared_decomposing",
    "our_run",
    "planner_for",
    "run_name",
    "schema_arguments",
    "script_name",
    "seed_folder",
    "shared_model",
    "shared_scripts",
    "shared_tasks",
    "withhold_prose",
]

ORCHESTRATORS = ("react", "planner_react", "decomposing")
RUNS = tuple((o, api) for api in ("chat", "responses") for o in ORCHESTRATORS)
"""Each task runs under the three orchestrators on both APIs (upstream speaks Responses when an
``effort`` is set: both harnesses then send ``reasoning: {"effort": EFFORT}``)."""
EFFORT = "low"
SHARED_PLAN = "PLAN: read what the task names first, then change it, then say what changed."


def _subtask(number: int, title: str, does: str, after: list[int]) -> dict[str, Any]:
    return {
        "id": number,
        "title": f"{title} [part {number}]",
        "description": does,
        "rationale": "The task cannot be done without it.",
        "dependencies": after,
        "required_tools": [],
        "expected_outcome": f"{title}: done, and said so.",
    }


SHARED_DECOMPOSITION: dict[str, Any] = {
    "strategic_plan": "Look first, then make the two changes the task asks for, in that order.",
    "rationale": "The changes rest on what the first look finds.",
    "subtasks": [
        _subtask(1, "Look up what the task names", "Call the first tool the task needs.", []),
        _subtask(2, "Make the changes", "Call the next two tools together.", [1]),
    ],
}
"""The decomposition every shared task's ``decomposing`` planner answers (our own words; the
sub-agents get every tool whatever ``required_tools`` says, in both harnesses)."""
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
        for part, cut in enumerate((calls[:1], calls[1:3]), start=1):
            called = ", ".join(call["name"] for call in cut)
            scripts[f"{script_name(task)}#{part}"] = [cut, f"Part {part} done: called {called}."]
    return scripts


def shared_model(data: Path) -> ScriptedModel:
    """The scripted model of the shared tasks (enter it to serve)."""
    snapshots = load_tool_snapshots(data / "tools")
    tasks = [task for _, task in shared_tasks(data)]
    decomposition = f"The subtasks:\n```json\n{json.dumps(SHARED_DECOMPOSITION, indent=2)}\n```"
    return ScriptedModel(
        scripts=shared_scripts(tasks, snapshots),
        plans={"shared-plan": SHARED_PLAN, "demo-decomposition": decomposition},
        default_plan="shared-plan",
    )


def planner_for(
    orchestrator: str, template: PlannerTemplate, decomposing: DecomposingTemplate
) -> Planner | Decomposer | None:
    """Our planner for ``orchestrator`` from upstream's two files (``decomposing``'s planner
    model: the executor's, as upstream's without ``--planner_llm_config``)."""
    if orchestrator == "planner_react":
        return Planner(template)
    return Decomposer(decomposing) if orchestrator == "decomposing" else None


def kept_outcome(
    orchestrator: str, decomposing: DecomposingTemplate, outcome: Mapping[str, Any]
) -> dict[str, Any]:
    """What the golden keeps of a run's outcome (``our_outcome``): the tool calls, the plan as
    its sha256 and the final answer; ``decomposing``'s with its subtasks' results and
    upstream's texts reduced to what was filled in (``reduced_outcome``)."""
    if orchestrator == "decomposing":
        return reduced_outcome(decomposing, outcome)
    plan = outcome["plan"]
    return {
        "tool_calls": outcome["tool_calls"],
        "plan_sha256": None if plan is None else digest(plan),
        "final_answer": outcome["final_answer"],
    }


def normalise_shared_decomposing(
    bodies: Sequence[Mapping[str, Any]], *, template: DecomposingTemplate, gym_url: str
) -> list[dict[str, Any]]:
    """``normalise_decomposing`` with the planner prompt's tool lines cut where each offered
    tool's line starts (the names the sub-agents are offered, in order). Its own cut, at every
    line starting as a tool line does, also cuts a description holding such a line (upstream's
    ``- ``: a markdown list in a real gym's description) and reduces the pieces to ``None``:
    blind to those tools, and different for the stand-in file, whose lines start otherwise."""
    reduced = normalise_decomposing(bodies, template=template, gym_url=gym_url)
    names = next((r["tool_names"] for r in reduced if r["tool_names"]), [])
    line, head = _Pattern(template.tool_line.node), _first_literal(template.tool_line.node)
    lines = re.compile("\n".join(f"({re.escape(head + n)}.*?)" for n in names), re.S)
    plan = template_pattern(template.decomposition)
    for body, request in zip(bodies, reduced, strict=True):
        if request["role"] != "planner":
            continue
        first = body.get("messages", body.get("input"))[0]["content"]
        prompt = plan.fullmatch(first) if isinstance(first, str) else None
        found = lines.fullmatch(prompt["tools"]) if prompt else None
        if found is not None:
            reduction = request["messages"][0]["content"]["decomposition_prompt"]
            reduction["tools"] = [line.reduce(text, {}) for text in found.groups()]
            request["messages_sha256"] = digest(request["messages"])
    return reduced


def withhold_prose(requests: list[dict[str, Any]], task: Task) -> list[dict[str, Any]]:
    """Reduced requests (``normalise_requests``, ``normalise_decomposing``) with the task's
    system and user prompts, as message contents, replaced by their sha256: the golden keeps
    no task prose."""
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
    planner: Planner | Decomposer | None,
    api: str = "chat",
) -> dict[str, Any]:
    """Our rollout of ``task`` (``planner_react`` or ``decomposing`` by the planner given):
    what the differential compares of its record (``our_outcome``)."""
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
    return our_outcome(record)
