"""What every command shares: exit codes, options, JSON output, tables, a progress bar."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TextIO, TypeVar

__all__ = [
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "HelpFormatter",
    "Progress",
    "add_command",
    "add_common_options",
    "busy",
    "emit_json",
    "full_details",
    "outcome_decided",
    "port_number",
    "positive_seconds",
    "progress",
    "shows_default",
    "table",
    "whole_number",
]

EXIT_OK = 0
EXIT_FAILED = 1  # the command ran and the thing it checked failed
EXIT_USAGE = 2  # argparse's own code for bad command-line words
EXIT_INPUT = 3  # bad input: a malformed task, a missing file, a dead gym
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)

T = TypeVar("T")
#: Set by :func:`eog_core.cli.console`: the command runs in a process of its own.
_OWN_PROCESS = threading.Event()


def outcome_decided() -> None:
    """The command's outcome is known: from here a Ctrl-C must not change its exit code.

    In a process of its own (the ``eog-core`` script) further interrupts are
    ignored until it exits; called in-process (tests, notebooks), nothing changes.
    """
    if _OWN_PROCESS.is_set() and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_in_own_process() -> None:
    """Mark this process as the command's own (:func:`outcome_decided` then ignores Ctrl-C)."""
    _OWN_PROCESS.set()


CELL_WIDTH = 60  # a longer cell is cut in tables; full_details() lists it whole


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written; an option's default after its help text,
    unless the text names it already (or there is none to show: no value, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help = action.help
        if help and shows_default(action) and "default" not in help.lower():
            help += " (default: %(default)s)"
        return help


def shows_default(action: argparse.Action) -> bool:
    """Whether ``--help`` should name the action's default: a value taken, and one given."""
    default = action.default
    if action.nargs == 0 or default is None or default is False or default == argparse.SUPPRESS:
        return False
    return not (isinstance(default, list | tuple | dict | str) and not default)


def add_command(
    commands: Any, name: str, *, help: str, description: str, epilog: str
) -> argparse.ArgumentParser:
    """One command of ``eog-core``: its help line, description and example, shown as written,
    and its options' defaults."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=HelpFormatter,
    )
    return parser


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """-v/--verbose and -q/--quiet, accepted before and after the command's name."""
    top = parser.prog == "eog-core"
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0 if top else argparse.SUPPRESS,
        help="show the library's log on stderr (-vv: its debug log)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="show only errors on stderr",
    )


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port is a whole number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 0 and 65535, got {port}")
    return port


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (one line and exit 2 otherwise)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {low} to {high}, got {text}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its messages
    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


def emit_json(data: Any, stream: TextIO | None = None, *, indent: int | None = 2) -> None:
    """Machine output for ``--json``: one JSON document on stdout."""
    out = stream or sys.stdout
    json.dump(data, out, indent=indent, default=str, ensure_ascii=False)
    out.write("\n")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    text = _text(value)
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 3] + "..."


def full_details(labelled: Iterable[tuple[str, Any]]) -> str:
    """The values a table cut short, whole: one ``label: text`` line each ('' when none was cut)."""
    lines = [
        f"  {label}: {_text(value)}"
        for label, value in labelled
        if value is not None and not isinstance(value, float) and len(_text(value)) > CELL_WIDTH
    ]
    return "\n".join(["in full:", *lines]) if lines else ""


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain aligned text table."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join([line, rule, *body])


class Progress:
    """A one-line progress bar on stderr, shown only on a TTY and only after a second."""

    def __init__(
        self, total: int | None, label: str, stream: TextIO | None = None, delay: float = 1.0
    ) -> None:
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self.delay = delay
        self.shown = False

    def advance(self, step: int = 1) -> None:
        self.done += step
        if not self.enabled or time.monotonic() - self.started < self.delay:
            return
        self.shown = True
        if self.total:
            filled = int(30 * self.done / self.total)
            bar = "#" * filled + "." * (30 - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        else:
            self.stream.write(f"\r{self.label} {self.done}")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def progress(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a progress bar (on a TTY, for work over a second)."""
    if total is None and isinstance(items, Sequence):
        total = len(items)
    bar = Progress(total, label)
    try:
        for item in items:
            yield item
            bar.advance()
    finally:
        bar.close()


@contextlib.contextmanager
def busy(label: str, stream: TextIO | None = None, delay: float = 1.0) -> Iterator[None]:
    """An elapsed-time ticker on stderr for work of unknown length (TTY only, after a second)."""
    out = stream or sys.stderr
    if not out.isatty():
        yield
        return
    stop = threading.Event()
    started = time.monotonic()
    shown = threading.Event()

    def tick() -> None:
        if stop.wait(delay):
            return
        while not stop.is_set():
            shown.set()
            out.write(f"\r{label} ... {time.monotonic() - started:.0f}s")
            out.flush()
            stop.wait(0.25)

    ticker = threading.Thread(target=tick, name="eog-core-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        if shown.is_set():
            out.write("\n")
            out.flush()
