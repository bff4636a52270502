"""Reading and writing the three task formats with one cattrs converter.

Formats: an upstream task JSON object, a dataset row (``verifiers`` and
``gym_servers_config`` as JSON strings, plus ``task_id``/``domain``/``mode``)
and a NeMo Gym row (``verifier_metadata`` + ``responses_create_params``; rollout
records add fields that are ignored). Upstream's rules are kept: keys starting
with ``_`` are ignored, legacy and dead keys are accepted; any other
malformation raises :class:`SchemaError` naming the JSON path and the source.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, override

from eog_core._json import check_depth, decode_json
from eog_core.errors import SchemaError
from eog_core.tasks._schema import (
    AuthConfig,
    DatabaseStateCheck,
    DatabaseStateVerifier,
    GymServer,
    ResponseCheck,
    ResponseCheckVerifier,
    Task,
    ToolExecutionCheck,
    ToolExecutionVerifier,
    UnknownVerifier,
    Verifier,
)

__all__ = ["make_converter", "structure_or_raise", "task_from_mapping", "task_to_mapping"]

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
    {"mcp_server_url", "database_id", "context", "auth_config", "seed_database_file",
     "temperature", "max_tokens"}
)
LEGACY_GYM_NAME = "default_gym"
#: ``verifier_metadata`` keys a NeMo row carries that are not task keys (derived, ignored on reading).
NEMO_ONLY_KEYS = frozenset({"tool_to_gym"})

_VERIFIER_CLASSES: dict[str, type[Any]] = {
    "database_state": DatabaseStateVerifier,
    "response_check": ResponseCheckVerifier,
    "tool_execution": ToolExecutionVerifier,
}


class _Invalid(ValueError):
    """A value of the wrong shape; its message is shown as is."""


def _expect(kind: type | tuple[type, ...], label: str) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _type: Any) -> Any:
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise _Invalid(f"expected {label}, got a boolean")
        if not isinstance(value, kind):
            raise _Invalid(f"expected {label}, got {_json_type(value)}")
        return value

    return hook


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _strip_private(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if not (isinstance(k, str) and k.startswith("_"))}


@cache
def make_converter() -> cattrs.Converter:
    """The converter for task records: strict primitives, closed objects, JSON paths."""
    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    conv.register_structure_hook(str, _expect(str, "a string"))
    conv.register_structure_hook(bool, _expect(bool, "a boolean"))
    conv.register_structure_hook(int, _expect(int, "an integer"))
    conv.register_structure_hook(float, lambda v, _t: float(_expect((int, float), "a number")(v, _t)))
    conv.register_structure_hook(typing.Any, lambda v, _t: v)

    def structure_str_tuple(value: Any, _type: Any) -> tuple[str, ...]:
        if not isinstance(value, list | tuple):
            raise _Invalid(f"expected an array of strings, got {_json_type(value)}")
        for item in value:
            if not isinstance(item, str):
                raise _Invalid(f"expected an array of strings, found {_json_type(item)}")
        return tuple(value)

    conv.register_structure_hook_func(lambda t: t == tuple[str, ...], structure_str_tuple)

    def structure_mapping(value: Any, _type: Any) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise _Invalid(f"expected an object, got {_json_type(value)}")
        return dict(value)

    conv.register_structure_hook_func(lambda t: t == Mapping[str, Any], structure_mapping)

    def structure_optional_number(value: Any, _type: Any) -> int | float | None:
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return value
        raise _Invalid(f"expected a number or null, got {_json_type(value)}")

    conv.register_structure_hook_func(lambda t: t == (int | float | None), structure_optional_number)

    def closed_object(cls: type[Any], *, extra: bool = False, **overrides: Any) -> Callable[[Any, Any], Any]:
        """A hook for ``cls`` that refuses unknown keys (or keeps them in ``extra``)
        and records the keys it was read with in ``source_keys``."""
        fields = {a.name for a in attrs.fields(cls)}
        omitted = {name: override(omit=True)
                   for name in ("source_keys", "extra", "null_context", "has_validation_config",
                                "has_expected_value", "has_comparison_type") if name in fields}
        generated = make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True,
                                           **(omitted | overrides))
        wire = {getattr(overrides.get(a.name), "rename", None) or a.name
                for a in attrs.fields(cls) if a.name not in omitted}

        def hook(value: Any, _type: Any) -> Any:
            if not isinstance(value, dict):
                raise _Invalid(f"expected an object, got {_json_type(value)}")
            data = _strip_private(value)
            changes: dict[str, Any] = {"source_keys": tuple(data)} if "source_keys" in fields else {}
            if extra:
                changes["extra"] = {k: v for k, v in data.items() if k not in wire}
                data = {k: v for k, v in data.items() if k in wire}
            return attrs.evolve(generated(data, cls), **changes)

        return hook

    conv.register_structure_hook(AuthConfig, closed_object(AuthConfig))
    gym_hook = closed_object(
        GymServer, extra=True,
        name=override(rename="mcp_server_name"),
        url=override(rename="mcp_server_url"),
        auth=override(rename="auth_config"),
    )

    def structure_gym(value: Any, _type: Any) -> GymServer:
        if isinstance(value, dict) and "context" in value and value["context"] is None:
            gym: GymServer = gym_hook(value | {"context": {}}, _type)  # keeps the key's position
            return attrs.evolve(gym, null_context=True)
        return gym_hook(value, _type)  # type: ignore[no-any-return]

    conv.register_structure_hook(GymServer, structure_gym)
    db_check = closed_object(DatabaseStateCheck)

    def structure_db_check(value: Any, _type: Any) -> DatabaseStateCheck:
        check: DatabaseStateCheck = db_check(value, _type)
        return attrs.evolve(
            check,
            has_expected_value="expected_value" in value,
            has_comparison_type="comparison_type" in value,
        )

    conv.register_structure_hook(DatabaseStateCheck, structure_db_check)
    conv.register_structure_hook(ResponseCheck, closed_object(ResponseCheck))
    conv.register_structure_hook(ToolExecutionCheck, closed_object(ToolExecutionCheck))
    for cls in (*_VERIFIER_CLASSES.values(), UnknownVerifier):
        conv.register_structure_hook(cls, _verifier_hook(closed_object(cls)))

    def structure_verifier(value: Any, _type: Any) -> Verifier:
        if not isinstance(value, dict):
            raise _Invalid(f"expected a verifier object, got {_json_type(value)}")
        kind = value.get("verifier_type")
        if not isinstance(kind, str):
            raise _Invalid("verifier_type is missing or not a string")
        cls = _VERIFIER_CLASSES.get(kind, UnknownVerifier)
        return conv.structure(value, cls)  # type: ignore[no-any-return]

    conv.register_structure_hook_func(lambda t: t == Verifier, structure_verifier)

    def structure_verifiers(value: Any, _type: Any) -> tuple[Verifier, ...]:
        if not isinstance(value, list):
            raise _Invalid(f"expected an array of verifiers, got {_json_type(value)}")
        return tuple(conv.structure(value, list[Verifier]))

    conv.register_structure_hook_func(lambda t: t == tuple[Verifier, ...], structure_verifiers)

    def structure_gyms(value: Any, _type: Any) -> tuple[GymServer, ...]:
        if not isinstance(value, list):
            raise _Invalid(f"expected an array of gym servers, got {_json_type(value)}")
        return tuple(conv.structure(value, list[GymServer]))

    conv.register_structure_hook_func(lambda t: t == tuple[GymServer, ...], structure_gyms)
    conv.register_structure_hook(
        Task,
        closed_object(
            Task,
            gym_servers=override(rename="gym_servers_config"),
            legacy=override(omit=True),
        ),
    )
    return conv


_GYM_WIRE_NAMES = {"name": "mcp_server_name", "url": "mcp_server_url", "auth": "auth_config"}
_GYM_PATH = re.compile(r"^\$\.gym_servers(\[\d+\])?(?:\.(name|url|auth)\b)?")


def _wire_path(path: str) -> str:
    """Attribute names in a cattrs path -> the JSON keys of the task file."""

    def rename(match: re.Match[str]) -> str:
        index, attr = match.group(1) or "", match.group(2)
        return f"$.gym_servers_config{index}" + (f".{_GYM_WIRE_NAMES[attr]}" if attr else "")

    return _GYM_PATH.sub(rename, path)


def _verifier_hook(inner: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A verifier without ``validation_config`` loads (upstream fails its run, parity reports that)."""

    def hook(value: Any, _type: Any) -> Any:
        if isinstance(value, dict) and "validation_config" not in value:
            verifier = inner(value | {"validation_config": {}}, _type)
            keys = tuple(k for k in verifier.source_keys if k != "validation_config")
            return attrs.evolve(verifier, has_validation_config=False, source_keys=keys)
        return inner(value, _type)

    return hook


