"""Where a run writes: ``rollouts.jsonl`` (appended, flushed, resumable) and ``upstream/``.

Resuming reads the existing ``rollouts.jsonl``: evaluated rollouts are kept and
skipped; a torn last line (a run killed mid-write, even inside a multi-byte
character) and records of rollouts that could not be evaluated are dropped, so
those rollouts run again. The file is rewritten (atomically) only when something
was dropped. Every record is one line of valid UTF-8 JSON (:func:`dumps_line`: no
raw line separator, lone surrogates escaped), whatever text the model wrote.

``upstream/run_<repeat+1>/results_<mode>__<domain>__<task_id>.json`` holds one
file per evaluated rollout in upstream's result format, scored with the parity
verdict, so upstream's ``compute_score.py`` and ``eog-core score`` read it.
Rollouts that could not be evaluated get no file: upstream would average them
in as 0. The upstream file is written before its record is appended, and a
resumed run writes the file of any kept record that lacks one, so a kill at any
instant leaves a consistent folder.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import attrs

from eog_core._json import dumps_line
from eog_core._jsonl import loads_line
from eog_core.errors import UsageError
from eog_core.run._folder import FolderLock, atomic_write
from eog_core.run._output_decomposing import decomposing_flow, decomposing_metadata
from eog_core.run._records import RolloutKey, record_key, safe_file_part
from eog_core.tasks import Task

__all__ = [
    "ROLLOUTS_FILE",
    "UPSTREAM_DIR",
    "RolloutLog",
    "upstream_path",
    "upstream_result",
    "write_upstream_result",
]

ROLLOUTS_FILE = "rollouts.jsonl"
UPSTREAM_DIR = "upstream"


@attrs.define
class RolloutLog:
    """``DIR/rollouts.jsonl``: the evaluated rollouts so far, and the file new ones go to."""

    path: Path
    finished: dict[RolloutKey, dict[str, Any]]
    dropped: int = 0
    """Lines dropped on opening: a torn last line and rollouts that were not evaluated."""
    _out: IO[str] | None = attrs.field(default=None, repr=False)
    _lock: FolderLock | None = attrs.field(default=None, repr=False)

    @classmethod
    def open(
        cls,
        out_dir: Path,
        *,
        model: str | None = None,
        api: str | None = None,
        keep: Callable[[Mapping[str, Any]], bool] | None = None,
        orchestrator: str | None = None,
    ) -> RolloutLog:
        """Lock the folder (:class:`FolderLock`: one writer at a time), read what an earlier
        run left, drop what must run again (and evaluated records ``keep`` refuses: one whose
        state files are gone), open for appending. Records of another ``model`` or ``api``
        (when given) are refused: one folder, one model on one API, as are records of another
        ``orchestrator`` (a record without one is ``react``'s)."""
        if out_dir.exists() and not out_dir.is_dir():  # mkdir would say only "File exists"
            raise NotADirectoryError(f"{out_dir} is a file, not a folder for the run's output")
        out_dir.mkdir(parents=True, exist_ok=True)
        lock = FolderLock.acquire(out_dir)
        try:
            log = cls._read(
                out_dir / ROLLOUTS_FILE, model=model, api=api, keep=keep, orchestrator=orchestrator
            )
        except BaseException:
            lock.release()
            raise
        log._lock = lock
        return log

    @classmethod
    def _read(
        cls,
        path: Path,
        *,
        model: str | None,
        api: str | None,
        keep: Callable[[Mapping[str, Any]], bool] | None,
        orchestrator: str | None = None,
    ) -> RolloutLog:
        raw = path.read_bytes() if path.exists() else b""
        lines = raw.split(b"\n")
        torn = lines.pop() != b""  # bytes after the last newline never finished writing
        kept: list[str] = []
        finished: dict[RolloutKey, dict[str, Any]] = {}
        dropped = int(torn)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = loads_line(line)  # one reader for every record (deep ones too)
                key = record_key(record)
            except (ValueError, KeyError, TypeError) as exc:
                raise UsageError(
                    f"{path}:{number}: not a rollout record ({exc}); use another --out directory"
                ) from exc
            if model is not None and record.get("model") != model:
                raise UsageError(
                    f"{path} holds rollouts of model {record.get('model')!r}, not "
                    f"{model!r}; use another --out directory"
                )
            if api is not None and record.get("api") not in (None, api):  # 0.1 wrote none
                raise UsageError(
                    f"{path} holds rollouts of API {record.get('api')!r}, not {api!r}; use "
                    "another --out directory"
                )
            if orchestrator is not None and record.get("orchestrator", "react") != orchestrator:
                raise UsageError(
                    f"{path} holds rollouts of --orchestrator {record.get('orchestrator', 'react')}"
                    f", not {orchestrator}; use another --out directory"
                )
            if (
                record.get("status") != "evaluated"
                or key in finished
                or (keep is not None and not keep(record))
            ):
                dropped += 1
                continue
            finished[key] = record
            kept.append(line.decode("utf-8"))
        if dropped:
            atomic_write(path, "".join(f"{line}\n" for line in kept).encode("utf-8"))
        log = cls(path=path, finished=finished, dropped=dropped)
        log._out = path.open("a", encoding="utf-8")
        return log

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line and flush it to the file."""
        if self._out is None:
            raise UsageError("the rollout log is closed")
        self._out.write(dumps_line(record) + "\n")
        self._out.flush()

    def close(self) -> None:
        """Close the file and release the folder. Idempotent."""
        if self._out is not None:
            self._out.close()
            self._out = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _observation_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _conversation_flow(task: Task, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    if record.get("orchestrator") == "decomposing":
        return decomposing_flow(task, record)
    user: dict[str, Any] = {"type": "user_message", "content": task.user_prompt or ""}
    if record.get("orchestrator") == "planner_react":  # upstream's planner_react flow
        user = {
            "type": "user_message",
            "content": record.get("executor_user_prompt") or "",
            "original_task": task.user_prompt or "",
            "generated_plan": record.get("plan") or "",
        }
    flow: list[dict[str, Any]] = [
        {"type": "system_message", "content": task.system_prompt or ""},
        user,
    ]
    for turn in record.get("turns") or ():
        if turn.get("role") == "planner":  # upstream's flow has the plan, not the answer
            continue
        flow.append(
            {
                "type": "ai_message",
                "content": turn["text"],
                "usage_metadata": turn["usage"],
                "response_metadata": {"finish_reason": turn["finish_reason"]},
                "tool_calls": [
                    {"name": c["name"], "args": _observation_value(c["arguments"])}
                    for c in turn["tool_calls"]
                ],
            }
        )
        flow.extend(
            {
                "type": "tool_result",
                "tool_name": c["name"],
                "gym_server": c["gym"],
                "result": {
                    "success": True,
                    "result": _observation_value(c["observation"]),
                    "error": None,
                },
            }
            for c in turn["tool_calls"]
        )
    return flow


def _statistics(run: Mapping[str, Any], tools_used: list[str]) -> dict[str, Any]:
    """Upstream's ``statistics`` of a file holding this one run."""
    success = bool(run.get("overall_success"))
    summary = run.get("verification_summary") or {"total": 0, "passed": 0}
    passed, total = summary["passed"], summary["total"]
    usage: dict[str, int] = {}
    for name in tools_used:
        usage[name] = usage.get(name, 0) + 1
    return {
        "total_runs": 1,
        "successful_runs": int(success),
        "overall_success_rate": 1.0 if success else 0.0,
        "pass_at_1": 1.0 if success else 0.0,
        "verifier_level_pass_rate": passed / total if total else 0,
        "total_verifiers_checked": total,
        "total_verifiers_passed": passed,
        "individual_verifier_stats": {
            name: {
                "passed": int(bool(r.get("passed"))),
                "total": 1,
                "pass_rate": 1.0 if r.get("passed") else 0.0,
            }
            for name, r in (run.get("verification_results") or {}).items()
        },
        "mean_execution_time_ms": run.get("execution_time_ms", 0),
        "tool_usage": usage,
    }


def upstream_result(
    task: Task, record: Mapping[str, Any], *, model: str, tools_available: int
) -> dict[str, Any]:
    """One evaluated rollout as upstream's ``results_*.json``: one run, the parity verdict's
    run record (a parity run error is recorded as upstream records it)."""
    parity = record["parity"]
    run: dict[str, Any] = {"run_number": 1}
    if parity.get("error"):
        run |= {"error": parity["error"], "overall_success": False}
    else:
        calls = [c for turn in record.get("turns") or () for c in turn["tool_calls"]]
        run |= {
            "started_at": record["started_at"],
            "execution_time_ms": int(record["duration_ms"]),
            "model_response": record["final_answer"],
            "conversation_flow": _conversation_flow(task, record),
            "tools_used": record["tools_used"],
            "tool_results": [
                {
                    "tool_name": c["name"],
                    "arguments": _observation_value(c["arguments"]),
                    "result": {
                        "success": True,
                        "result": _observation_value(c["observation"]),
                        "error": None,
                    },
                    "gym_server": c["gym"],
                }
                for c in calls
            ],
            "verification_results": parity["verification_results"],
            "verification_summary": parity["verification_summary"],
            "overall_success": parity["overall_success"],
        }
        if record.get("orchestrator") == "planner_react":  # get_result_metadata()
            run["generated_plan"] = record.get("plan") or ""
        elif record.get("orchestrator") == "decomposing":
            run |= decomposing_metadata(record)
    return {
        "benchmark_config": {
            "model": f"openai-compatible/{model}",
            "number_of_runs": 1,
            "user_prompt": task.user_prompt,
            "gym_servers": [
                {
                    "name": g.name,
                    "url": g.url,
                    "seed_database_file": g.seed_database_file or "",
                    "uses_cloning": True,
                }
                for g in task.gym_servers
            ],
            "total_gyms": len(task.gym_servers),
            "total_tools_available": tools_available,
        },
        "runs": [run],
        "statistics": _statistics(run, record["tools_used"] if "tools_used" in run else []),
    }


_MAX_NAME_BYTES = 255  # NAME_MAX of Linux and macOS file systems


def upstream_path(out_dir: Path, record: Mapping[str, Any]) -> Path:
    """``out_dir/upstream/run_<repeat+1>/results_<mode>__<domain>__<task_id>.json``; a name too
    long for the file system keeps its head and gets a hash of the whole (upstream's scorer
    reads every ``results_*.json`` and takes the task from inside the file)."""
    name = "results_{}__{}__{}.json".format(
        *(safe_file_part(str(record[k])) for k in ("mode", "domain", "task_id"))
    )
    if len(name.encode()) > _MAX_NAME_BYTES:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        name = f"{name[: _MAX_NAME_BYTES - len(digest) - 7]}~{digest}.json"
    return out_dir / UPSTREAM_DIR / f"run_{int(record['repeat']) + 1}" / name


def write_upstream_result(
    out_dir: Path, task: Task, record: Mapping[str, Any], *, tools_available: int
) -> Path:
    """Write (atomically) the upstream-format file of one evaluated rollout; returns its path."""
    path = upstream_path(out_dir, record)
    body = upstream_result(
        task, record, model=str(record["model"]), tools_available=tools_available
    )
    # compact: the C encoder (indent would take the pure-Python one, ~5x the CPU)
    atomic_write(path, dumps_line(body).encode("utf-8"))
    return path
