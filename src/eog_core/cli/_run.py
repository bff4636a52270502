"""``eog-core run``: evaluate a model on tasks end to end, resumably.

Exit codes: 0 every rollout was evaluated (or all were already recorded); 3 some
could not be (their records say why), the input is bad (a seed file missing, found
before the first rollout), or the model endpoint went down during the run; 2 usage
errors, an ``--out`` another run holds, and a model endpoint that fails the check
before the run (wrong URL, key or model name); 130 interrupted (Ctrl-C: the rollouts
in flight are cancelled and their databases deleted; rerun the same command to resume).
Options: ``_run_parser``; what is printed: ``_run_output``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from eog_core.cli._common import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    emit_json,
)
from eog_core.cli._run_output import outcome_json, print_outcome, progress_line, ticker
from eog_core.cli._run_parser import build_parser
from eog_core.cli._selection import selected
from eog_core.cli._shared import (
    check_gym_names,
    check_launch_options,
    check_state_options,
    damage_specs,
    gym_directory,
    gym_timeouts,
    launched_gyms,
    load_task_paths,
    on_signals,
)
from eog_core.errors import ModelPreflightError, SeedFileError, UsageError
from eog_core.gym import GymDirectory
from eog_core.run import (
    MAX_CONCURRENCY,
    MAX_REPEATS,
    EvaluationPlan,
    ModelClient,
    ModelSettings,
    RolloutOptions,
    RunProgress,
    RunReport,
    run_evaluation,
)
from eog_core.tasks import Task, load_tool_snapshots

__all__ = ["EXIT_INTERRUPTED", "add_parser", "progress_line", "run_command"]

EXIT_INTERRUPTED = 130


def add_parser(commands: Any) -> None:
    build_parser(commands).set_defaults(handler=run_command)


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
        probe_timeout=args.probe_timeout,
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
    check_state_options(args)
    if args.ray_actors is not None and args.ray_actors < 1:
        raise UsageError(f"--ray-actors must be at least 1, got {args.ray_actors}")
    if args.ray_actors is not None and not args.ray:
        raise UsageError("--ray-actors needs --ray ADDRESS")
    check_launch_options(args)
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

    bar = asyncio.create_task(ticker(progress, sys.stderr)) if sys.stderr.isatty() else None
    try:
        with on_signals(on_interrupt):
            if args.launch and args.preflight:  # the model first: no containers for a dead one
                async with ModelClient(settings) as probe:
                    await probe.preflight()
            async with launched_gyms(args, tasks, directory) as gyms:
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
        if bar is not None:
            bar.cancel()
            sys.stderr.write("\r" + progress_line(progress) + "\033[K\n")
    return report, False


def run_command(args: argparse.Namespace) -> int:
    try:
        _check(args)
        settings = _settings(args, dict(os.environ))
        directory = gym_directory(args)
        loaded = load_task_paths(args.tasks)
        check_gym_names(args.gym or (), loaded)
        tasks = selected(loaded, args)
    except UsageError as exc:
        print(f"eog-core run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        specs = damage_specs(args)
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
        capture_state=args.capture_state,
        max_state_bytes=args.max_state_bytes,
        max_state_rows=args.max_state_rows,
        damage_specs=specs,
    )
    try:
        report, interrupted = asyncio.run(_run(args, tasks, settings, directory, options))
    except (UsageError, ModelPreflightError) as exc:
        print(f"eog-core run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SeedFileError as exc:  # found before the first rollout
        print(f"eog-core run: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.json:
        emit_json(outcome_json(args.out, args.repeats, report, interrupted))
    else:
        print_outcome(args.out, args.repeats, report)
    if interrupted:
        return EXIT_INTERRUPTED
    assert report is not None
    return EXIT_OK if report.all_evaluated else EXIT_INPUT