def _format_exception(exc: BaseException, type_: type | None) -> str:
    if isinstance(exc, _Invalid):
        return str(exc)
    if type_ is not None and typing.get_origin(type_) is typing.Literal:
        allowed = ", ".join(repr(v) for v in typing.get_args(type_))
        return f"expected one of {allowed}"
    return cattrs.v.format_exception(exc, type_)


def _raise_schema_error(exc: Exception, source: str | None, remap: Callable[[str], str]) -> None:
    messages = cattrs.transform_error(exc, path="$", format_exception=_format_exception)
    first = messages[0] if messages else str(exc)
    message, _, path = first.rpartition(" @ ")
    if not message:
        message, path = first, "$"
    more = f" (and {len(messages) - 1} more problem(s))" if len(messages) > 1 else ""
    raise SchemaError(message + more, path=remap(_wire_path(path)), source=source) from exc


def _decode_json_field(obj: dict[str, Any], key: str, source: str | None) -> None:
    value = obj.get(key)
    if isinstance(value, str):
        try:
            obj[key] = decode_json(value, path=f"$.{key}", source=source)
        except SchemaError as exc:
            raise SchemaError(f"not a valid JSON string ({exc.reason})", path=f"$.{key}",
                              source=source) from exc


def _prompts_from_input(params: Any, source: str | None) -> dict[str, str]:
    if not isinstance(params, dict) or not isinstance(params.get("input"), list):
        raise SchemaError("expected responses_create_params.input to be an array of messages",
                          path="$.responses_create_params.input", source=source)
    prompts: dict[str, str] = {}
    for index, message in enumerate(params["input"]):
        where = f"$.responses_create_params.input[{index}]"
        if not isinstance(message, dict):
            raise SchemaError("expected a message object", path=where, source=source)
        role, content = message.get("role"), message.get("content")
        if isinstance(content, list):  # content parts: [{"type": "input_text", "text": ...}]
            texts = [part.get("text") for part in content if isinstance(part, dict)]
            if not all(isinstance(text, str) for text in texts):
                raise SchemaError("expected every content part to carry a string text",
                                  path=f"{where}.content", source=source)
            content = "".join(str(text) for text in texts)
        if not isinstance(content, str):
            raise SchemaError("expected message content to be a string", path=f"{where}.content",
                              source=source)
        key = {"system": "system_prompt", "developer": "system_prompt", "user": "user_prompt"}.get(
            str(role))
        if key and key not in prompts:
            prompts[key] = content
    return prompts


