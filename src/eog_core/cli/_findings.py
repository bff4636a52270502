"""What ``eog-core validate`` finds in tasks that load: defects upstream scores wrongly,
and configurations ``verify`` would reject.

Each finding names where it is: the file (``file.jsonl:LINE`` for a row) and
the JSON path inside it, as written in that file's format (a NeMo Gym row keeps
its task under ``$.verifier_metadata``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Literal

import attrs

from eog_core.tasks import (
    DatabaseStateVerifier,
    ResponseCheckVerifier,
    Task,
    ToolSnapshot,
    UnknownVerifier,
    merge_tools,
)
from eog_core.verify import COMPARISON_TYPES, STRICT

__all__ = ["REJECTED_BY_VERIFY", "Finding", "findings_of"]

_NUMERIC = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")

Severity = Literal["rejected", "defect"]
REJECTED_BY_VERIFY = frozenset(
    {
        "no_verifiers",
        "verifier_without_query",
        "unknown_comparison_type",
        "unknown_verifier_type",
        "verifier_gym_not_in_task",
        "query_not_read_only",
    }
)


@attrs.frozen(kw_only=True)
class Finding:
    """One finding: where (file, JSON path), which task, what kind, and the detail."""

    source: str
    path: str
    task_id: str | None
    mode: str | None
    kind: str
    detail: str

    @property
    def severity(self) -> Severity:
        """``rejected``: strict ``verify`` refuses to score it; ``defect``: upstream scores it wrongly."""
        return "rejected" if self.kind in REJECTED_BY_VERIFY else "defect"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self) | {"severity": self.severity}

    def line(self) -> str:
        return f"{self.source} {self.path}: {self.kind}: {self.detail}"


def _required(add: Any, path: str, value: str | None, detail: str) -> bool:
    """Whether a verifier has ``value``; a ``verifier_without_query`` finding when not."""
    if not value:
        add(path, "verifier_without_query", detail)
    return bool(value)


def _verifier_findings(task: Task, root: str, add: Any) -> None:
    gyms = {g.name for g in task.gym_servers}
    for index, verifier in enumerate(task.verifiers):
        at = f"{root}.verifiers[{index}]"
        if verifier.gym_name and verifier.gym_name not in gyms:
            add(
                f"{at}.gym_name",
                "verifier_gym_not_in_task",
                f"gym {verifier.gym_name!r} is not among the task's gyms ({', '.join(sorted(gyms)) or 'none'}); "
                "upstream skips the verifier, strict verify rejects it",
            )
        if isinstance(verifier, UnknownVerifier):
            add(
                f"{at}.verifier_type",
                "unknown_verifier_type",
                f"{verifier.verifier_type!r} is not database_state, response_check or tool_execution",
            )
        elif isinstance(verifier, DatabaseStateVerifier):
            config = verifier.validation_config
            if _required(
                add, f"{at}.validation_config.query", config.query, "no SQL query to run"
            ) and (refusal := STRICT.refuse_query(config.query or "")):
                add(f"{at}.validation_config.query", "query_not_read_only", refusal)
            if config.comparison_type not in COMPARISON_TYPES:
                add(
                    f"{at}.validation_config.comparison_type",
                    "unknown_comparison_type",
                    f"{config.comparison_type!r} (known: {', '.join(sorted(COMPARISON_TYPES))})",
                )
            expected = config.expected_value
            if isinstance(expected, str) and _NUMERIC.fullmatch(expected):
                add(
                    f"{at}.validation_config.expected_value",
                    "numeric_string_expectation",
                    f"expects {expected!r}, never == a number upstream",
                )
        elif isinstance(verifier, ResponseCheckVerifier):
            judged = verifier.validation_config
            _required(
                add, f"{at}.validation_config.sql_query", judged.sql_query, "no SQL query to run"
            )
            _required(
                add,
                f"{at}.validation_config.comparison_prompt",
                judged.comparison_prompt,
                "no comparison prompt for the judge",
            )


def findings_of(
    task: Task, *, source: str, nemo_row: bool, snapshots: dict[str, ToolSnapshot] | None
) -> list[Finding]:
    """Every finding of one task read from ``source``."""
    root = "$.verifier_metadata" if nemo_row else "$"
    found: list[Finding] = []

    def add(path: str, kind: str, detail: str) -> None:
        found.append(
            Finding(
                source=source,
                path=path,
                task_id=task.task_id,
                mode=task.mode,
                kind=kind,
                detail=detail,
            )
        )

    if not task.verifiers:
        add(f"{root}.verifiers", "no_verifiers", "nothing to score (upstream counts it a success)")
    positions: dict[str, list[int]] = defaultdict(list)
    for index, verifier in enumerate(task.verifiers):
        if verifier.name:
            positions[verifier.name].append(index)
    for name, indexes in positions.items():
        if len(indexes) > 1:
            add(
                f"{root}.verifiers[{indexes[-1]}].name",
                "duplicate_verifier_name",
                f"{name!r} at verifiers {indexes} (upstream keeps only the last)",
            )
    _verifier_findings(task, root, add)
    for number, gym in enumerate(task.gym_servers):
        for key in gym.context:
            if key != key.strip() or not key.strip():
                add(
                    f"{root}.gym_servers_config[{number}].context",
                    "context_header_whitespace",
                    f"gym {gym.name!r} header {key!r}",
                )
    if task.number_of_runs < 1:
        add(
            f"{root}.number_of_runs",
            "no_runs",
            f"number_of_runs is {task.number_of_runs}: upstream runs the task zero times, no result",
        )
    if snapshots is not None:
        toolset = merge_tools(task, snapshots)
        if toolset.missing:
            add(f"{root}.selected_tools", "tool_not_in_snapshots", ", ".join(toolset.missing))
        if not toolset.tools:
            unsnapped = [gym.name for gym in task.gym_servers if gym.name not in snapshots]
            add(
                f"{root}.gym_servers_config",
                "no_tools",
                "the model would be offered no tools"
                + (f" (no tool snapshot for gym(s) {', '.join(unsnapped)})" if unsnapped else ""),
            )
    return found
