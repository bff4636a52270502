"""A rollout's tool calls: reading their arguments, recording them, answering one locally,
and the kind of a gym failure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from eog_core._json import JsonInputError, loads_untrusted
from eog_core.errors import (
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    JsonRpcError,
)
from eog_core.gym._records import ToolResult

__all__ = [
    "ToolCallRecord",
    "failure_record",
    "gym_error_kind",
    "local_error",
    "local_record",
    "new_call_record",
    "read_arguments",
]


@attrs.define(kw_only=True)
class ToolCallRecord:
    """One tool call of a rollout, as the session routed it. Read-only by convention:
    one is made per call, and a frozen class costs twice as much to build."""

    name: str
    arguments: Mapping[str, Any]
    gym: str | None
    latency_ms: float
    is_error: bool
    error: str | None = None
    local: bool = False
    """Answered by the session itself (tool outside the task's set, bad arguments)."""
    cancelled: bool = False
    """The caller cancelled the call after it was sent: it may have run on the gym."""
    error_kind: str | None = None
    """For a gym failure, its kind (:func:`gym_error_kind`): ``gym_unreachable``,
    ``gym_timeout``, ``gym_http``, ``gym_protocol``, ``jsonrpc`` or ``gym_error``."""


_new = object.__new__


def new_call_record(
    name: str, arguments: Mapping[str, Any], gym: str, latency_ms: float, is_error: bool
) -> ToolCallRecord:
    """``ToolCallRecord(name=..., arguments=..., gym=..., latency_ms=..., is_error=...)`` of a
    call a gym answered, without the keyword call (callgrind: a third of the cost; no
    validators to skip, ``tests/gym/test_fast_records.py`` pins the equal object)."""
    record = _new(ToolCallRecord)
    record.name = name
    record.arguments = arguments
    record.gym = gym
    record.latency_ms = latency_ms
    record.is_error = is_error
    record.error = None
    record.local = False
    record.cancelled = False
    record.error_kind = None
    return record


def gym_error_kind(error: BaseException) -> str:
    """The kind of a gym failure, named after its error class (stable, low cardinality)."""
    kinds = (
        (GymUnreachableError, "gym_unreachable"),
        (GymTimeoutError, "gym_timeout"),
        (GymHTTPError, "gym_http"),
        (JsonRpcError, "jsonrpc"),
        (GymProtocolError, "gym_protocol"),
    )
    return next((kind for cls, kind in kinds if isinstance(error, cls)), "gym_error")


def local_error(text: str) -> ToolResult:
    """An ``is_error`` result the session answers itself (the gym never saw the call)."""
    content = ({"type": "text", "text": text},)
    return ToolResult(
        content=content, text=text, is_error=True, raw={"content": list(content), "isError": True}
    )


def read_arguments(arguments: Any) -> Mapping[str, Any] | str:
    """A call's arguments that are not a dict (a JSON text, another mapping, None) as a
    mapping, or the error text to answer when they are not a JSON object."""
    if isinstance(arguments, str | bytes | bytearray):
        try:
            arguments = loads_untrusted(arguments) if arguments.strip() else {}
        except JsonInputError as exc:
            return f"Error: arguments are not valid JSON ({exc})"
    if arguments is not None and not isinstance(arguments, Mapping):
        return "Error: arguments must be a JSON object"
    return arguments or {}


def local_record(name: str, arguments: Mapping[str, Any], text: str) -> ToolCallRecord:
    """A call the session answered itself with ``text`` (it reached no gym)."""
    return ToolCallRecord(
        name=name,
        arguments=arguments,
        gym=None,
        latency_ms=0.0,
        is_error=True,
        error=text,
        local=True,
    )


def failure_record(
    name: str,
    arguments: Mapping[str, Any],
    gym: str,
    latency_ms: float,
    error: str,
    cancelled: bool,
    error_kind: str | None,
) -> ToolCallRecord:
    """A call to ``gym`` that failed (or was cancelled once sent: it may have run)."""
    return ToolCallRecord(
        name=name,
        arguments=arguments,
        gym=gym,
        latency_ms=latency_ms,
        is_error=True,
        error=error,
        cancelled=cancelled,
        error_kind=error_kind,
    )
