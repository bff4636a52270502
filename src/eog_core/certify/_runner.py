"""``certify_tasks``: every check of every task on the gyms, one certificate per task.

Per task, each on fresh databases: the static findings; the do-nothing control
(with each verifier query's rows on the seed); the oracle and each counterexample
played through ``run``'s rollout (agent loop, verify, delete) against an
in-process :class:`~eog_core.local.ScriptedModel`, one script per rollout; then,
for a given oracle, its tool calls replayed prefix by prefix (the shortest
prefix after which each verifier passes, and after which call the oracle first
changed the state) with the row counts after the whole replay. A gym that fails
(unreachable, a seed refused) leaves the task ``incomplete`` with the reason in
``checks.incomplete``. Every database is deleted or, if that failed, reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from eog_core.certify._certificate import Certificate, CertificateFinding, certificate_status
from eog_core.certify._checks import (
    CheckRun,
    run_control,
    run_prefix,
    verdict_word,
    verifier_keys,
)
from eog_core.certify._scripts import Script, TaskScripts
from eog_core.errors import EogError
from eog_core.gym import GymDirectory, Janitor, SessionStart, TaskSession, Timeouts
from eog_core.local import ScriptedModel
from eog_core.run import ModelClient, ModelSettings, RolloutOptions, run_rollout
from eog_core.tasks import Task, ToolSnapshot
from eog_core.verify import TRUNCATED

__all__ = ["ROW_CAP", "CertifyOptions", "CertifyReport", "TaskSource", "certify_tasks"]

ROW_CAP = 100
"""Rows the real gyms' ``/api/sql-runner`` returns of a query without a LIMIT of its own."""

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class TaskSource:
    """A task with where it came from: the file as given, the sha256 of its bytes (of the
    row's, for a .jsonl row), and per gym its seed file's path and sha256 when found."""

    task: Task
    file: str
    sha256: str
    seed_files: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    static: tuple[CertificateFinding, ...] = ()
    """The task's static findings (``validate``'s kinds), found before any gym is reached."""


@attrs.frozen(kw_only=True)
class CertifyOptions:
    seed_root: Path | None = None
    tool_snapshots: Mapping[str, ToolSnapshot] | None = None
    timeouts: Timeouts | None = None
    concurrency: int = 4
    """Checks in flight at once, over all tasks (each check holds its own databases)."""
    image_digests: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class CertifyReport:
    certificates: tuple[Certificate, ...]
    leaked: tuple[str, ...] = ()
    """Databases whose deletion failed for good (``gym:database_id``)."""


@attrs.define
class _Context:
    directory: GymDirectory
    options: CertifyOptions
    janitor: Janitor
    model: ScriptedModel
    limit: asyncio.Semaphore

    def open_session(self, task: Task) -> SessionStart[TaskSession]:
        return TaskSession.start(
            task,
            directory=self.directory,
            seed_root=self.options.seed_root,
            tool_snapshots=self.options.tool_snapshots,
            janitor=self.janitor,
            timeouts=self.options.timeouts,
        )

    async def bounded(self, work: Callable[[], Awaitable[T]]) -> T:
        async with self.limit:
            return await work()

    async def play(self, task: Task, script: Script) -> dict[str, Any]:
        """One rollout of ``run`` with the scripted model playing ``script``."""
        name = f"{task.task_id}/{script.name}"
        self.model.scripts[name] = list(script.model_script())
        settings = ModelSettings(model=name, base_url=self.model.base_url, max_retries=0)
        rollout = RolloutOptions(
            seed_root=self.options.seed_root,
            tool_snapshots=self.options.tool_snapshots,
            timeouts=self.options.timeouts,
            max_turns=len(script.turns) + 1,
            rollout_retries=0,
        )
        async with ModelClient(settings) as client:
            return await self.bounded(
                lambda: run_rollout(
                    task,
                    0,
                    client=client,
                    directory=self.directory,
                    janitor=self.janitor,
                    options=rollout,
                )
            )


class _Incomplete(Exception):
    """A check could not complete: the certificate says so instead of judging."""


def _record_words(record: Mapping[str, Any]) -> tuple[str, str]:
    if record.get("status") != "evaluated":
        raise _Incomplete(f"{record.get('failure_kind')}: {record.get('failure_reason')}")
    parity = record.get("parity") or {}

    def word(fields: Mapping[str, Any]) -> str:
        if fields.get("success"):
            return "pass"
        return "error" if fields.get("failure_kind") else "fail"

    return word(record), word(parity)