def _nemo_to_upstream(obj: Mapping[str, Any], source: str | None) -> tuple[dict[str, Any], Callable[[str], str]]:
    meta = obj["verifier_metadata"]
    if not isinstance(meta, dict):
        raise SchemaError("expected an object", path="$.verifier_metadata", source=source)
    meta = _strip_private(meta)
    unknown = sorted(set(meta) - TASK_KEYS - ROW_KEYS - LEGACY_KEYS - NEMO_ONLY_KEYS, key=str)
    if unknown:  # a typo'd "verifers" must not load as a task with no verifiers
        raise SchemaError(f"unknown key {unknown[0]!r} in verifier_metadata",
                          path=f"$.verifier_metadata.{unknown[0]}", source=source)
    merged: dict[str, Any] = {k: v for k, v in meta.items() if k not in NEMO_ONLY_KEYS}
    merged.update(_prompts_from_input(obj.get("responses_create_params"), source))
    if "user_prompt" not in merged:
        raise SchemaError("no user message in responses_create_params.input",
                          path="$.responses_create_params.input", source=source)
    meta_keys = set(meta)

    def remap(path: str) -> str:
        head = path[2:].split(".", 1)[0].split("[", 1)[0]
        if head in meta_keys:
            return "$.verifier_metadata" + path[1:]
        if head in ("system_prompt", "user_prompt"):
            return "$.responses_create_params.input"
        return path

    return merged, remap


