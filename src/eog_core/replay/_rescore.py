"""Re-score a run: (revised) tasks' verifiers on its captured final states, offline.

Each rollout's final state (``states/<after>.json.gz``) is written into temporary SQLite
files (:func:`eog_core.state.materialise`) and verified there with
:class:`~eog_core.verify.SqliteSqlRunner` in both policies, SQLite's ``'now'`` pinned to
the rollout's ``finished_at`` (when the live verifiers ran). No model and no gym: a
``response_check`` verifier, which needs a judge, is scored as the engine scores it without
one. The result is a run folder like any other (``rollouts.jsonl``, ``upstream/``,
``states/``) plus ``rescore.json``: where it came from and what changed.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core._json import dumps_line
from eog_core.errors import UsageError
from eog_core.replay._source import SourceRun, TaskFile, after_state, tool_names
from eog_core.run import ROLLOUTS_FILE, STATES_DIR, write_upstream_result
from eog_core.state import materialise
from eog_core.verify import PARITY, STRICT, Policy, SqliteSqlRunner, TaskVerdict, verify_task

__all__ = ["RESCORE_FILE", "RESCORE_FORMAT", "Flip", "RescoreReport", "rescore_run"]

RESCORE_FILE = "rescore.json"
RESCORE_FORMAT = "eog_core.rescore/1"
_UNKNOWN = "unknown: the source run did not record it"


@attrs.frozen(kw_only=True)
class Flip:
    """A rollout whose verdict under ``policy`` is not what the source run recorded."""

    task_id: str
    repeat: int
    policy: str
    before: str
    after: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class RescoreReport:
    """What :func:`rescore_run` did (``to_dict`` is ``rescore.json``)."""

    source: Path
    out_dir: Path
    rescored: int
    flips: tuple[Flip, ...]
    tasks: Mapping[str, Mapping[str, Any]]
    """Task id -> provenance: task file, sha256 before (unknown) and after, rollouts."""
    not_in_tasks: tuple[str, ...]
    """Task ids of the run that ``--tasks`` lacks: left out of the new folder."""
    not_in_run: tuple[str, ...]
    """Task ids of ``--tasks`` the run never ran: ignored."""
    not_captured: tuple[tuple[str, int], ...]
    """(task id, repeat) of records without a captured final state: left out."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": RESCORE_FORMAT,
            "source_run": str(self.source),
            "rescored": self.rescored,
            "flips": {
                policy: [f.to_dict() for f in self.flips if f.policy == policy]
                for policy in ("strict", "parity")
            },
            "tasks": dict(self.tasks),
            "left_out": {
                "not_in_tasks": list(self.not_in_tasks),
                "not_captured": [{"task_id": t, "repeat": r} for t, r in self.not_captured],
            },
            "ignored": {"not_in_run": list(self.not_in_run)},
        }


def _runner_for(
    databases: Mapping[str, Path], policy: Policy, now: dt.datetime | None
) -> SqliteSqlRunner:
    """The one SQL runner a re-scored verdict reads the restored state through: parity's
    capped at the gym's ``LIMIT 100`` (what upstream would have read), strict's uncapped."""
    return SqliteSqlRunner(dict(databases), now=now, implicit_limit=policy.offline_implicit_limit)


def _finished_at(record: Mapping[str, Any]) -> dt.datetime | None:
    text = record.get("finished_at")
    try:
        return dt.datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def outcome(verdict: Mapping[str, Any]) -> str:
    """``pass``, ``fail`` or ``incomplete``: what a recorded verdict says, in one word."""
    if not verdict.get("evaluation_completed", True):
        return "incomplete"
    return "pass" if verdict.get("success") else "fail"


def verdict_fields(verdict: TaskVerdict) -> dict[str, Any]:
    """A verdict as a record holds it (strict at the top, parity under ``parity``)."""
    data = verdict.to_dict(detailed=True)
    for key in ("task_id", "domain", "mode"):
        data.pop(key)
    data["num_passed"] = verdict.num_passed
    return data


async def _verdicts(
    task_file: TaskFile, record: Mapping[str, Any], document: Mapping[str, Any]
) -> tuple[TaskVerdict, TaskVerdict]:
    with tempfile.TemporaryDirectory(prefix="eog-rescore-") as folder:
        databases = materialise(document, folder)
        verdicts = []
        for policy in (STRICT, PARITY):
            with _runner_for(databases, policy, _finished_at(record)) as runner:
                verdicts.append(
                    await verify_task(
                        task_file.task,
                        sql=runner,
                        policy=policy,
                        final_response=record.get("final_answer"),
                        tool_calls=tool_names(record),
                    )
                )
    return verdicts[0], verdicts[1]


def _rescored_record(
    record: Mapping[str, Any],
    strict: TaskVerdict,
    parity: TaskVerdict,
    provenance: Mapping[str, Any],
) -> dict[str, Any]:
    fresh = dict(record) | verdict_fields(strict)
    fresh["status"] = "evaluated" if strict.evaluation_completed else "incomplete"
    fresh["failure_reason"] = next(
        (r.error or r.details for r in strict.results if r.failure_kind), None
    )
    fresh["parity"] = verdict_fields(parity)
    damage = record.get("damage")
    if isinstance(damage, Mapping) and damage.get("outcome") in ("PASS", "FAIL_SAFE"):
        fresh["damage"] = dict(damage) | {"outcome": "PASS" if strict.success else "FAIL_SAFE"}
    fresh["rescore"] = {
        "source_run": provenance["source_run"],
        "before": {"strict": outcome(record), "parity": outcome(record.get("parity") or {})},
        "task_sha256_before": sha256_before(record),
        "task_sha256_after": provenance["sha256_after"],
        "state": after_state(record),
    }
    return fresh


