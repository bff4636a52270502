"""``eog-core gateway``: a run's tasks as scored MCP endpoints for any agent harness.

Serves until every task x repeat is evaluated (exit 0), or until Ctrl-C or
SIGTERM (exit 130: the rollouts out are abandoned, recorded and their databases
deleted; the same command resumes). Bad settings exit 2, bad input 3.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eog_core._http1 import Limits
from eog_core.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    add_command,
    emit_json,
    port_number,
    positive_seconds,
    whole_number,
)
from eog_core.cli._run import EXIT_INTERRUPTED
from eog_core.cli._shared import (
    add_gym_options,
    add_state_options,
    check_gym_names,
    check_state_options,
    damage_specs,
    gym_directory,
    gym_timeouts,
    load_task_paths,
    on_signals,
)
from eog_core.errors import UsageError
from eog_core.tasks import load_tool_snapshots

if TYPE_CHECKING:
    from eog_core.gateway import Gateway

__all__ = ["add_parser", "run_gateway"]


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "gateway",
        help="serve tasks as scored MCP endpoints for any agent (Claude Code, Codex...)",
        description="Hand out rollouts of TASK_PATH x --repeats through a control API (POST "
        "/rollouts, POST /rollouts/ID/finish, DELETE /rollouts/ID, GET /rollouts); "
        "each rollout has its own MCP endpoint (Streamable HTTP) with exactly the "
        "task's tools. Finishing verifies strict and parity and appends the record to "
        "OUT/rollouts.jsonl as `eog-core run` does (resumable). Exit 0 when every "
        "rollout is evaluated, 130 when stopped (Ctrl-C, SIGTERM), 2 on usage errors, "
        "3 on bad input. docs/gateway.md is the guide.",
        epilog="example: eog-core gateway tasks/ --gym sn-csm-server=http://localhost:8001 "
        "--seed-root seeds/ --out runs/claude-code --token-env EOG_GATEWAY_TOKEN",
    )
    parser.add_argument(
        "tasks",
        nargs="+",
        type=Path,
        metavar="TASK_PATH",
        help="task files, folders of them, or .jsonl dataset / NeMo rows",
    )
    add_gym_options(parser)
    add_state_options(parser)
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="the run's folder: rollouts.jsonl and upstream/ (an existing one resumes)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (loopback only)")
    parser.add_argument("--port", type=port_number, default=0, help="0 (default) picks a free port")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that is not loopback (set --token-env too)",
    )
    parser.add_argument(
        "--max-connections",
        type=whole_number(1, 1 << 20),
        default=Limits().max_connections,
        metavar="N",
        help="client connections held at once (beyond: the one idle longest is closed, or "
        "503; default %(default)s)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=whole_number(1024, 1 << 30),
        default=Limits().max_request_body,
        metavar="N",
        help="the largest request body taken (beyond: 413, answered before it is read; "
        "default %(default)s, 1 MiB)",
    )
    parser.add_argument("--repeats", type=int, default=1, metavar="K", help="rollouts of each task")
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        help="every request needs 'Authorization: Bearer $VAR' (never printed)",
    )
    parser.add_argument(
        "--control-token-env",
        metavar="VAR",
        help="the control API needs 'Authorization: Bearer $VAR' instead (then "
        "--token-env guards the MCP endpoints only: give agents that one)",
    )
    parser.add_argument(
        "--max-calls-per-rollout",
        type=int,
        default=16,
        metavar="N",
        help="tool calls of one rollout running on the gym at once; more queue (default 16)",
    )
    parser.add_argument(
        "--rollout-ttl",
        type=positive_seconds,
        metavar="SECONDS",
        help="abandon a rollout idle this long (recorded incomplete, databases deleted; "
        "default: never)",
    )
    parser.add_argument(
        "--finish-tool",
        action="store_true",
        help="offer a finish(answer) MCP tool for agents that cannot call the control API",
    )
    parser.add_argument(
        "--model",
        default="mcp-gateway",
        metavar="LABEL",
        help="the records' model field: the agent's name (default mcp-gateway)",
    )
    parser.add_argument(
        "--judge-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint judging response_check verifiers",
    )
    parser.add_argument(
        "--judge-model", metavar="NAME", help="the judge model (with --judge-base-url)"
    )
    parser.add_argument(
        "--judge-api-key-env",
        metavar="VAR",
        help="environment variable holding the judge's API key (default OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="announce the gateway as one JSON line, and the summary as JSON",
    )
    parser.set_defaults(handler=run_gateway)


def _check(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {args.repeats}")
    if args.max_calls_per_rollout < 1:
        raise UsageError(
            f"--max-calls-per-rollout must be at least 1, got {args.max_calls_per_rollout}"
        )
    check_state_options(args)
    if (args.judge_base_url is None) != (args.judge_model is None):
        raise UsageError("--judge-base-url and --judge-model go together")
    from eog_core.gateway import token_from_env

    if args.control_token_env is not None:
        args.control_token = token_from_env(
            args.control_token_env, environ, flag="--control-token-env"
        )
    return token_from_env(args.token_env, environ)


@contextlib.asynccontextmanager
async def _judge(args: argparse.Namespace, environ: Mapping[str, str]) -> AsyncIterator[Any]:
    if args.judge_base_url is None:
        yield None
        return
    from eog_core.run import ModelClient, ModelJudge, ModelSettings

    variable = args.judge_api_key_env or "OPENAI_API_KEY"
    key = environ.get(variable) or None
    if args.judge_api_key_env and not key:
        raise UsageError(f"--judge-api-key-env {variable}: that environment variable is not set")
    settings = ModelSettings(model=args.judge_model, base_url=args.judge_base_url, api_key=key)
    async with ModelClient(settings) as client:
        yield ModelJudge(client, args.judge_model)


async def _serve(args: argparse.Namespace, token: str | None, environ: Mapping[str, str]) -> int:
    from eog_core.gateway import Gateway
    from eog_core.run import StateCapture

    tasks = load_task_paths(args.tasks)
    check_gym_names(args.gym or (), tasks)
    main = asyncio.current_task()
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped and main is not None:
            stopped = True
            main.cancel()

    async with _judge(args, environ) as judge:
        gateway = Gateway(
            tasks,
            args.out,
            directory=gym_directory(args),
            seed_root=args.seed_root,
            repeats=args.repeats,
            host=args.host,
            port=args.port,
            token=token,
            control_token=getattr(args, "control_token", None),
            rollout_ttl=args.rollout_ttl,
            max_calls_per_rollout=args.max_calls_per_rollout,
            finish_tool=args.finish_tool,
            judge=judge,
            tool_snapshots=load_tool_snapshots(args.tools) if args.tools else None,
            timeouts=gym_timeouts(args.timeout),
            model=args.model,
            allow_remote=args.allow_remote,
            max_connections=args.max_connections,
            max_request_bytes=args.max_request_bytes,
            capture_state=StateCapture(
                max_rows=args.max_state_rows,
                max_bytes=args.max_state_bytes,
                damage_specs=damage_specs(args),
            )
            if args.capture_state
            else None,
        )
        try:
            with on_signals(stop):
                await _serve_until_done(gateway, args, token)
        except asyncio.CancelledError:
            if not stopped:
                raise
    evaluated, total = len(gateway.plan.evaluated), gateway.plan.total
    if args.json:
        emit_json(
            {
                "out": str(args.out),
                "interrupted": stopped,
                "planned": total,
                "evaluated": evaluated,
            },
            indent=None,
        )
    else:
        print(
            f"eog-core gateway: {evaluated} of {total} rollouts evaluated; records in "
            f"{args.out / 'rollouts.jsonl'}"
            + ("" if not stopped else " (stopped: rerun the same command to resume)")
        )
    return EXIT_INTERRUPTED if stopped else EXIT_OK


async def _serve_until_done(gateway: Gateway, args: argparse.Namespace, token: str | None) -> None:
    """Announce the gateway, then serve until every rollout is evaluated."""
    async with gateway:
        plan = gateway.plan
        announce = {
            "url": gateway.url,
            "rollouts_url": f"{gateway.url}/rollouts",
            "planned": plan.total,
            "evaluated": len(plan.evaluated),
            "pending": plan.pending(),
            "out": str(args.out),
            "token_required": token is not None,
            "control_token_required": args.control_token_env is not None,
        }
        if args.json:
            emit_json(announce, indent=None)
        else:
            print(
                f"eog-core gateway: serving {plan.pending()} of {plan.total} rollouts on "
                f"{gateway.url}/rollouts (POST to start one); Ctrl-C stops it",
                flush=True,
            )
        sys.stdout.flush()
        _tune_collector()
        await gateway.wait_done()


GC_YOUNG_THRESHOLD = 50_000
"""Net allocations between two collections of the youngest generation (Python's default: 700)."""


def _tune_collector() -> None:
    """Set this process's garbage collector for serving (the gateway owns the process).

    Each collection of the youngest generation walks every object alive in it, and with 16
    requests in flight that is some 3,000 objects (requests, coroutines, headers): at the
    default threshold (700 allocations) the collector ran every ~15 tool calls and took 5%
    of the gateway's CPU, though serving a call leaves almost nothing behind (no cycles).
    What is loaded by now (modules, tasks, the plan) lives as long as the process: frozen,
    so full collections walk only what the rollouts made."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def run_gateway(args: argparse.Namespace) -> int:
    environ = dict(os.environ)
    try:
        token = _check(args, environ)
        gym_directory(args)
        return asyncio.run(_serve(args, token, environ))
    except UsageError as exc:
        print(f"eog-core gateway: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
