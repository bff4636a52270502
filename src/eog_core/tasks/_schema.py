"""Typed records for an EOG task: gyms, auth and the tagged union of verifiers.

The records hold meaning, not the wire format: the JSON shapes (upstream task
files, dataset rows, NeMo Gym rows) are read by ``task_from_mapping``
(``_formats.py``, with the converter of ``_convert.py``) and written by
``to_upstream`` (``_write.py``); this module imports neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from eog_core._redact import redacted_mapping_repr, redacted_url_repr

__all__ = [
    "MISSING_MODE",
    "AuthConfig",
    "DatabaseStateCheck",
    "DatabaseStateVerifier",
    "GymServer",
    "ResponseCheck",
    "ResponseCheckVerifier",
    "Task",
    "ToolExecutionCheck",
    "ToolExecutionVerifier",
    "UnknownVerifier",
    "Verifier",
]


#: How every output spells the mode of a task that has none (validate's table,
#: verdict JSON, NeMo rows, run records): like run records' missing domain.
MISSING_MODE = "unknown"


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value) if value else {}


def _source_keys() -> Any:
    """The keys a record was read with, in order (None when built in code); not part of equality."""
    return attrs.field(default=None, eq=False, repr=False)


def _redacted(_: object) -> str:
    return "'***'"


@attrs.frozen(kw_only=True)
class AuthConfig:
    """How a gym authenticates calls: a bearer token or an API key header.

    The token never appears in a repr or str.
    """

    type: Literal["bearer", "api_key"]
    token: str = attrs.field(repr=_redacted)
    header_name: str = "Authorization"

    def __str__(self) -> str:
        return f"AuthConfig({self.type} via {self.header_name})"


@attrs.frozen(kw_only=True)
class GymServer:
    """One gym server a task uses (``gym_servers_config[i]`` upstream).

    ``extra`` keeps the keys upstream accepts and ignores (``database_id``,
    ``description``, ``timeout``...) so :func:`~eog_core.tasks.to_upstream` writes them
    back; ``null_context`` remembers a ``"context": null``.
    """

    name: str
    url: str = attrs.field(repr=redacted_url_repr)
    seed_database_file: str | None = None
    context: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_frozen_mapping, repr=redacted_mapping_repr
    )
    user_info: Any = None
    mcp_endpoint: str | None = None
    auth: AuthConfig | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    null_context: bool = attrs.field(default=False, eq=False, repr=False)
    source_keys: tuple[str, ...] | None = _source_keys()


@attrs.frozen(kw_only=True)
class DatabaseStateCheck:
    """``validation_config`` of a ``database_state`` verifier.

    ``query`` may be missing: upstream then fails the verifier with "No SQL
    query provided", so loading keeps it and the engine reports it. Likewise
    a null ``comparison_type`` loads and fails as "Unknown comparison type: None".
    ``comparison_type_given`` remembers whether the file named a comparison (for
    an exact round trip); the effective comparison defaults to ``equals``.
    """

    query: str | None = None
    expected_value: Any = None
    comparison_type: str | None = "equals"
    has_expected_value: bool = True
    has_comparison_type: bool = True
    source_keys: tuple[str, ...] | None = _source_keys()


@attrs.frozen(kw_only=True)
class ResponseCheck:
    """``validation_config`` of a ``response_check`` verifier (LLM judge).

    ``minimum_comparison_value`` keeps its JSON type (``7`` stays an int, null
    stays None) as upstream compares the judge's score with it as given.
    """

    sql_query: str | None = None
    comparison_prompt: str | None = None
    minimum_comparison_value: int | float | None = 7
    source_keys: tuple[str, ...] | None = _source_keys()


@attrs.frozen(kw_only=True)
class ToolExecutionCheck:
    """``validation_config`` of a ``tool_execution`` verifier."""

    selected_tools: tuple[str, ...] = ()
    minimum_tool_calls: int = 1
    source_keys: tuple[str, ...] | None = _source_keys()


@attrs.frozen(kw_only=True)
class _VerifierBase:
    """``has_validation_config`` is False when the file had none (upstream: a run error)."""

    name: str | None = None
    description: str | None = None
    gym_name: str | None = None
    has_validation_config: bool = True
    source_keys: tuple[str, ...] | None = _source_keys()


@attrs.frozen(kw_only=True)
class DatabaseStateVerifier(_VerifierBase):
    """Compares the result of a SQL query on the final database with an expected value."""

    verifier_type: Literal["database_state"] = "database_state"
    validation_config: DatabaseStateCheck = attrs.field(factory=DatabaseStateCheck)


@attrs.frozen(kw_only=True)
class ResponseCheckVerifier(_VerifierBase):
    """Asks an LLM judge whether the agent's final answer matches a SQL result."""

    verifier_type: Literal["response_check"] = "response_check"
    validation_config: ResponseCheck = attrs.field(factory=ResponseCheck)


@attrs.frozen(kw_only=True)
class ToolExecutionVerifier(_VerifierBase):
    """Checks that listed tools were called, and enough calls were made."""

    verifier_type: Literal["tool_execution"] = "tool_execution"
    validation_config: ToolExecutionCheck = attrs.field(factory=ToolExecutionCheck)


@attrs.frozen(kw_only=True)
class UnknownVerifier(_VerifierBase):
    """A verifier of a type upstream does not know; kept so parity can report it."""

    verifier_type: str
    validation_config: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)


Verifier = DatabaseStateVerifier | ResponseCheckVerifier | ToolExecutionVerifier | UnknownVerifier


@attrs.frozen(kw_only=True)
class Task:
    """One benchmark task: prompts, the gyms it runs on, its tools and verifiers.

    ``task_id``, ``domain`` and ``mode`` come from dataset and NeMo rows (or the
    file name); upstream task files do not carry them. ``legacy`` keeps the
    accepted legacy and dead keys (``mcp_server_url``, ``database_id``,
    ``context``, ``auth_config``, ``temperature``, ``max_tokens``) verbatim.
    ``source_keys`` (on every record read from a file) is the keys it was read
    with, in order: :func:`~eog_core.tasks.to_upstream` writes exactly those.
    ``gym_from_legacy_keys`` is True when the only gym was built from the legacy
    top-level keys (it is written back as those keys, not as a gym list).
    No token shows in a repr or str: auth configs and secret-looking context
    keys are masked (``to_upstream(task)`` keeps them, it is the task's data).
    """

    task_id: str | None = None
    domain: str | None = None
    mode: str | None = None
    system_prompt: str = ""
    user_prompt: str
    gym_servers: tuple[GymServer, ...] = ()
    verifiers: tuple[Verifier, ...] = ()
    selected_tools: tuple[str, ...] | None = None
    restricted_tools: tuple[str, ...] | None = None
    mcp_endpoint: str = "/mcp"
    number_of_runs: int = 1
    reset_database_between_runs: bool = True
    legacy: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_frozen_mapping, repr=redacted_mapping_repr
    )
    source_keys: tuple[str, ...] | None = _source_keys()
    gym_from_legacy_keys: bool = attrs.field(default=False, eq=False, repr=False)

    def gym(self, name: str) -> GymServer | None:
        """The task's gym called ``name``, or None."""
        for gym in self.gym_servers:
            if gym.name == name:
                return gym
        return None

    @property
    def default_gym(self) -> GymServer | None:
        """The gym a verifier without ``gym_name`` runs on (upstream: the first)."""
        return self.gym_servers[0] if self.gym_servers else None
