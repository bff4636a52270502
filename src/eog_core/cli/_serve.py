"""``eog-core serve-local``: the embedded reference gym in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from eog_core.cli._common import EXIT_OK, emit_json, port_number

__all__ = ["add_parser", "run_serve"]


def add_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve-local", help="run the embedded reference gym in the foreground",
        description="Serve the local reference gym (REST on SQLite + MCP) until Ctrl-C. "
                    "With --json the first line of output is a JSON object: its URL, MCP URL and "
                    "the gym directory ({gym name: URL}) to hand to GymDirectory.",
        epilog="example: eog-core serve-local --port 8101 --sse",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port_number, default=8101, help="0-65535; 0 picks a free port")
    serve.add_argument("--domain", choices=["demo", "empty"], default="demo")
    serve.add_argument("--sse", action="store_true", help="answer MCP requests as SSE streams")
    serve.add_argument("--journal", metavar="FILE",
                       help="append every seed, delete and tool execution to FILE (JSON lines)")
    serve.add_argument("--json", action="store_true", help="announce the gym as one JSON line")
    serve.set_defaults(handler=run_serve)


async def _serve(args: argparse.Namespace) -> None:
    from eog_core.local import LocalGym, ResponseMode

    mode: ResponseMode = "sse" if args.sse else "json"
    options = {"host": args.host, "port": args.port, "response_mode": mode, "journal": args.journal}
    gym = LocalGym.demo(**options) if args.domain == "demo" else LocalGym(**options)
    async with gym:
        if args.json:
            emit_json({"name": gym.name, "url": gym.url, "mcp_url": gym.mcp_url, "domain": args.domain,
                       "response_mode": mode, "gyms": {gym.name: gym.url}}, indent=None)
        else:
            print(f"{gym.name} serving on {gym.url} (MCP at {gym.mcp_url}); Ctrl-C stops it")
        sys.stdout.flush()
        await asyncio.Event().wait()


def run_serve(args: argparse.Namespace) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    return EXIT_OK
