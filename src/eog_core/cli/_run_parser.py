"""``eog-core run``'s options: every one with its help and its default declared (docs/run.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from eog_core.cli._common import add_command, positive_seconds
from eog_core.cli._selection import add_selection_options
from eog_core.cli._shared import add_gym_options, add_launch_options, add_state_options

__all__ = ["build_parser"]


def _model_options(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("model")
    model.add_argument(
        "--base-url",
        required=True,
        metavar="URL",
        help="OpenAI-style base URL, e.g. http://host:8000/v1 (/chat/completions or "
        "/responses is appended)",
    )
    model.add_argument(
        "--model", required=True, metavar="NAME", help="the model field of every request"
    )
    model.add_argument(
        "--api",
        choices=["chat", "responses"],
        default="chat",
        help="the wire format: Chat Completions or Responses (default: %(default)s)",
    )
    model.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY "
        "when set); the key is never printed or written",
    )
    model.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="sampling temperature (default: %(default)s, as upstream)",
    )
    model.add_argument(
        "--max-output-tokens",
        type=int,
        default=4096,
        metavar="N",
        help="output tokens per model answer (default: %(default)s, as upstream)",
    )
    model.add_argument(
        "--extra-body",
        metavar="JSON",
        default="{}",
        help="extra request fields, merged last; null removes one: '{\"temperature\": null}' "
        "(default: %(default)s)",
    )
    model.add_argument(
        "--request-timeout",
        type=positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="bound on one whole model request (default: %(default)s)",
    )
    model.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=120.0,
        metavar="SECONDS",
        help="a request that receives nothing this long is checked with GET /models; "
        "no answer to that either and it is given up as hung (default: %(default)s)",
    )
    model.add_argument(
        "--probe-timeout",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long a GET /models probe may take: the preflight's, and during the run "
        "at most --idle-timeout (default: %(default)s)",
    )
    model.add_argument(
        "--unreachable-after",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="stop retrying once every request has failed to connect (refused, "
        "reset, hung) for this long; a busy server keeps retrying (default: %(default)s)",
    )
    model.add_argument(
        "--no-preflight",
        dest="preflight",
        action="store_false",
        help="skip the check of the endpoint (URL, key, model) before the run",
    )
    model.add_argument(
        "--token-ids",
        action="store_true",
        help="ask for and record token ids and logprobs per turn (vLLM's "
        "return_token_ids, logprobs): for RL",
    )
    model.add_argument(
        "--model-retries",
        type=int,
        default=8,
        metavar="N",
        help="retries of one model request on 429/5xx/timeouts (default: %(default)s)",
    )
    model.add_argument(
        "--max-requests-per-second",
        type=float,
        metavar="RATE",
        help="bound the model request rate over the whole run (default: no bound)",
    )
    model.add_argument(
        "--judge-model",
        metavar="NAME",
        help="model for response_check verifiers (default: --model)",
    )


def _run_options(parser: argparse.ArgumentParser) -> None:
    run = parser.add_argument_group("run")
    run.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="where DIR/rollouts.jsonl and DIR/upstream/ go; rerun into it to resume "
        "(one run at a time: a second is refused)",
    )
    run.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="K",
        help="rollouts per task (default: %(default)s)",
    )
    run.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="C",
        help="rollouts in flight (default: %(default)s)",
    )
    run.add_argument(
        "--max-turns",
        type=int,
        default=50,
        metavar="N",
        help="model answers per rollout (default: %(default)s, upstream's ReAct cap)",
    )
    run.add_argument(
        "--rollout-retries",
        type=int,
        default=2,
        metavar="N",
        help="whole-rollout retries after an infrastructure failure (default: %(default)s)",
    )
    run.add_argument(
        "--stop-after-unreachable",
        type=int,
        default=3,
        metavar="N",
        help="stop the run (exit 3) after N rollouts in a row found the model "
        "unreachable; 0 never stops (default: %(default)s)",
    )
    add_gym_options(run)
    add_launch_options(run)
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
    add_state_options(run)
    run.add_argument("--json", action="store_true", help="print the summary as JSON")


def build_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``run`` subcommand's parser (its handler is set by the caller)."""
    parser = add_command(
        commands,
        "run",
        help="evaluate a model on tasks end to end (agent loop, verify, scores)",
        description="Run every task x repeat as a rollout: seed the gyms, let the model act "
        "through the task's tools (OpenAI-compatible Chat Completions or Responses "
        "API), verify strict and parity, delete the databases. Writes "
        "OUT/rollouts.jsonl (one record per rollout, resumable) and OUT/upstream/ "
        "(upstream's result format). Exit 0 when every rollout was evaluated, 3 when "
        "some could not be, 2 on usage errors (a folder another run holds too), 130 "
        "when interrupted.",
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
    _model_options(parser)
    _run_options(parser)
    add_selection_options(parser)
    return parser
