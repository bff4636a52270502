"""Static findings: what a task's own text shows before any gym runs it, defects upstream
scores wrongly and configurations strict ``verify`` would reject (``docs/certify.md``).

:func:`task_findings` is what ``eog-core validate`` reports and the ``static`` part of
a certificate; harnesses call it directly. Each finding names where it is: the file
(``file.jsonl:LINE`` for a row) and the JSON path inside it, as written in that
file's format (a NeMo Gym row keeps its task under ``$.verifier_metadata``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from eog_core.certify._certificate import CertificateFinding
from eog_core.certify._runner import ROW_CAP
from eog_core.certify._static_rows import truncation_risk
from eog_core.certify._static_sql import Keys, clock_reads, ddl_keys, parse_problem
from eog_core.tasks import (
    DatabaseStateVerifier,
    ResponseCheckVerifier,
    Task,
    ToolSnapshot,
    UnknownVerifier,
    merge_tools,
)
from eog_core.verify import COMPARISON_TYPES, STRICT

__all__ = ["REJECTED_BY_VERIFY", "STATIC_KINDS", "Severity", "StaticFinding", "task_findings"]

_NUMERIC = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")

Severity = Literal["rejected", "defect"]
#: The kinds strict ``verify`` refuses to score (a configuration error); every other
#: kind is a defect: upstream scores the task, wrongly or unreliably.
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
#: Every kind :func:`task_findings` reports.
STATIC_KINDS = frozenset(
    {
        *REJECTED_BY_VERIFY,
        "duplicate_verifier_name",
        "numeric_string_expectation",
        "context_header_whitespace",
        "no_runs",
        "tool_not_in_snapshots",
        "no_tools",
        "sql_invalid",
        "time_dependent",
        "may_truncate",
    }
)


@attrs.frozen(kw_only=True)
class StaticFinding:
    """One finding: where (file, JSON path), which task, what kind, and the detail;
    ``verifier``: the name of the verifier it is about, if any (not in :meth:`to_dict`,
    which is ``validate --json``'s record)."""

    source: str
    path: str
    task_id: str | None
    mode: str | None
    kind: str
    detail: str
    verifier: str | None = None

    @property
    def severity(self) -> Severity:
        """``rejected``: strict ``verify`` refuses to score it; ``defect``: upstream scores it wrongly."""
        return "rejected" if self.kind in REJECTED_BY_VERIFY else "defect"

    def to_dict(self) -> dict[str, Any]:
        record = attrs.asdict(self, filter=lambda field, _: field.name != "verifier")
        return record | {"severity": self.severity}

    def line(self) -> str:
        return f"{self.source} {self.path}: {self.kind}: {self.detail}"

    def certificate_finding(self) -> CertificateFinding:
        """This finding as a certificate records it (its JSON path in the detail)."""
        return CertificateFinding(
            kind=self.kind, detail=f"{self.path}: {self.detail}", verifier=self.verifier
        )


_Add = Callable[..., None]


def _required(add: _Add, path: str, value: str | None, detail: str) -> bool:
    """Whether a verifier has ``value``; a ``verifier_without_query`` finding when not."""
    if not value:
        add(path, "verifier_without_query", detail)
    return bool(value)


def _sql_findings(query: str, at: str, keys: Keys | None, add: _Add) -> None:
    """``sql_invalid``, ``time_dependent`` and ``may_truncate`` of one verifier query."""
    if problem := parse_problem(query):
        add(at, "sql_invalid", f"{problem}; the verifier can only error, on any database")
        return
    if reads := clock_reads(query):
        add(
            at,
            "time_dependent",
            f"reads the clock ({', '.join(dict.fromkeys(reads))}): its verdict changes as "
            "wall time passes",
        )
    if truncation_risk(query, keys):
        add(
            at,
            "may_truncate",
            f"the outermost SELECT has no LIMIT and is not single-row shaped: the gym's "
            f"sql-runner appends LIMIT {ROW_CAP}, so a longer answer is cut",
        )


def _keys_by_gym(task: Task, ddl: str | Mapping[str, str] | None) -> dict[str, Keys]:
    if ddl is None:
        return {}
    if isinstance(ddl, str):
        return {gym.name: ddl_keys(ddl) for gym in task.gym_servers}
    return {name: ddl_keys(text) for name, text in ddl.items()}


def _verifier_findings(task: Task, root: str, keys: Mapping[str, Keys], add: _Add) -> None:
    gyms = {g.name for g in task.gym_servers}
    default = task.default_gym
    for index, verifier in enumerate(task.verifiers):
        at = f"{root}.verifiers[{index}]"
        if verifier.gym_name and verifier.gym_name not in gyms:
            add(
                f"{at}.gym_name",
                "verifier_gym_not_in_task",
                f"gym {verifier.gym_name!r} is not among the task's gyms ({', '.join(sorted(gyms)) or 'none'}); "
                "upstream skips the verifier, strict verify rejects it",
            )
        gym = verifier.gym_name or (default.name if default else "")
        if isinstance(verifier, UnknownVerifier):
            add(
                f"{at}.verifier_type",
                "unknown_verifier_type",
                f"{verifier.verifier_type!r} is not database_state, response_check or tool_execution",
            )
        elif isinstance(verifier, DatabaseStateVerifier):
            config = verifier.validation_config
            query_at = f"{at}.validation_config.query"
            if _required(add, query_at, config.query, "no SQL query to run"):
                query = config.query or ""
                if refusal := STRICT.refuse_query(query):
                    add(query_at, "query_not_read_only", refusal)
                _sql_findings(query, query_at, keys.get(gym), add)
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
            query_at = f"{at}.validation_config.sql_query"
            if _required(add, query_at, judged.sql_query, "no SQL query to run"):
                _sql_findings(judged.sql_query or "", query_at, keys.get(gym), add)
            _required(
                add,
                f"{at}.validation_config.comparison_prompt",
                judged.comparison_prompt,
                "no comparison prompt for the judge",
            )


def task_findings(
    task: Task,
    *,
    source: str = "",
    tools: Mapping[str, ToolSnapshot] | None = None,
    ddl: str | Mapping[str, str] | None = None,
    nemo_row: bool = False,
) -> list[StaticFinding]:
    """Every static finding of one task, in the task's order.

    ``source`` names where the task was read (it prefixes each finding's line);
    ``tools``: the tool snapshots per gym (``load_tool_snapshots``), without which
    the tool kinds are not checked; ``ddl``: the ``CREATE TABLE`` statements of the
    task's databases, per gym name or one text for every gym (a seed file's text
    will do), whose primary keys and UNIQUE columns ``may_truncate`` trusts over
    the column-name rule; ``nemo_row``: the task was read from a NeMo Gym row
    (its paths start ``$.verifier_metadata``).
    """
    root = "$.verifier_metadata" if nemo_row else "$"
    found: list[StaticFinding] = []
    names = {f"{root}.verifiers[{i}]": v.name for i, v in enumerate(task.verifiers)}

    def add(path: str, kind: str, detail: str) -> None:
        verifier = names.get(path[: path.find("]") + 1]) if ".verifiers[" in path else None
        found.append(
            StaticFinding(
                source=source,
                path=path,
                task_id=task.task_id,
                mode=task.mode,
                kind=kind,
                detail=detail,
                verifier=verifier,
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
    _verifier_findings(task, root, _keys_by_gym(task, ddl), add)
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
    if tools is not None:
        toolset = merge_tools(task, tools)
        if toolset.missing:
            add(f"{root}.selected_tools", "tool_not_in_snapshots", ", ".join(toolset.missing))
        if not toolset.tools:
            unsnapped = [gym.name for gym in task.gym_servers if gym.name not in tools]
            add(
                f"{root}.gym_servers_config",
                "no_tools",
                "the model would be offered no tools"
                + (f" (no tool snapshot for gym(s) {', '.join(unsnapped)})" if unsnapped else ""),
            )
    return found