def _unreachable(run: CheckRun) -> CheckRun:
    if "gym_unreachable" in (run.strict.failure_kind, run.parity.failure_kind):
        raise _Incomplete("a verifier query could not reach its gym")
    return run


async def _check(work: Callable[[], Awaitable[T]], context: _Context) -> T:
    try:
        return await context.bounded(work)
    except EogError as exc:
        raise _Incomplete(f"{type(exc).__name__}: {exc}") from exc


def _control_findings(
    task: Task, control: CheckRun
) -> tuple[dict[str, Any], list[CertificateFinding]]:
    keys = verifier_keys(task)
    findings = [
        CertificateFinding(
            kind="passes_without_action",
            mode=mode,
            detail=f"the {mode} verdict passes on the seeded database with no action",
        )
        for mode, verdict in (("strict", control.strict), ("parity", control.parity))
        if verdict.success
    ]
    for key, result in zip(keys, control.strict.results, strict=True):
        if (
            result.kind == "database_state"
            and result.failure_kind == "verifier_error"
            and not (result.error or "").startswith(TRUNCATED)  # truncated_on_gym says it
        ):
            findings.append(
                CertificateFinding(
                    kind="sql_fails_on_seed",
                    verifier=key,
                    detail=f"the seeded database rejects the query: {result.error}",
                )
            )
    holding = [key for key, r in zip(keys, control.strict.results, strict=True) if r.passed]
    check = {
        "strict": verdict_word(control.strict),
        "parity": verdict_word(control.parity),
        "holding_on_seed": holding,
    }
    return check, findings


def _counterexample_finding(name: str, mode: str, word: str, expected: str) -> CertificateFinding:
    """A counterexample that passes; or one whose author expects it to pass
    (``expected.eog_success``) and does not: then it is an oracle that fails."""
    if expected == "pass":
        return CertificateFinding(
            kind="oracle_fails",
            mode=mode,
            detail=f"counterexample {name}, expected to pass (expected.eog_success), "
            f"does not pass {mode}: {word}",
        )
    return CertificateFinding(
        kind="counterexample_passes", mode=mode, detail=f"counterexample {name} passes {mode}"
    )


async def _play_scripts(
    source: TaskSource, scripts: TaskScripts, context: _Context
) -> tuple[dict[str, Any], list[CertificateFinding]]:
    task = source.task
    checks: dict[str, Any] = {}
    findings: list[CertificateFinding] = []
    oracle = scripts.oracle
    if oracle is not None:
        strict, parity = _record_words(await context.play(task, oracle))
        checks["oracle"] = {"passed": strict == "pass", "strict": strict, "parity": parity}
        findings += [
            CertificateFinding(
                kind="oracle_fails",
                mode=mode,
                detail=f"the oracle ({oracle.path.name}) does not pass {mode}: {word}",
            )
            for mode, word in (("strict", strict), ("parity", parity))
            if word != "pass"
        ]
    played = []
    for script in scripts.counterexamples:
        strict, parity = _record_words(await context.play(task, script))
        expected = "pass" if script.expects_success else "fail"
        played.append(
            {
                "name": script.name,
                "passed": strict == "pass",
                "strict": strict,
                "parity": parity,
                "expected": expected,
            }
        )
        findings += [
            _counterexample_finding(script.name, mode, word, expected)
            for mode, word in (("strict", strict), ("parity", parity))
            if (word == "pass") != (expected == "pass")
        ]
    checks["counterexamples"] = played
    return checks, findings


async def _sensitivity(
    task: Task, oracle: Script, control: CheckRun, passed: bool, context: _Context
) -> tuple[dict[str, Any] | None, CheckRun, list[CertificateFinding]]:
    """The replays of the oracle's prefixes (all of them only when the oracle passed)."""
    calls, open_session = oracle.tool_calls, context.open_session
    final = next((t for t in reversed(oracle.turns) if isinstance(t, str)), None)
    whole = await _check(
        lambda: run_prefix(
            task, open_session, calls, final_answer=final, count_rows=True, find_first_write=True
        ),
        context,
    )
    if not passed:
        return None, _unreachable(whole), []
    runs = [control]
    runs += await asyncio.gather(
        *(
            _check(lambda k=k: run_prefix(task, open_session, calls[:k]), context)  # type: ignore[misc]
            for k in range(1, len(calls))
        )
    )
    runs.append(whole)
    for run in runs:
        _unreachable(run)
    first_write = whole.first_write
    sensitivity: dict[str, Any] = {}
    findings = []
    for index, key in enumerate(verifier_keys(task)):
        shortest = next((k for k, run in enumerate(runs) if run.strict.results[index].passed), None)
        sensitivity[key] = {"shortest_prefix": shortest, "of": len(calls)}
        if shortest is not None and (first_write is None or shortest < first_write):
            wrote = (
                f"the oracle's first write is call {first_write}"
                if first_write is not None
                else "the oracle changes nothing"
            )
            findings.append(
                CertificateFinding(
                    kind="verifier_insensitive",
                    verifier=key,
                    detail=f"passes after {shortest} of the oracle's {len(calls)} calls; {wrote}",
                )
            )
    return sensitivity, whole, findings


