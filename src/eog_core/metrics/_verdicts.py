"""Our verdict JSONL files, and the list of tasks a run was supposed to cover.

A verdict line is one JSON object::

    {"task_id", "domain", "mode", "repeat", "policy": "strict" | "parity",
     "success", "reward", "pass_rate", "num_defined", "num_scored",
     "evaluation_completed", "failure_kind", "verification_results"?,
     "verification_summary"?, "parity"?: {"success", "pass_rate", ...}}

The two policies of one run come either as two lines or as one strict line
carrying a nested ``parity`` object; :func:`runs_from_verdicts` accepts both.
A run may also have several attempts (a gateway rollout abandoned, then handed
out again): one not evaluated yields to a later or earlier evaluated one, as
``eog-core run``'s resume drops it; two evaluated attempts at one run are refused.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import attrs

from eog_core._jsonl import JsonLineError, jsonl_values
from eog_core.metrics._records import (
    DamageOutcome,
    MetricsError,
    PolicyName,
    PolicyOutcome,
    RunRecord,
    parse_damage,
)

__all__ = [
    "VerdictRecord",
    "expected_task_ids",
    "parse_verdict",
    "read_verdicts",
    "runs_from_verdicts",
]

_POLICIES = ("strict", "parity")


@attrs.frozen(kw_only=True)
class VerdictRecord:
    """One line of a verdict JSONL file; ``source`` and ``line`` say where it was read."""

    task_id: str
    domain: str
    mode: str
    repeat: int
    policy: PolicyName
    success: bool
    pass_rate: float
    evaluation_completed: bool
    reward: float = 0.0
    num_defined: int = 0
    num_scored: int = 0
    failure_kind: str | None = None
    parity: PolicyOutcome | None = None
    verification_results: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    verification_summary: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    source: str | None = attrs.field(default=None, eq=False)
    line: int | None = attrs.field(default=None, eq=False)
    damage: DamageOutcome | None = attrs.field(default=None, eq=False)
    """A rollout record's collateral-damage verdict (docs/state.md); ``None`` without capture."""

    @property
    def outcome(self) -> PolicyOutcome:
        """This line's own policy outcome."""
        return PolicyOutcome(
            success=self.success,
            pass_rate=self.pass_rate,
            completed=self.evaluation_completed,
            failure_kind=self.failure_kind,
        )


class _Fields:
    """Typed access to one JSON object that raises with the JSON path of the bad key."""

    def __init__(self, data: Mapping[str, Any], prefix: str) -> None:
        self.data = data
        self.prefix = prefix

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.data and required:
            raise ValueError(f"{self.prefix}.{key}: missing")
        return self.data.get(key)

    def _bad(self, key: str, kind: str, value: Any) -> ValueError:
        return ValueError(f"{self.prefix}.{key}: expected {kind}, got {value!r}")

    def text(self, key: str) -> str:
        value = self._get(key, True)
        if not isinstance(value, str) or not value:
            raise self._bad(key, "a non-empty string", value)
        return value

    def flag(self, key: str, default: bool | None = None) -> bool:
        value = self._get(key, default is None)
        if value is None and default is not None:
            return default
        if not isinstance(value, bool):
            raise self._bad(key, "true or false", value)
        return value

    def integer(self, key: str, default: int | None = None) -> int:
        value = self._get(key, default is None)
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._bad(key, "a non-negative integer", value)
        return value

    def number(self, key: str, default: float | None = None) -> float:
        value = self._get(key, default is None)
        if value is None and default is not None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise self._bad(key, "a number", value)
        return float(value)

    def optional_text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "a string or null", value)
        return value

    def optional_object(self, key: str) -> Mapping[str, Any] | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise self._bad(key, "an object or null", value)
        return value


