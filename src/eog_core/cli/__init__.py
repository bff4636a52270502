"""The ``eog-core`` command line (also ``python -m eog_core``).

Exit codes: 0 success; 1 the thing checked failed (an invalid task, a failed
verdict, a demo that did not score as expected); 2 bad command-line words;
3 bad input or an evaluation that could not complete (a malformed task, a
missing file, an unreachable gym, a verifier query the database rejects);
130 interrupted (``eog-core run`` leaves valid, resumable output).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from eog_core import __version__
from eog_core.cli import _demo, _run, _scoring, _tasks
from eog_core.cli._common import EXIT_INPUT
from eog_core.errors import EogError

__all__ = ["build_parser", "main"]


def _serve_local(args: argparse.Namespace) -> int:
    from eog_core.local import serve

    serve(args.host, args.port, domain=args.domain, response_mode="sse" if args.sse else "json",
          journal=args.journal)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eog-core", description="EnterpriseOps-Gym tasks, verification, gyms and scores.",
        epilog="example: eog-core demo", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"eog-core {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the library does")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _demo.add_parser(commands)
    _tasks.add_parsers(commands)
    _scoring.add_parsers(commands)
    _run.add_parser(commands)
    serve = commands.add_parser(
        "serve-local", help="run the embedded reference gym in the foreground",
        description="Serve the local reference gym (REST on SQLite + MCP) until Ctrl-C.",
        epilog="example: eog-core serve-local --port 8101 --sse")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8101)
    serve.add_argument("--domain", choices=["demo", "empty"], default="demo")
    serve.add_argument("--sse", action="store_true", help="answer MCP requests as SSE streams")
    serve.add_argument("--journal", metavar="FILE",
                       help="append every seed, delete and tool execution to FILE (JSON lines)")
    serve.set_defaults(handler=_serve_local)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (the console script exits with it)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        code: int = args.handler(args)
    except EogError as exc:
        print(f"eog-core {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:
        print(f"eog-core {args.command}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    return code