def _row_findings(counts: Mapping[str, Mapping[str, int | None]]) -> list[CertificateFinding]:
    findings = []
    for key, seen in counts.items():
        over = {when: n for when, n in seen.items() if n is not None and n > ROW_CAP}
        if over:
            findings.append(
                CertificateFinding(
                    kind="truncated_on_gym",
                    verifier=key,
                    detail="the query yields "
                    + ", ".join(f"{n} rows {when.replace('_', ' ')}" for when, n in over.items())
                    + f"; the gym's sql-runner returns at most {ROW_CAP}",
                )
            )
    return findings


async def _certify(
    source: TaskSource, scripts: TaskScripts | None, context: _Context
) -> Certificate:
    task = source.task
    findings = list(source.static)
    checks: dict[str, Any] = {
        "static": {"kinds": sorted({f.kind for f in source.static})},
        "do_nothing": None,
        "oracle": None,
        "counterexamples": [],
        "sensitivity": None,
        "row_counts": {},
    }
    incomplete = False
    try:
        control = _unreachable(
            await _check(lambda: run_control(task, context.open_session), context)
        )
        checks["do_nothing"], found = _control_findings(task, control)
        findings += found
        after: Mapping[str, int | None] = {}
        if scripts is not None:
            played, found = await _play_scripts(source, scripts, context)
            checks.update(played)
            findings += found
            if scripts.oracle is not None:
                passed = bool(checks["oracle"]["passed"])
                checks["sensitivity"], whole, found = await _sensitivity(
                    task, scripts.oracle, control, passed, context
                )
                findings += found
                after = whole.row_counts
        counts = {
            key: {"seed": n, **({"after_oracle": after.get(key)} if after else {})}
            for key, n in control.row_counts.items()
        }
        checks["row_counts"] = counts
        findings += _row_findings(counts)
    except _Incomplete as exc:
        incomplete = True
        checks["incomplete"] = str(exc)
    oracle = checks["oracle"]
    return Certificate(
        task_id=task.task_id or "",
        task_file=source.file,
        task_sha256=source.sha256,
        status=certificate_status(
            findings, oracle_passed=oracle["passed"] if oracle else None, incomplete=incomplete
        ),
        findings=tuple(findings),
        checks=checks,
        seed_files=source.seed_files,
        image_digests=context.options.image_digests,
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


async def certify_tasks(
    sources: Sequence[TaskSource],
    *,
    directory: GymDirectory,
    scripts: Mapping[str, TaskScripts] | None = None,
    options: CertifyOptions | None = None,
    on_certificate: Callable[[Certificate], None] | None = None,
) -> CertifyReport:
    """Certify every task on the gyms of ``directory``; ``scripts`` by task id.

    ``on_certificate`` is called as each task's certificate is ready (progress,
    writing it out). The certificates come back in the order of ``sources``.
    """
    options = options or CertifyOptions()
    scripts = scripts or {}
    async with contextlib.AsyncExitStack() as stack:
        model = await stack.enter_async_context(ScriptedModel(scripts={}, keep_requests=False))
        janitor = Janitor(timeouts=options.timeouts)
        context = _Context(
            directory=directory,
            options=options,
            janitor=janitor,
            model=model,
            limit=asyncio.Semaphore(max(1, options.concurrency)),
        )

        async def one(source: TaskSource) -> Certificate:
            certificate = await _certify(source, scripts.get(source.task.task_id or ""), context)
            if on_certificate is not None:
                on_certificate(certificate)
            return certificate

        try:
            certificates = await asyncio.gather(*(one(source) for source in sources))
        finally:
            leaked = await janitor.aclose()
    return CertifyReport(
        certificates=tuple(certificates),
        leaked=tuple(f"{entry.gym}:{entry.database_id}" for entry in leaked),
    )
