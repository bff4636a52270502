"""The ``eog-core`` console script's entry: tiny, so Ctrl-C while eog_core still imports exits quietly.

The script generated for ``[project.scripts]`` imports its entry before any of
our code runs; were it ``eog_core.cli``, a Ctrl-C during the library's imports
(most of a second) would print a ``KeyboardInterrupt`` traceback. This module
imports nothing heavy, so it can catch that and exit 130 like any interrupt.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> int:
    """Import the CLI and run it; 130 when interrupted, also while still importing."""
    try:
        from eog_core.cli import console
    except KeyboardInterrupt:
        print("eog-core: interrupted", file=sys.stderr)
        return 130
    return console()


if __name__ == "__main__":
    sys.exit(main())
