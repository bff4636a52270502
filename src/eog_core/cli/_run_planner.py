"""``eog-core run --orchestrator``: which agent runs, and where the planner of ``planner_react``
or ``decomposing`` is."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import attrs

from eog_core.errors import UsageError
from eog_core.run import (
    ORCHESTRATORS,
    Decomposer,
    ModelSettings,
    Planner,
    load_decomposing_template,
    load_planner_template,
)

__all__ = ["add_orchestrator_options", "planner_from_args"]


def add_orchestrator_options(parser: argparse.ArgumentParser) -> None:
    agent = parser.add_argument_group("orchestrator")
    agent.add_argument(
        "--orchestrator",
        choices=ORCHESTRATORS,
        default="react",
        help="upstream's agent to reproduce: react (the ReAct loop), planner_react (a "
        "planner writes a plan, then the ReAct loop runs with it) or decomposing (a planner "
        "splits the task into subtasks, a sub-agent runs each) (default: %(default)s)",
    )
    agent.add_argument(
        "--upstream-dir",
        metavar="DIR",
        help="a checkout of ServiceNow/EnterpriseOps-Gym: planner_react and decomposing read "
        "upstream's prompts from DIR/orchestrators/planner_react.py and decomposing_planner.py "
        "(default: $EOG_UPSTREAM_DIR)",
    )
    agent.add_argument(
        "--planner-base-url", metavar="URL", help="the planner's endpoint (default: --base-url)"
    )
    agent.add_argument(
        "--planner-model", metavar="NAME", help="the planner's model (default: --model)"
    )
    agent.add_argument(
        "--planner-api-key-env",
        metavar="VAR",
        help="environment variable holding the planner's key (default: the executor's key)",
    )


def planner_from_args(
    args: argparse.Namespace, executor: ModelSettings, environ: Mapping[str, str]
) -> Planner | Decomposer | None:
    """The planner ``args`` ask for (None for ``react``); raises :class:`UsageError` in one line."""
    planner_flags = [
        flag
        for flag, value in (
            ("--planner-base-url", args.planner_base_url),
            ("--planner-model", args.planner_model),
            ("--planner-api-key-env", args.planner_api_key_env),
        )
        if value
    ]
    if args.orchestrator == "react":
        if planner_flags:
            raise UsageError(
                f"{planner_flags[0]} needs --orchestrator planner_react or decomposing"
            )
        return None
    if args.ray:
        raise UsageError(f"--orchestrator {args.orchestrator} does not run on Ray yet: drop --ray")
    settings = _planner_settings(args, planner_flags, executor, environ)
    if args.orchestrator == "decomposing":
        return Decomposer(load_decomposing_template(args.upstream_dir), settings)
    return Planner(load_planner_template(args.upstream_dir), settings)


def _planner_settings(
    args: argparse.Namespace,
    planner_flags: list[str],
    executor: ModelSettings,
    environ: Mapping[str, str],
) -> ModelSettings | None:
    if not planner_flags:
        return None
    key = executor.api_key
    if args.planner_api_key_env:
        key = environ.get(args.planner_api_key_env)
        if not key:
            raise UsageError(
                f"--planner-api-key-env {args.planner_api_key_env}: that environment variable "
                "is not set"
            )
    return attrs.evolve(
        executor,
        base_url=args.planner_base_url or executor.base_url,
        model=args.planner_model or executor.model,
        api_key=key,
    )