def _verdict_from_object(data: Any, *, source: str, line: int) -> VerdictRecord:
    if not isinstance(data, Mapping):
        raise ValueError("$: expected a JSON object")
    fields = _Fields(data, "$")
    policy = fields.text("policy")
    if policy not in _POLICIES:
        raise ValueError(f"$.policy: expected 'strict' or 'parity', got {policy!r}")
    completed = fields.flag("evaluation_completed")
    failure_kind = fields.optional_text("failure_kind")
    success = fields.flag("success")
    parity = None
    if (nested := fields.optional_object("parity")) is not None:
        inner = _Fields(nested, "$.parity")
        parity = PolicyOutcome(
            success=inner.flag("success"),
            pass_rate=inner.number("pass_rate"),
            completed=inner.flag("evaluation_completed", completed),
            failure_kind=inner.optional_text("failure_kind")
            if "failure_kind" in nested
            else failure_kind,
        )
    return VerdictRecord(
        task_id=fields.text("task_id"),
        domain=fields.text("domain"),
        mode=fields.text("mode"),
        repeat=fields.integer("repeat"),
        policy=cast(PolicyName, policy),
        success=success,
        pass_rate=fields.number("pass_rate"),
        evaluation_completed=completed,
        reward=fields.number("reward", 1.0 if success else 0.0),
        num_defined=fields.integer("num_defined", 0),
        num_scored=fields.integer("num_scored", 0),
        failure_kind=failure_kind,
        parity=parity,
        verification_results=fields.optional_object("verification_results"),
        verification_summary=fields.optional_object("verification_summary"),
        source=source,
        line=line,
        damage=parse_damage(data.get("damage")),
    )


