"""The ``eog-core`` console script's entry: tiny, so Ctrl-C while eog_core still imports exits quietly.

The script generated for ``[project.scripts]`` imports its entry before any of
our code runs; were it ``eog_core.cli``, a Ctrl-C during the library's imports
(most of a second) would print a ``KeyboardInterrupt`` traceback. This module
imports nothing heavy, so it can catch that and exit 130 like any interrupt.
"""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]


def main() -> int:
    """Import the CLI and run it; 130 when interrupted, also while still importing.

    A process started in the background of a non-interactive shell (``eog-core gyms up &``
    in a script) inherits SIGINT ignored; the commands' own handlers honour it once
    installed, so it is honoured from the start too (``kill -INT`` always interrupts).
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        from eog_core.cli import console
    except KeyboardInterrupt:
        print("eog-core: interrupted", file=sys.stderr)
        return 130
    return console()


if __name__ == "__main__":
    sys.exit(main())
