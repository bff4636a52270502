"""Writing a :class:`Task` back as an upstream task file."""

from __future__ import annotations

from typing import Any

from eog_core.tasks._schema import (
    DatabaseStateCheck,
    GymServer,
    ResponseCheck,
    Task,
    ToolExecutionCheck,
    Verifier,
)

__all__ = ["task_record", "to_upstream"]


def _keep(
    full: dict[str, Any], source_keys: tuple[str, ...] | None, optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``full`` cut down to the keys a record was read with, in their order.

    Built in code (no source keys), keys in ``optional`` are left out when None.
    """
    if source_keys is None:
        return {k: v for k, v in full.items() if not (k in optional and v is None)}
    return {k: full[k] for k in source_keys if k in full}


def _gym_to_mapping(gym: GymServer) -> dict[str, Any]:
    auth = (
        None
        if gym.auth is None
        else {"type": gym.auth.type, "token": gym.auth.token, "header_name": gym.auth.header_name}
    )
    full: dict[str, Any] = {
        "mcp_server_name": gym.name,
        "mcp_server_url": gym.url,
        "seed_database_file": gym.seed_database_file,
        "context": None if gym.null_context else dict(gym.context),
        "user_info": gym.user_info,
        "mcp_endpoint": gym.mcp_endpoint,
        "auth_config": auth,
    }
    full |= {k: v for k, v in gym.extra.items() if k not in full}
    return _keep(
        full, gym.source_keys, ("seed_database_file", "user_info", "mcp_endpoint", "auth_config")
    )


def _config_to_mapping(config: Any) -> dict[str, Any]:
    if isinstance(config, DatabaseStateCheck):
        full = {
            "query": config.query,
            "expected_value": config.expected_value,
            "comparison_type": config.comparison_type,
        }
        if config.source_keys is None:
            keys = [
                k
                for k, given in (
                    ("query", config.query is not None),
                    ("expected_value", config.has_expected_value),
                    ("comparison_type", config.has_comparison_type),
                )
                if given
            ]
            return {k: full[k] for k in keys}
        return _keep(full, config.source_keys)
    if isinstance(config, ResponseCheck):
        return _keep(
            {
                "sql_query": config.sql_query,
                "comparison_prompt": config.comparison_prompt,
                "minimum_comparison_value": config.minimum_comparison_value,
            },
            config.source_keys,
            ("sql_query", "comparison_prompt", "minimum_comparison_value"),
        )
    if isinstance(config, ToolExecutionCheck):
        return _keep(
            {
                "selected_tools": list(config.selected_tools),
                "minimum_tool_calls": config.minimum_tool_calls,
            },
            config.source_keys,
        )
    return dict(config)


def _verifier_to_mapping(verifier: Verifier) -> dict[str, Any]:
    full: dict[str, Any] = {
        "verifier_type": verifier.verifier_type,
        "name": verifier.name,
        "description": verifier.description,
        "gym_name": verifier.gym_name,
    }
    if verifier.has_validation_config:
        full["validation_config"] = _config_to_mapping(verifier.validation_config)
    return _keep(full, verifier.source_keys, ("name", "description", "gym_name"))


def to_upstream(task: Task) -> dict[str, Any]:
    """The task as an upstream task file that upstream's ``load_config`` accepts.

    A task read from a file or row writes back exactly the keys it was read
    with, in their order (``task_id``/``domain``/``mode`` and ``_`` comment
    keys excepted: upstream refuses or ignores them); one built in code
    writes every field. A gym built from legacy top-level keys is written
    back as those keys.
    """
    full: dict[str, Any] = {
        "mcp_endpoint": task.mcp_endpoint,
        "number_of_runs": task.number_of_runs,
        "reset_database_between_runs": task.reset_database_between_runs,
    }
    if not task.gym_from_legacy_keys:
        full["gym_servers_config"] = [_gym_to_mapping(gym) for gym in task.gym_servers]
    full |= task.legacy
    full |= {
        "system_prompt": task.system_prompt,
        "user_prompt": task.user_prompt,
        "selected_tools": None if task.selected_tools is None else list(task.selected_tools),
        "restricted_tools": None if task.restricted_tools is None else list(task.restricted_tools),
        "verifiers": [_verifier_to_mapping(v) for v in task.verifiers],
    }
    written = _keep(full, task.source_keys)
    if "system_prompt" not in written:  # upstream requires it; a row may lack it
        written = {"system_prompt": task.system_prompt} | written
    return written


def task_record(task: Task) -> dict[str, Any]:
    """A task as plain JSON to ship to another worker or process: :func:`to_upstream`
    plus its ``task_id``, ``domain`` and ``mode`` when it has them (``load_task`` reads it)."""
    named = {"task_id": task.task_id, "domain": task.domain, "mode": task.mode}
    return to_upstream(task) | {k: v for k, v in named.items() if v is not None}