def _jsonl_objects(path: Path) -> Iterable[tuple[int, Any]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MetricsError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from exc
    try:
        for number, _, value in jsonl_values(raw):
            yield number, value
    except JsonLineError as exc:
        raise MetricsError(exc.reason, source=str(path), line=exc.line) from None


def read_verdicts(path: str | os.PathLike[str]) -> list[VerdictRecord]:
    """Read a verdict JSONL file; blank lines are skipped.

    A malformed line raises :class:`MetricsError` naming the file, the line
    number and the offending key (``verdicts.jsonl:7: $.success: expected true or false``).
    """
    source = Path(path)
    records = []
    for number, data in _jsonl_objects(source):
        try:
            records.append(_verdict_from_object(data, source=str(source), line=number))
        except ValueError as exc:
            raise MetricsError(str(exc), source=str(source), line=number) from exc
    return records


def parse_verdict(data: Any, *, source: str, line: int) -> VerdictRecord:
    """One already-decoded verdict line (e.g. a rollout record); unknown keys are ignored.

    A malformed object raises :class:`MetricsError` naming ``source``, ``line`` and the key.
    """
    try:
        return _verdict_from_object(data, source=source, line=line)
    except ValueError as exc:
        raise MetricsError(str(exc), source=source, line=line) from exc


def _where(verdict: VerdictRecord) -> str:
    return f"{verdict.source}:{verdict.line}" if verdict.source else "<verdict>"


@attrs.define
class _Attempt:
    """The verdict lines of one attempt at a run: each policy given at most once."""

    given: dict[str, tuple[PolicyOutcome, VerdictRecord]] = attrs.field(factory=dict)

    @property
    def completed(self) -> bool:
        """Whether the attempt was evaluated: its strict outcome (else its parity one)
        completed, as a rollout record's ``status`` is ``evaluated``."""
        primary = self.given.get("strict") or self.given.get("parity")
        return primary is not None and primary[0].completed


def _settle(key: tuple[str, str, str, int], attempts: list[_Attempt]) -> _Attempt:
    """The attempt that stands for a run: its evaluated one, else the last one.

    An attempt that could not be evaluated (``evaluation_completed: false``, e.g. an
    abandoned gateway rollout) is superseded by another attempt of the same run, as a
    resumed ``eog-core run`` drops it and runs it again; two evaluated attempts are refused.
    """
    evaluated = [attempt for attempt in attempts if attempt.completed]
    if not evaluated:
        return attempts[-1]
    if len(evaluated) > 1:
        first, second = evaluated[0], evaluated[1]
        policy = next((p for p in _POLICIES if p in first.given and p in second.given), None)
        if policy is None:
            policy = "strict" if "strict" in second.given else "parity"
        earlier = (first.given.get(policy) or next(iter(first.given.values())))[1]
        again = second.given[policy][1]
        raise MetricsError(
            f"{policy} verdict for task {key[2]!r} repeat {key[3]} given twice "
            f"(at {_where(earlier)} and again at {_where(again)}); a task's repeat can have "
            "only one evaluated verdict: remove the line that should not count, or score "
            "the runs separately",
            source=again.source,
            line=again.line,
        )
    return evaluated[0]


def runs_from_verdicts(verdicts: Iterable[VerdictRecord]) -> list[RunRecord]:
    """Merge verdict lines into one :class:`RunRecord` per (mode, domain, task, repeat).

    A nested ``parity`` object fills the parity outcome of its run. A policy given
    again for a run starts another attempt at it: an attempt that was not evaluated
    (``evaluation_completed: false``, such as a gateway rollout abandoned and later
    handed out again) yields to an evaluated one, and of attempts none of which was
    evaluated the last stands. Two evaluated attempts at one run raise
    :class:`MetricsError` naming both lines.
    """
    merged: dict[tuple[str, str, str, int], list[_Attempt]] = {}
    for verdict in verdicts:
        key = (verdict.mode, verdict.domain, verdict.task_id, verdict.repeat)
        attempts = merged.setdefault(key, [_Attempt()])
        given: list[tuple[str, PolicyOutcome]] = [(verdict.policy, verdict.outcome)]
        if verdict.parity is not None:
            given.append(("parity", verdict.parity))
        if any(policy in attempts[-1].given for policy, _ in given):
            attempts.append(_Attempt())
        for policy, outcome in given:
            attempts[-1].given[policy] = (outcome, verdict)
    runs = []
    for (mode, domain, task_id, repeat), attempts in sorted(merged.items()):
        attempt = _settle((mode, domain, task_id, repeat), attempts)
        strict, parity = attempt.given.get("strict"), attempt.given.get("parity")
        runs.append(
            RunRecord(
                task_id=task_id,
                domain=domain,
                mode=mode,
                repeat=repeat,
                strict=strict[0] if strict else None,
                parity=parity[0] if parity else None,
                source=next(iter(attempt.given.values()))[1].source,
                damage=next(
                    (v.damage for _, v in attempt.given.values() if v.damage is not None), None
                ),
            )
        )
    return runs


def _row_task_id(row: Any) -> str | None:
    if not isinstance(row, Mapping):
        return None
    task_id = row.get("task_id")
    if task_id is None and isinstance(meta := row.get("verifier_metadata"), Mapping):
        task_id = meta.get("task_id")
    return task_id if isinstance(task_id, str) and task_id else None


def expected_task_ids(path: str | os.PathLike[str]) -> frozenset[str]:
    """The task ids a run should have covered.

    ``path`` is a ``.jsonl`` of dataset rows (``task_id``, or
    ``verifier_metadata.task_id`` for NeMo Gym rows) or a directory of ``.json``
    task files, searched recursively, whose stems are the ids.
    """
    source = Path(path)
    if source.is_dir():
        return frozenset(file.stem for file in source.rglob("*.json") if file.is_file())
    if source.suffix != ".jsonl":
        raise MetricsError(
            "expected a .jsonl of task rows or a directory of .json tasks", source=str(source)
        )
    ids = set()
    for number, row in _jsonl_objects(source):
        task_id = _row_task_id(row)
        if task_id is None:
            raise MetricsError(
                "row has no task_id (nor verifier_metadata.task_id)",
                source=str(source),
                line=number,
            )
        ids.add(task_id)
    return frozenset(ids)