T = typing.TypeVar("T")


def structure_or_raise(data: Any, cls: type[T], *, source: str | None = None) -> T:
    """Structure ``data`` as ``cls`` with the task converter, or raise :class:`SchemaError`."""
    try:
        return make_converter().structure(data, cls)
    except (ClassValidationError, IterableValidationError, _Invalid) as exc:
        _raise_schema_error(exc, source, lambda path: path)
        raise  # unreachable: keeps type checkers content


def task_from_mapping(obj: Mapping[str, Any], *, source: str | None = None) -> Task:
    """Read a task from any of the three formats, or raise :class:`SchemaError`."""
    if not isinstance(obj, Mapping):
        raise SchemaError(f"expected a task object, got {_json_type(obj)}", source=source)
    remap: Callable[[str], str] = lambda path: path  # noqa: E731
    source_keys: tuple[str, ...] | None = None
    if "verifier_metadata" in obj:
        data, remap = _nemo_to_upstream(obj, source)
    else:
        data = _strip_private(obj)
        source_keys = tuple(data)
        unknown = sorted(set(data) - TASK_KEYS - ROW_KEYS - LEGACY_KEYS, key=str)
        if unknown:
            raise SchemaError(f"unknown key {unknown[0]!r} (upstream drops such a task silently)",
                              path=f"$.{unknown[0]}", source=source)
    for key in ("verifiers", "gym_servers_config"):
        _decode_json_field(data, key, source)
    check_depth(data, source=source)
    legacy = {k: data.pop(k) for k in LEGACY_KEYS & set(data)}
    gym_keys = {k: data[k] for k in ("gym_servers_config",) if k in data}
    if not data.get("gym_servers_config") and "mcp_server_url" in legacy:
        data["gym_servers_config"] = [_legacy_gym(legacy)]
        legacy["_synthesized_gym"] = True
        remap = _legacy_remap(remap)
    try:
        task: Task = make_converter().structure(data, Task)
    except (ClassValidationError, IterableValidationError, _Invalid) as exc:
        _raise_schema_error(exc, source, remap)
        raise  # unreachable: keeps type checkers content
    _require_gyms(gym_keys, legacy, source, remap)
    _refuse_duplicate_gyms(task, source, remap)
    return attrs.evolve(task, legacy=legacy, source_keys=source_keys)


def _require_gyms(data: Mapping[str, Any], legacy: Mapping[str, Any], source: str | None,
                  remap: Callable[[str], str]) -> None:
    """The gym settings upstream's ``load_config`` insists on (the ones we insist on too)."""
    if data.get("gym_servers_config") == []:
        raise SchemaError("no gym servers (upstream refuses an empty gym_servers_config)",
                          path=remap("$.gym_servers_config"), source=source)
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
                path=remap(f"$.gym_servers_config[{index}].mcp_server_name"), source=source)
        first[gym.name] = index


