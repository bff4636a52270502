"""The task converter and its error paths: one cattrs converter for the task records.

Strict primitives, closed objects (keys starting with ``_`` are ignored), the
tagged union of verifiers on ``verifier_type``; cattrs' grouped errors become one
:class:`SchemaError` naming the JSON path of the task file. Which format a
mapping is in and how it is written back live in ``_formats.py`` and ``_write.py``.
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

__all__ = ["make_converter", "structure_or_raise"]

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
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }
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
    conv.register_structure_hook(
        float, lambda v, _t: float(_expect((int, float), "a number")(v, _t))
    )
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

    conv.register_structure_hook_func(
        lambda t: t == (int | float | None), structure_optional_number
    )

    def closed_object(
        cls: type[Any], *, extra: bool = False, **overrides: Any
    ) -> Callable[[Any, Any], Any]:
        """A hook for ``cls`` that refuses unknown keys (or keeps them in ``extra``)
        and records the keys it was read with in ``source_keys``."""
        fields = {a.name for a in attrs.fields(cls)}
        omitted = {
            name: override(omit=True)
            for name in (
                "source_keys",
                "extra",
                "null_context",
                "has_validation_config",
                "has_expected_value",
                "has_comparison_type",
                "gym_from_legacy_keys",
            )
            if name in fields
        }
        generated = make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=True, **(omitted | overrides)
        )
        wire = {
            getattr(overrides.get(a.name), "rename", None) or a.name
            for a in attrs.fields(cls)
            if a.name not in omitted
        }

        def hook(value: Any, _type: Any) -> Any:
            if not isinstance(value, dict):
                raise _Invalid(f"expected an object, got {_json_type(value)}")
            data = _strip_private(value)
            changes: dict[str, Any] = (
                {"source_keys": tuple(data)} if "source_keys" in fields else {}
            )
            if extra:
                changes["extra"] = {k: v for k, v in data.items() if k not in wire}
                data = {k: v for k, v in data.items() if k in wire}
            return attrs.evolve(generated(data, cls), **changes)

        return hook

    conv.register_structure_hook(AuthConfig, closed_object(AuthConfig))
    gym_hook = closed_object(
        GymServer,
        extra=True,
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


T = typing.TypeVar("T")


def _same_path(path: str) -> str:
    return path


def structure_or_raise(
    data: Any, cls: type[T], *, source: str | None = None, remap: Callable[[str], str] = _same_path
) -> T:
    """Structure ``data`` as ``cls`` with the task converter, or raise :class:`SchemaError`.

    ``remap`` turns the path of the structured data into the path in the file it
    was read from (a NeMo row nests the task in ``verifier_metadata``).
    """
    try:
        return make_converter().structure(data, cls)
    except (ClassValidationError, IterableValidationError, _Invalid) as exc:
        _raise_schema_error(exc, source, remap)
        raise  # unreachable: keeps type checkers content