def sha256_before(record: Mapping[str, Any]) -> str | None:
    """The sha256 of the task file the record was scored with, when it says (a record that
    was itself re-scored does); a run's own records do not: None, unknown."""
    earlier = record.get("rescore")
    sha = earlier.get("task_sha256_after") if isinstance(earlier, Mapping) else None
    return sha if isinstance(sha, str) else None


def _prepare_out(source: Path, out_dir: Path) -> Path:
    """A fresh folder beside ``out_dir`` to build in (renamed into place at the end)."""
    if out_dir.resolve() == source.resolve():
        raise UsageError("--out must be a new folder, not the run being re-scored")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UsageError(f"--out {out_dir} exists and is not empty: give a new folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    umask = os.umask(0)
    os.umask(umask)
    building.chmod(0o777 & ~umask)  # mkdtemp's 0700 is not what a run folder gets
    return building


def _copy_state(run: SourceRun, sha: str, building: Path) -> None:
    target = building / STATES_DIR / f"{sha}.json.gz"
    if not target.exists():
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(run.state_file(sha), target)


async def rescore_run(
    run_dir: str | Path, task_files: Mapping[str, TaskFile], out_dir: str | Path
) -> RescoreReport:
    """Re-score every captured rollout of ``run_dir`` whose task ``task_files`` holds into
    the new run folder ``out_dir`` (built aside, renamed into place when whole)."""
    run = SourceRun.read(run_dir)
    run.refuse_uncaptured()
    out = Path(out_dir)
    run_tasks = {str(r["task_id"]) for r in run.records}
    if not run_tasks & set(task_files):
        raise UsageError(
            f"none of the tasks of --tasks is in {run.path} (its tasks: "
            f"{', '.join(sorted(run_tasks)[:5])}{', ...' if len(run_tasks) > 5 else ''})"
        )
    building = _prepare_out(run.path, out)
    try:
        report = await _rescore_into(run, task_files, building, out)
        os.replace(building, out)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return report


async def _rescore_into(
    run: SourceRun, task_files: Mapping[str, TaskFile], building: Path, out: Path
) -> RescoreReport:
    lines: list[str] = []
    flips: list[Flip] = []
    not_captured: list[tuple[str, int]] = []
    tasks: dict[str, dict[str, Any]] = {}
    for record in run.records:
        task_id, repeat = str(record["task_id"]), int(record["repeat"])
        task_file = task_files.get(task_id)
        sha = after_state(record)
        if task_file is None:
            continue
        if sha is None:
            not_captured.append((task_id, repeat))
            continue
        strict, parity = await _verdicts(task_file, record, run.state(sha))
        provenance = {"source_run": str(run.path), "sha256_after": task_file.sha256}
        fresh = _rescored_record(record, strict, parity, provenance)
        for policy, old, new in (
            ("strict", outcome(record), outcome(fresh)),
            ("parity", outcome(record.get("parity") or {}), outcome(fresh["parity"])),
        ):
            if old != new:
                flips.append(
                    Flip(task_id=task_id, repeat=repeat, policy=policy, before=old, after=new)
                )
        for kept in (sha, (record.get("state") or {}).get("before")):
            if isinstance(kept, str) and run.state_file(kept).is_file():
                _copy_state(run, kept, building)
        if fresh["status"] == "evaluated":
            write_upstream_result(
                building,
                task_file.task,
                fresh,
                tools_available=int(fresh.get("tools_offered") or 0),
            )
        lines.append(dumps_line(fresh))
        entry = tasks.setdefault(
            task_id,
            {
                "task_file": str(task_file.path),
                "task_sha256_before": sha256_before(record),
                "task_sha256_before_note": None if sha256_before(record) else _UNKNOWN,
                "task_sha256_after": task_file.sha256,
                "rollouts": [],
            },
        )
        entry["rollouts"].append({"repeat": repeat, "state": sha})
    if not lines:
        raise UsageError(
            f"no rollout of the tasks of --tasks in {run.path} has a captured final state: "
            "rerun it with --capture-state"
        )
    report = RescoreReport(
        source=run.path,
        out_dir=out,
        rescored=len(lines),
        flips=tuple(sorted(flips, key=lambda f: (f.policy, f.task_id, f.repeat))),
        tasks=tasks,
        not_in_tasks=tuple(sorted({str(r["task_id"]) for r in run.records} - set(task_files))),
        not_in_run=tuple(sorted(set(task_files) - {str(r["task_id"]) for r in run.records})),
        not_captured=tuple(not_captured),
    )
    (building / ROLLOUTS_FILE).write_text("".join(line + "\n" for line in lines), "utf-8")
    (building / RESCORE_FILE).write_text(dumps_line(report.to_dict()) + "\n", "utf-8")
    return report