_LEGACY_PATH = re.compile(r"^\$\.gym_servers_config\[0\]\.(mcp_server_url|seed_database_file|context|auth_config)")


def _legacy_remap(inner: Callable[[str], str]) -> Callable[[str], str]:
    """Errors in the gym built from legacy top-level keys point at those keys."""
    return lambda path: inner(_LEGACY_PATH.sub(r"$.\1", path))


def _legacy_gym(legacy: Mapping[str, Any]) -> dict[str, Any]:
    gym: dict[str, Any] = {"mcp_server_name": LEGACY_GYM_NAME, "mcp_server_url": legacy["mcp_server_url"]}
    for key in ("seed_database_file", "context", "auth_config"):
        if legacy.get(key) is not None:
            gym[key] = legacy[key]
    return gym


def _keep(full: dict[str, Any], source_keys: tuple[str, ...] | None,
          optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """``full`` cut down to the keys a record was read with, in their order.

    Built in code (no source keys), keys in ``optional`` are left out when None.
    """
    if source_keys is None:
        return {k: v for k, v in full.items() if not (k in optional and v is None)}
    return {k: full[k] for k in source_keys if k in full}


def _gym_to_mapping(gym: GymServer) -> dict[str, Any]:
    auth = None if gym.auth is None else {
        "type": gym.auth.type, "token": gym.auth.token, "header_name": gym.auth.header_name}
    full: dict[str, Any] = {
        "mcp_server_name": gym.name, "mcp_server_url": gym.url,
        "seed_database_file": gym.seed_database_file,
        "context": None if gym.null_context else dict(gym.context),
        "user_info": gym.user_info, "mcp_endpoint": gym.mcp_endpoint, "auth_config": auth,
    }
    full |= {k: v for k, v in gym.extra.items() if k not in full}
    return _keep(full, gym.source_keys,
                 ("seed_database_file", "user_info", "mcp_endpoint", "auth_config"))


def _config_to_mapping(config: Any) -> dict[str, Any]:
    if isinstance(config, DatabaseStateCheck):
        full = {"query": config.query, "expected_value": config.expected_value,
                "comparison_type": config.comparison_type}
        if config.source_keys is None:
            keys = [k for k, given in (("query", config.query is not None),
                                       ("expected_value", config.has_expected_value),
                                       ("comparison_type", config.has_comparison_type)) if given]
            return {k: full[k] for k in keys}
        return _keep(full, config.source_keys)
    if isinstance(config, ResponseCheck):
        return _keep({"sql_query": config.sql_query, "comparison_prompt": config.comparison_prompt,
                      "minimum_comparison_value": config.minimum_comparison_value},
                     config.source_keys, ("sql_query", "comparison_prompt", "minimum_comparison_value"))
    if isinstance(config, ToolExecutionCheck):
        return _keep({"selected_tools": list(config.selected_tools),
                      "minimum_tool_calls": config.minimum_tool_calls}, config.source_keys)
    return dict(config)


def _verifier_to_mapping(verifier: Verifier) -> dict[str, Any]:
    full: dict[str, Any] = {"verifier_type": verifier.verifier_type, "name": verifier.name,
                            "description": verifier.description, "gym_name": verifier.gym_name}
    if verifier.has_validation_config:
        full["validation_config"] = _config_to_mapping(verifier.validation_config)
    return _keep(full, verifier.source_keys, ("name", "description", "gym_name"))


def task_to_mapping(task: Task) -> dict[str, Any]:
    """The upstream task file of ``task`` (see :meth:`Task.to_upstream`)."""
    legacy = dict(task.legacy)
    synthesized = legacy.pop("_synthesized_gym", False)
    full: dict[str, Any] = {
        "mcp_endpoint": task.mcp_endpoint,
        "number_of_runs": task.number_of_runs,
        "reset_database_between_runs": task.reset_database_between_runs,
    }
    if not synthesized:
        full["gym_servers_config"] = [_gym_to_mapping(gym) for gym in task.gym_servers]
    full |= legacy
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
