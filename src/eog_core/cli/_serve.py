"""``eog-core serve-local`` and ``eog-core serve-model``: a local gym or a scripted model
in the foreground, until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from eog_core.cli._common import EXIT_INPUT, EXIT_OK, add_command, emit_json, port_number

__all__ = ["DEMO_MODEL_PORT", "add_parser", "run_serve", "run_serve_model"]

DEMO_MODEL_PORT = 8102
"""serve-model's default port, beside the demo gym's 8101 (the port the demo task names)."""


def add_parser(commands: Any) -> None:
    serve = add_command(
        commands,
        "serve-local",
        help="run the embedded reference gym in the foreground",
        description="Serve the local reference gym (REST on SQLite + MCP) until Ctrl-C. "
        "With --json the first line of output is a JSON object: its URL, MCP URL and "
        "the gym directory ({gym name: URL}) to hand to GymDirectory.",
        epilog="example: eog-core serve-local --port 8101 --sse",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument(
        "--port", type=port_number, default=8101, help="0-65535; 0 picks a free port"
    )
    serve.add_argument(
        "--domain",
        choices=["demo", "empty"],
        default="demo",
        help="demo: the demo CSM gym the demo task uses; empty: a gym with no tools",
    )
    serve.add_argument("--sse", action="store_true", help="answer MCP requests as SSE streams")
    serve.add_argument(
        "--journal",
        metavar="FILE",
        help="append every seed, delete and tool execution to FILE (JSON lines)",
    )
    serve.add_argument("--json", action="store_true", help="announce the gym as one JSON line")
    serve.set_defaults(handler=run_serve)

    model = add_command(
        commands,
        "serve-model",
        help="run a scripted OpenAI-compatible model server in the foreground",
        description="Serve a scripted model (Chat Completions, Responses and GET /v1/models under "
        "/v1) until Ctrl-C, to try `eog-core run` offline: the 'demo' script plays the "
        "demo task's correct trajectory, 'noop' answers at once without acting. Any "
        "--model name plays the chosen script. A planner_react planner request (one user "
        "message, no tools) gets a plan; the model name plan-empty gets an empty one. A "
        "decomposing planner gets the demo decomposition (plan-no-json: none), each sub-agent "
        "plays its part of the script, each memory question gets a JSON answer. With "
        "--json the first line of output is a JSON object with its base URL.",
        epilog="example: eog-core serve-local & eog-core serve-model & eog-core run "
        '"$(eog-core demo --print-paths task)" --seed-root "$(eog-core demo --print-paths '
        'seed-root)" --gym demo-csm-server=http://127.0.0.1:8101 --base-url '
        "http://127.0.0.1:8102/v1 --model demo --out runs/demo",
    )
    model.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    model.add_argument(
        "--port",
        type=port_number,
        default=DEMO_MODEL_PORT,
        help="0-65535; 0 picks a free port",
    )
    model.add_argument(
        "--script",
        choices=["demo", "noop"],
        default="demo",
        help="what the model does (demo: solve the demo task; noop: answer without acting)",
    )
    model.add_argument("--json", action="store_true", help="announce the server as one JSON line")
    model.set_defaults(handler=run_serve_model)


async def _serve_forever(
    server: AbstractAsyncContextManager[Any], announce: Callable[[Any], None]
) -> None:
    async with server as running:
        announce(running)
        sys.stdout.flush()
        await asyncio.Event().wait()


def _foreground(
    command: str,
    host: str,
    server: AbstractAsyncContextManager[Any],
    announce: Callable[[Any], None],
) -> int:
    """Serve until Ctrl-C (exit 0); a port that cannot be bound is one line and exit 3."""
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve_forever(server, announce))
    except OSError as exc:
        print(
            f"eog-core {command}: cannot listen on {host}: {exc.strerror or exc}", file=sys.stderr
        )
        return EXIT_INPUT
    return EXIT_OK


def run_serve(args: argparse.Namespace) -> int:
    from eog_core.local import LocalGym, ResponseMode

    mode: ResponseMode = "sse" if args.sse else "json"
    options = {"host": args.host, "port": args.port, "response_mode": mode, "journal": args.journal}
    gym = LocalGym.demo(**options) if args.domain == "demo" else LocalGym(**options)

    def announce(gym: LocalGym) -> None:
        if args.json:
            emit_json(
                {
                    "name": gym.name,
                    "url": gym.url,
                    "mcp_url": gym.mcp_url,
                    "domain": args.domain,
                    "response_mode": mode,
                    "gyms": {gym.name: gym.url},
                },
                indent=None,
            )
        else:
            print(f"{gym.name} serving on {gym.url} (MCP at {gym.mcp_url}); Ctrl-C stops it")

    return _foreground("serve-local", args.host, gym, announce)


def run_serve_model(args: argparse.Namespace) -> int:
    from eog_core.local import ScriptedModel, demo_scripts

    server = ScriptedModel(
        scripts={  # the script, and its parts for decomposing's sub-agents (demo#1...)
            name: script
            for name, script in demo_scripts().items()
            if name.partition("#")[0] == args.script
        },
        host=args.host,
        port=args.port,
        default_script=args.script,
        keep_bodies=False,
        keep_requests=False,
    )

    def announce(model: ScriptedModel) -> None:
        if args.json:
            emit_json(
                {"base_url": model.base_url, "script": args.script, "apis": ["chat", "responses"]},
                indent=None,
            )
        else:
            print(
                f"scripted model ({args.script}) serving on {model.base_url} "
                "(Chat Completions and Responses; any --model name); Ctrl-C stops it"
            )

    return _foreground("serve-model", args.host, server, announce)
