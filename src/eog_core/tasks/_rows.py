"""Tasks as NeMo Gym dataset rows (the shape ``eog-core convert`` writes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eog_core.tasks._formats import LEGACY_KEYS
from eog_core.tasks._schema import MISSING_MODE, Task
from eog_core.tasks._tools import ToolSet, ToolSnapshot, merge_tools
from eog_core.tasks._write import to_upstream

__all__ = ["to_nemo_row"]


def to_nemo_row(task: Task, tools: Mapping[str, ToolSnapshot] | ToolSet) -> dict[str, Any]:
    """One NeMo Gym row: ``responses_create_params`` (system + user messages, the task's
    tools as Responses-API function tools) and ``verifier_metadata`` (what a resources
    server needs to seed, route and verify: gyms, verifiers, tool selection, tool -> gym).

    ``tools`` is a tool snapshot per gym (merged, filtered and restricted for the
    task here) or a :class:`ToolSet` already merged. ``load_task`` reads the row back.
    A legacy single-gym task (gym given by top-level ``mcp_server_url``,
    ``database_id``, ``context``...) keeps those keys in ``verifier_metadata``
    instead of a ``gym_servers_config``, so it reads back as the same task.
    """
    toolset = tools if isinstance(tools, ToolSet) else merge_tools(task, tools)
    upstream = to_upstream(task)
    if "gym_servers_config" in upstream or not task.gym_servers:
        gyms: dict[str, Any] = {"gym_servers_config": upstream.get("gym_servers_config", [])}
    else:
        gyms = {key: value for key, value in upstream.items() if key in LEGACY_KEYS}
    return {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": task.system_prompt, "type": "message"},
                {"role": "user", "content": task.user_prompt, "type": "message"},
            ],
            "tools": toolset.responses_tools(),
        },
        "verifier_metadata": {
            "task_id": task.task_id,
            "domain": task.domain,
            "mode": task.mode or MISSING_MODE,
            **gyms,
            "verifiers": upstream.get("verifiers", []),
            "selected_tools": upstream.get("selected_tools"),
            "restricted_tools": upstream.get("restricted_tools"),
            "tool_to_gym": {tool.name: tool.gym for tool in toolset.tools},
        },
    }
