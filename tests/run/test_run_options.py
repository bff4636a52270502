"""``eog-core run --help`` (#35): every option says what it does, and its default."""

from __future__ import annotations

import argparse

from eog_core.cli import build_parser


def run_parser() -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = commands.choices["run"]
    return parser


def test_every_run_option_has_help_and_a_declared_default_is_shown() -> None:
    parser = run_parser()
    for action in parser._actions:
        assert action.help, f"{action.option_strings or action.dest} has no help"
        shown = action.default not in (None, False, True, argparse.SUPPRESS)
        if shown and not action.required:
            assert "default" in action.help, f"{action.option_strings} hides its default"


def test_help_shows_the_defaults_of_repeats_concurrency_and_api() -> None:
    text = " ".join(run_parser().format_help().split())
    assert "--repeats K rollouts per task (default: 1)" in text
    assert "--concurrency C rollouts in flight (default: 8)" in text
    assert "Chat Completions or Responses (default: chat)" in text
    assert "--probe-timeout SECONDS" in text
