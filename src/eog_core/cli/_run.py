"""``eog-core run``: evaluate a model on tasks end to end, resumably.

Exit codes: 0 every rollout was evaluated; 3 some could not be (their records
say why), the input is bad, or the model endpoint went down during the run; 2
usage errors, and a model endpoint that fails the check before the run (wrong
URL, key or model name); 130 interrupted (Ctrl-C: the rollouts in flight are
cancelled and their databases deleted; rerun the same command to resume).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import attrs

from eog_core.cli._common import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_command,
    emit_json,
    positive_seconds,
    table,
)
from eog_core.cli._selection import add_selection_options, selected
from eog_core.cli._shared import (
    add_gym_options,
    gym_directory,
    gym_timeouts,
    load_task_paths,
    on_signals,
)
from eog_core.errors import ModelPreflightError, UsageError
from eog_core.gym import GymDirectory
from eog_core.metrics import (
    CorrectedSummary,
    GroupStats,
    corrected_summary,
    read_verdicts,
    runs_from_verdicts,
)
from eog_core.run import (
    MAX_CONCURRENCY,
    MAX_REPEATS,
    ROLLOUTS_FILE,
    UPSTREAM_DIR,
    EvaluationPlan,
    ModelClient,
    ModelSettings,
    RolloutOptions,
    RunProgress,
    RunReport,
    run_evaluation,
)
from eog_core.tasks import Task, load_tool_snapshots

__all__ = ["add_parser", "run_command"]

EXIT_INTERRUPTED = 130


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "run",
        help="evaluate a model on tasks end to end (agent loop, verify, scores)",
        description="Run every task x repeat as a rollout: seed the gyms, let the model act "
        "through the task's tools (OpenAI-compatible Chat Completions or Responses "
        "API), verify strict and parity, delete the databases. Writes "
        "OUT/rollouts.jsonl (one record per rollout, resumable) and OUT/upstream/ "
        "(upstream's result format). Exit 0 when every rollout was evaluated, 3 when "
        "some could not be, 2 on usage errors, 130 when interrupted.",
        epilog="example: eog-core run tasks/ --base-url http://localhost:8000/v1 --model qwen3 "
        "--repeats 3 --concurrency 16 --out runs/qwen3",
    )
    parser.add_argument(
        "tasks",
        nargs="+",
        type=Path,
        metavar="TASK_PATH",
        help="task files, folders of them, or .jsonl dataset / NeMo rows",
    )
    model = parser.add_argument_group("model")
    model.add_argument(
        "--base-url", required=True, help="OpenAI-style base URL, e.g. http://host:8000/v1"
    )
    model.add_argument("--model", required=True)
    model.add_argument("--api", choices=["chat", "responses"], default="chat")
    model.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY "
        "when set); the key is never printed or written",
    )
    model.add_argument("--temperature", type=float, default=0.0, help="default 0.0, as upstream")
    model.add_argument(
        "--max-output-tokens", type=int, default=4096, help="default 4096, as upstream"
    )
    model.add_argument(
        "--extra-body",
        metavar="JSON",
        default="{}",
        help="extra request fields, merged last; null removes one: '{\"temperature\": null}'",
    )
    model.add_argument(
        "--request-timeout",
        type=positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="bound on one whole model request (default 600)",
    )
    model.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=120.0,
        metavar="SECONDS",
        help="a request that receives nothing this long is checked with GET /models; "
        "no answer to that either and it is given up as hung (default 120)",
    )
    model.add_argument(
        "--unreachable-after",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="stop retrying once every request has failed to connect (refused, "
        "reset, hung) for this long (default 60); a busy server keeps retrying",
    )
    model.add_argument(
        "--no-preflight",
        dest="preflight",
        action="store_false",
        help="skip the check of the endpoint (URL, key, model) before the run",
    )
    (
        model.add_argument(
            "--token-ids",
            action="store_true",
            help="ask for and record token ids and logprobs per turn (vLLM's "
            "return_token_ids, logprobs): for RL",
        ),
    )
    model.add_argument(
        "--model-retries",
        type=int,
        default=8,
        help="retries of one model request on 429/5xx/timeouts (default 8)",
    )
    model.add_argument(
        "--max-requests-per-second",
        type=float,
        metavar="RATE",
        help="bound the model request rate over the whole run",
    )
    model.add_argument(
        "--judge-model", help="model for response_check verifiers (default: --model)"
    )
    run = parser.add_argument_group("run")
    run.add_argument("--out", type=Path, required=True, metavar="DIR")
    run.add_argument("--repeats", type=int, default=1, metavar="K")
    run.add_argument("--concurrency", type=int, default=8, metavar="C", help="rollouts in flight")
    run.add_argument(
        "--max-turns",
        type=int,
        default=50,
        metavar="N",
        help="model answers per rollout (default 50, upstream's ReAct cap)",
    )
    run.add_argument(
        "--rollout-retries",
        type=int,
        default=2,
        metavar="N",
        help="whole-rollout retries after an infrastructure failure (default 2)",
    )
    run.add_argument(
        "--stop-after-unreachable",
        type=int,
        default=3,
        metavar="N",
        help="stop the run (exit 3) after N rollouts in a row found the model "
        "unreachable (default 3; 0 never stops)",
    )
    add_gym_options(run)
    run.add_argument(
        "--launch",
        metavar="docker|podman",
        help="start the gym containers the tasks need on this engine, remove them at "
        "the end (eog_core.fleet; docs/real-benchmark.md)",
    )
    run.add_argument(
        "--max-lifecycles",
        type=int,
        metavar="N",
        help="with --launch: restart a gym container after N task lifecycles "
        "(default 150; the images leak file descriptors)",
    )
    run.add_argument(
        "--forward-any-tool",
        action="store_true",
        help="send calls of tools outside the task's set to the gym (upstream's way)",
    )
    run.add_argument(
        "--raw-schemas",
        action="store_true",
        help="show the model the gyms' raw tool schemas, not upstream's cleaned ones",
    )
    run.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="shard rollouts over a Ray cluster (ray extra): 'auto', "
        "'ray://HOST:10001', or 'local' for a local ray.init()",
    )
    run.add_argument(
        "--ray-actors",
        type=int,
        metavar="N",
        help="Ray actors to shard over (default: the cluster's CPU count)",
    )
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_selection_options(parser)
    parser.set_defaults(handler=run_command)


def _settings(args: argparse.Namespace, environ: dict[str, str]) -> ModelSettings:
    try:
        extra = json.loads(args.extra_body)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--extra-body is not JSON: {exc.msg}") from exc
    if not isinstance(extra, dict):
        raise UsageError("--extra-body must be a JSON object")
    key = None
    if args.api_key_env:
        key = environ.get(args.api_key_env)
        if not key:
            raise UsageError(
                f"--api-key-env {args.api_key_env}: that environment variable is not set"
            )
    else:
        key = environ.get("OPENAI_API_KEY") or None
    return ModelSettings(
        model=args.model,
        base_url=args.base_url,
        api=args.api,
        api_key=key,
        temperature=args.temperature,
        max_output_tokens=args.max_output_tokens,
        extra_body=extra,
        timeout=args.request_timeout,
        max_retries=args.model_retries,
        max_requests_per_second=args.max_requests_per_second,
        idle_timeout=args.idle_timeout,
        unreachable_after=args.unreachable_after,
        token_ids=args.token_ids,
    )


def _check(args: argparse.Namespace) -> None:
    for flag, value, least, most in (
        ("--repeats", args.repeats, 1, MAX_REPEATS),
        ("--concurrency", args.concurrency, 1, MAX_CONCURRENCY),
        ("--max-turns", args.max_turns, 1, 100_000),
        ("--rollout-retries", args.rollout_retries, 0, 100),
        ("--model-retries", args.model_retries, 0, 100),
        ("--stop-after-unreachable", args.stop_after_unreachable, 0, 1_000_000),
    ):
        if not least <= value <= most:
            raise UsageError(f"{flag} must be between {least} and {most:,}, got {value}")
    if args.ray_actors is not None and args.ray_actors < 1:
        raise UsageError(f"--ray-actors must be at least 1, got {args.ray_actors}")
    if args.ray_actors is not None and not args.ray:
        raise UsageError("--ray-actors needs --ray ADDRESS")
    if (args.gym or args.gyms) and args.launch:
        raise UsageError("give --gym/--gyms or --launch, not both")
    if args.max_lifecycles is not None and (not args.launch or args.max_lifecycles < 1):
        raise UsageError("--max-lifecycles takes a positive number and needs --launch")
    if args.launch and args.ray:
        raise UsageError(
            "--launch counts lifecycles in this process, not in Ray actors: start "
            "the gyms with eog-core gyms up and pass --gyms FILE"
        )
    if args.ray:
        try:
            import ray  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            raise UsageError("--ray requires the ray extra: pip install 'eog-core[ray]'") from None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def progress_line(progress: RunProgress) -> str:
    """``[#####.....] 12/40  pass 41.7%  in flight 8  ETA 3m12s`` (done counts resumed ones)."""
    total = progress.total or 1
    done = progress.skipped + progress.done
    filled = int(24 * done / total)
    rate = progress.pass_rate
    passed = "-" if rate is None else f"{100 * rate:.1f}%"
    extra = f"  incomplete {progress.incomplete}" if progress.incomplete else ""
    return (
        f"[{'#' * filled}{'.' * (24 - filled)}] {done}/{progress.total}  pass {passed}  "
        f"in flight {progress.in_flight}{extra}  ETA {_duration(progress.eta_seconds())}"
    )


async def _ticker(progress: RunProgress, stream: TextIO) -> None:
    while True:
        stream.write("\r" + progress_line(progress) + "\033[K")
        stream.flush()
        await asyncio.sleep(0.5)


def _gyms_for(
    args: argparse.Namespace, tasks: list[Task], directory: GymDirectory
) -> contextlib.AbstractAsyncContextManager[GymDirectory]:
    """The directory given, or (``--launch``) the fleet's for the length of the run."""
    if not args.launch:
        return contextlib.nullcontext(directory)
    from eog_core.fleet import DEFAULT_MAX_LIFECYCLES, launch, options_from_env

    return launch(
        tasks,
        options_from_env(
            engine_executable=args.launch,
            max_lifecycles=args.max_lifecycles or DEFAULT_MAX_LIFECYCLES,
        ),
    )


async def _run(
    args: argparse.Namespace,
    tasks: list[Task],
    settings: ModelSettings,
    directory: GymDirectory,
    options: RolloutOptions,
) -> tuple[RunReport | None, bool]:
    progress = RunProgress()
    main = asyncio.current_task()
    interrupted = False

    def on_interrupt() -> None:
        nonlocal interrupted
        if not interrupted and main is not None:
            interrupted = True
            print(
                "\neog-core run: interrupted; cancelling rollouts in flight and deleting their "
                "databases (rerun the same command to resume)",
                file=sys.stderr,
                flush=True,
            )
            main.cancel()

    ticker = asyncio.create_task(_ticker(progress, sys.stderr)) if sys.stderr.isatty() else None
    try:
        with on_signals(on_interrupt):
            if args.launch and args.preflight:  # the model first: no containers for a dead one
                async with ModelClient(settings) as probe:
                    await probe.preflight()
            async with _gyms_for(args, tasks, directory) as gyms:
                report = await run_evaluation(
                    tasks,
                    settings,
                    args.out,
                    plan=EvaluationPlan(
                        repeats=args.repeats,
                        concurrency=args.concurrency,
                        judge_model=args.judge_model,
                        ray_address=args.ray,
                        ray_actors=args.ray_actors,
                        preflight=args.preflight,
                        max_consecutive_unreachable=args.stop_after_unreachable or None,
                    ),
                    directory=gyms,
                    options=options,
                    progress=progress,
                )
    except asyncio.CancelledError:
        if not interrupted:
            raise
        return None, True
    finally:
        if ticker is not None:
            ticker.cancel()
            sys.stderr.write("\r" + progress_line(progress) + "\033[K\n")
    return report, False


def _summary(out: Path, repeats: int) -> CorrectedSummary | None:
    path = out / ROLLOUTS_FILE
    if not path.exists():
        return None
    runs = runs_from_verdicts(read_verdicts(path))
    return corrected_summary(runs, k=repeats) if runs else None


def _rows(group: GroupStats) -> list[Any]:
    strict, parity = group.strict, group.parity

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}"

    return [
        group.name,
        group.tasks,
        strict.runs_scored if strict else 0,
        strict.runs_errored if strict else 0,
        pct(strict.task_success_rate if strict else None),
        pct(strict.verifier_pass_rate if strict else None),
        pct(parity.task_success_rate if parity else None),
        pct(parity.verifier_pass_rate if parity else None),
    ]


