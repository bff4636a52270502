"""The ``eog-core`` command line (also ``python -m eog_core``).

Exit codes: 0 success; 1 the thing checked failed (an invalid task, a failed
verdict, a demo that did not score as expected); 2 bad command-line words;
3 bad input or an evaluation that could not complete (a malformed task, a
missing file, an unreachable gym, a verifier query the database rejects);
130 interrupted (``eog-core run`` leaves valid, resumable output).
Like ``run``'s refusals before its first rollout, ``rescore`` and ``replay`` answer
2 for input they refuse before starting (a run without captured states, say);
their 3 means the work could not complete (``replay``: a gym failed).
Every mistake is reported as one line on stderr, never as a traceback.
Ctrl-C while the library is still importing is 130 without a traceback from
the ``eog-core`` script (whose entry, ``_eog_core_console``, imports nothing
heavy); ``python -m eog_core`` imports the package before any of this code
runs, so there an interrupt that early still shows Python's traceback. Once a
command's outcome is decided (``demo OK`` printed), a late Ctrl-C no longer
changes its exit code.
"""

from eog_core.cli._main import build_parser, console, main

__all__ = ["build_parser", "console", "main"]
