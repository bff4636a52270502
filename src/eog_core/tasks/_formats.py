"""The three task formats normalised to one, then read as a :class:`Task`.

Formats: an upstream task JSON object, a dataset row (``verifiers`` and
``gym_servers_config`` as JSON strings, plus ``task_id``/``domain``/``mode``)
and a NeMo Gym row (``verifier_metadata`` + ``responses_create_params``; rollout
records add fields that are ignored). Upstream's rules are kept: keys starting
with ``_`` are ignored, legacy and dead keys are accepted; any other
malformation raises :class:`SchemaError` naming the JSON path and the source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from eog_core._json import check_depth, decode_json
from eog_core.errors import SchemaError
from eog_core.tasks._convert import _json_type, _same_path, _strip_private, structure_or_raise
from eog_core.tasks._schema import Task

__all__ = ["LEGACY_KEYS", "task_from_mapping"]

TASK_KEYS = frozenset(
    {
        "system_prompt",
        "user_prompt",
        "gym_servers_config",
        "verifiers",
        "selected_tools",
        "restricted_tools",
        "mcp_endpoint",
        "number_of_runs",
        "reset_database_between_runs",
    }
)
ROW_KEYS = frozenset({"task_id", "domain", "mode"})
LEGACY_KEYS = frozenset(
    {
        "mcp_server_url",
        "database_id",
        "context",
        "auth_config",
        "seed_database_file",
        "temperature",
        "max_tokens",
    }
)
LEGACY_GYM_NAME = "default_gym"
#: ``verifier_metadata`` keys a NeMo row carries that are not task keys (derived, ignored on reading).
NEMO_ONLY_KEYS = frozenset({"tool_to_gym"})


def _decode_json_field(obj: dict[str, Any], key: str, source: str | None) -> None:
    value = obj.get(key)
    if isinstance(value, str):
        try:
            obj[key] = decode_json(value, path=f"$.{key}", source=source)
        except SchemaError as exc:
            raise SchemaError(
                f"not a valid JSON string ({exc.reason})", path=f"$.{key}", source=source
            ) from exc


def _prompts_from_input(params: Any, source: str | None) -> dict[str, str]:
    if not isinstance(params, dict) or not isinstance(params.get("input"), list):
        raise SchemaError(
            "expected responses_create_params.input to be an array of messages",
            path="$.responses_create_params.input",
            source=source,
        )
    prompts: dict[str, str] = {}
    for index, message in enumerate(params["input"]):
        where = f"$.responses_create_params.input[{index}]"
        if not isinstance(message, dict):
            raise SchemaError("expected a message object", path=where, source=source)
        role, content = message.get("role"), message.get("content")
        if isinstance(content, list):  # content parts: [{"type": "input_text", "text": ...}]
            texts = [part.get("text") for part in content if isinstance(part, dict)]
            if not all(isinstance(text, str) for text in texts):
                raise SchemaError(
                    "expected every content part to carry a string text",
                    path=f"{where}.content",
                    source=source,
                )
            content = "".join(str(text) for text in texts)
        if not isinstance(content, str):
            raise SchemaError(
                "expected message content to be a string", path=f"{where}.content", source=source
            )
        key = {"system": "system_prompt", "developer": "system_prompt", "user": "user_prompt"}.get(
            str(role)
        )
        if key and key not in prompts:
            prompts[key] = content
    return prompts


def _nemo_to_upstream(
    obj: Mapping[str, Any], source: str | None
) -> tuple[dict[str, Any], Callable[[str], str]]:
    meta = obj["verifier_metadata"]
    if not isinstance(meta, dict):
        raise SchemaError("expected an object", path="$.verifier_metadata", source=source)
    meta = _strip_private(meta)
    unknown = sorted(set(meta) - TASK_KEYS - ROW_KEYS - LEGACY_KEYS - NEMO_ONLY_KEYS, key=str)
    if unknown:  # a typo'd "verifers" must not load as a task with no verifiers
        raise SchemaError(
            f"unknown key {unknown[0]!r} in verifier_metadata",
            path=f"$.verifier_metadata.{unknown[0]}",
            source=source,
        )
    merged: dict[str, Any] = {k: v for k, v in meta.items() if k not in NEMO_ONLY_KEYS}
    merged.update(_prompts_from_input(obj.get("responses_create_params"), source))
    if "user_prompt" not in merged:
        raise SchemaError(
            "no user message in responses_create_params.input",
            path="$.responses_create_params.input",
            source=source,
        )
    meta_keys = set(meta)

    def remap(path: str) -> str:
        head = path[2:].split(".", 1)[0].split("[", 1)[0]
        if head in meta_keys:
            return "$.verifier_metadata" + path[1:]
        if head in ("system_prompt", "user_prompt"):
            return "$.responses_create_params.input"
        return path

    return merged, remap


def task_from_mapping(obj: Mapping[str, Any], *, source: str | None = None) -> Task:
    """Read a task from any of the three formats, or raise :class:`SchemaError`."""
    if not isinstance(obj, Mapping):
        raise SchemaError(f"expected a task object, got {_json_type(obj)}", source=source)
    remap: Callable[[str], str] = _same_path
    source_keys: tuple[str, ...] | None = None
    if "verifier_metadata" in obj:
        data, remap = _nemo_to_upstream(obj, source)
    else:
        data = _strip_private(obj)
        source_keys = tuple(data)
        unknown = sorted(set(data) - TASK_KEYS - ROW_KEYS - LEGACY_KEYS, key=str)
        if unknown:
            raise SchemaError(
                f"unknown key {unknown[0]!r} (upstream drops such a task silently)",
                path=f"$.{unknown[0]}",
                source=source,
            )
    for key in ("verifiers", "gym_servers_config"):
        _decode_json_field(data, key, source)
    check_depth(data, source=source)
    legacy = {k: data.pop(k) for k in LEGACY_KEYS & set(data)}
    gym_keys = {k: data[k] for k in ("gym_servers_config",) if k in data}
    gym_from_legacy_keys = not data.get("gym_servers_config") and "mcp_server_url" in legacy
    if gym_from_legacy_keys:
        data["gym_servers_config"] = [_legacy_gym(legacy)]
        remap = _legacy_remap(remap)
    task = structure_or_raise(data, Task, source=source, remap=remap)
    _require_gyms(gym_keys, legacy, source, remap)
    _refuse_duplicate_gyms(task, source, remap)
    return attrs.evolve(
        task, legacy=legacy, source_keys=source_keys, gym_from_legacy_keys=gym_from_legacy_keys
    )


def _require_gyms(
    data: Mapping[str, Any],
    legacy: Mapping[str, Any],
    source: str | None,
    remap: Callable[[str], str],
) -> None:
    """The gym settings upstream's ``load_config`` insists on (the ones we insist on too)."""
    if data.get("gym_servers_config") == []:
        raise SchemaError(
            "no gym servers (upstream refuses an empty gym_servers_config)",
            path=remap("$.gym_servers_config"),
            source=source,
        )
    # No gym settings at all, or a legacy mcp_server_url without database_id, loads
    # (upstream refuses such a file): docs/parity.md, "Deliberate differences".


