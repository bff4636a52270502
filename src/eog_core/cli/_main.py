"""The command line itself: the parser of every command group, ``main`` and ``console``
(the package docstring says what the exit codes mean)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from eog_core import __version__
from eog_core.cli import (
    _certify,
    _demo,
    _gateway,
    _gyms,
    _replay,
    _report,
    _rescore,
    _run,
    _scoring,
    _seeds,
    _serve,
    _tasks,
)
from eog_core.cli._common import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    HelpFormatter,
    add_common_options,
    outcome_decided,
    run_in_own_process,
)
from eog_core.errors import EogError, UsageError

__all__ = ["build_parser", "console", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake told in one line (the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="eog-core",
        description="EnterpriseOps-Gym tasks, verification, gyms and scores.",
        epilog="example: eog-core demo",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"eog-core {__version__}")
    add_common_options(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _demo.add_parser(commands)
    _tasks.add_parsers(commands)
    _scoring.add_parsers(commands)
    _run.add_parser(commands)
    _certify.add_parser(commands)
    _serve.add_parser(commands)
    _report.add_parser(commands)
    _gateway.add_parser(commands)
    _gyms.add_parser(commands)
    _seeds.add_parser(commands)
    _rescore.add_parser(commands)
    _replay.add_parser(commands)
    for command in commands.choices.values():
        add_common_options(command)  # -v/-q also after the command's name
    for each in _parsers(parser):
        if each.formatter_class in (argparse.HelpFormatter, argparse.RawDescriptionHelpFormatter):
            each.formatter_class = HelpFormatter  # sub-commands too (gyms up, seeds unpack)
    return parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every command's below it, at any depth."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                found += _parsers(command)
    return found


def _configure_logging(verbose: int, quiet: bool) -> None:
    """-v shows the library's log (INFO), -vv its debug log; -q only errors.

    Other libraries (aiohttp, ...) stay at WARNING (ERROR with -q).
    """
    logging.basicConfig(
        level=logging.ERROR if quiet else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    logging.getLogger("eog_core").setLevel(logging.ERROR if quiet else level)


def _silence_stdout() -> None:
    """After a broken pipe (``eog-core ... | head``): send what is left to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests capturing it)
        pass
    finally:
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (the console script exits with it)."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    _configure_logging(getattr(args, "verbose", 0), getattr(args, "quiet", False))
    try:
        code: int = args.handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()  # the reader stopped reading: that is not an error
        return EXIT_OK
    except UsageError as exc:  # a value the command line gave that the library refuses
        print(f"eog-core {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except EogError as exc:
        print(f"eog-core {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except UnicodeDecodeError as exc:
        print(f"eog-core {args.command}: input is not UTF-8 text: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:
        print(f"eog-core {args.command}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # a defect of ours: still one line and exit 3, never 1 ("failed")
        if getattr(args, "verbose", 0):
            raise
        print(
            f"eog-core {args.command}: internal error: {type(exc).__name__}: {exc} (rerun with "
            "-v for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INPUT
    return code


def console() -> int:
    """:func:`main` for a process of its own (``eog-core``, ``python -m eog_core``).

    Once the command has its outcome (printed, say ``demo OK``), a late Ctrl-C
    while the interpreter shuts down must not turn it into 130 or a death by
    SIGINT: further interrupts are ignored until the process exits.
    """
    run_in_own_process()
    code = main()
    outcome_decided()
    return code