def summary_table(summary: CorrectedSummary) -> str:
    """Strict pass@1 (avg of k), verifier pass rate, parity beside them: overall and per domain."""
    headers = [
        "domain",
        "tasks",
        "evaluated",
        "incomplete",
        "strict pass@1 %",
        "strict verifier pass %",
        "parity pass@1 %",
        "parity verifier pass %",
    ]
    return table(headers, [_rows(summary.overall), *(_rows(g) for g in summary.by_domain)])


def run_command(args: argparse.Namespace) -> int:
    try:
        _check(args)
        settings = _settings(args, dict(os.environ))
        directory = gym_directory(args)
        tasks = selected(load_task_paths(args.tasks), args)
    except UsageError as exc:
        print(f"eog-core run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    options = RolloutOptions.build(
        seed_root=args.seed_root,
        max_turns=args.max_turns,
        rollout_retries=args.rollout_retries,
        tool_snapshots=load_tool_snapshots(args.tools) if args.tools else None,
        forward_any_tool=args.forward_any_tool,
        raw_schemas=args.raw_schemas,
        timeouts=gym_timeouts(args.timeout),
    )
    try:
        report, interrupted = asyncio.run(_run(args, tasks, settings, directory, options))
    except (UsageError, ModelPreflightError) as exc:
        print(f"eog-core run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    summary = _summary(args.out, args.repeats)
    if args.json:
        emit_json(
            {
                "out": str(args.out),
                "interrupted": interrupted,
                "planned": report.planned if report else None,
                "ran": report.ran if report else None,
                "skipped": report.skipped if report else None,
                "incomplete": [
                    {k: r[k] for k in ("task_id", "repeat", "failure_kind", "failure_reason")}
                    for r in report.incomplete
                ]
                if report
                else None,
                "summary": attrs.asdict(summary) if summary else None,
            }
        )
    else:
        if summary is not None:
            print(summary_table(summary))
        if (args.out / ROLLOUTS_FILE).exists():
            print(f"\nrollouts: {args.out / ROLLOUTS_FILE}")
        if (args.out / UPSTREAM_DIR).is_dir():
            print(
                f"upstream format: {args.out / UPSTREAM_DIR} "
                f"(eog-core score {args.out / UPSTREAM_DIR})"
            )
        if report is not None and report.incomplete:
            print(
                f"{len(report.incomplete)} rollout(s) could not be evaluated; rerun the same "
                "command to retry them:"
            )
            for record in report.incomplete[:10]:
                print(
                    f"  {record['task_id']} repeat {record['repeat']}: {record['failure_kind']}: "
                    f"{record['failure_reason']}"
                )
    if interrupted:
        return EXIT_INTERRUPTED
    assert report is not None
    return EXIT_OK if report.all_evaluated else EXIT_INPUT