def _refuse_duplicate_gyms(task: Task, source: str | None, remap: Callable[[str], str]) -> None:
    """Two gyms of one name: upstream silently mixes their settings, so the task is refused."""
    first: dict[str, int] = {}
    for index, gym in enumerate(task.gym_servers):
        if gym.name in first:
            where = remap(f"$.gym_servers_config[{first[gym.name]}].mcp_server_name")
            raise SchemaError(
                f"duplicate gym name {gym.name!r}, first at {where} (upstream would run the "
                "last gym's client with the first gym's context)",
                path=remap(f"$.gym_servers_config[{index}].mcp_server_name"),
                source=source,
            )
        first[gym.name] = index


_LEGACY_PATH = re.compile(
    r"^\$\.gym_servers_config\[0\]\.(mcp_server_url|seed_database_file|context|auth_config)"
)


def _legacy_remap(inner: Callable[[str], str]) -> Callable[[str], str]:
    """Errors in the gym built from legacy top-level keys point at those keys."""
    return lambda path: inner(_LEGACY_PATH.sub(r"$.\1", path))


def _legacy_gym(legacy: Mapping[str, Any]) -> dict[str, Any]:
    gym: dict[str, Any] = {
        "mcp_server_name": LEGACY_GYM_NAME,
        "mcp_server_url": legacy["mcp_server_url"],
    }
    for key in ("seed_database_file", "context", "auth_config"):
        if legacy.get(key) is not None:
            gym[key] = legacy[key]
    return gym
