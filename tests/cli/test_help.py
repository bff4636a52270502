"""``--help`` of every command: every option explained, every default shown (the real parser)."""

from __future__ import annotations

import argparse

import pytest

from eog_core.cli import main
from eog_core.cli._common import shows_default
from eog_core.cli._main import build_parser


def commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command at any depth (``gyms up`` too), by the words that name it."""
    found = [(words, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found += commands(command, (*words, name))
    return found


COMMANDS = commands(build_parser())
OPTIONS = [
    (words, action)
    for words, parser in COMMANDS
    for action in parser._actions
    if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
]


def parser_of(words: tuple[str, ...]) -> argparse.ArgumentParser:
    return dict(COMMANDS)[words]


def option(words: tuple[str, ...], flag: str) -> argparse.Action:
    return next(a for a in parser_of(words)._actions if flag in a.option_strings)


def help_block(words: tuple[str, ...], action: argparse.Action) -> str:
    """The action's lines of ``eog-core WORDS --help``, whitespace made single spaces."""
    formatter = parser_of(words)._get_formatter()
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def test_every_option_of_every_command_has_help_text() -> None:
    lacking = [
        f"eog-core {' '.join(words)} {'/'.join(action.option_strings) or action.dest}"
        for words, action in OPTIONS
        if not (action.help and action.help.strip())
    ]
    assert lacking == []


def test_help_shows_every_default() -> None:
    """A default the help text does not name itself is appended as ``(default: X)``."""
    missing = [
        f"eog-core {' '.join(words)} {'/'.join(action.option_strings) or action.dest}"
        for words, action in OPTIONS
        if shows_default(action)
        and action.help
        and "default" not in action.help.lower()
        and f"(default: {action.default})" not in help_block(words, action)
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("words", "flag", "value"),
    [
        (("run",), "--repeats", "1"),
        (("run",), "--concurrency", "8"),
        (("run",), "--api", "chat"),
        (("serve-local",), "--port", "8101"),
        (("gateway",), "--repeats", "1"),
        (("gateway",), "--rollout-ttl", "never"),
        (("verify",), "--policy", "both"),
        (("verify",), "--reward", "binary"),
    ],
)
def test_the_defaults_the_review_missed_are_shown(
    words: tuple[str, ...], flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each in the option's own lines, in its own words or as ``(default: X)``."""
    block = help_block(words, option(words, flag))
    assert "default" in block and value in block.split(flag, 1)[1].split("default", 1)[1]
    with pytest.raises(SystemExit) as exited:  # and the command's own --help prints it
        main([*words, "--help"])
    assert exited.value.code == 0
    assert block in " ".join(capsys.readouterr().out.split())


def test_descriptions_and_examples_keep_their_own_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """The formatter that adds defaults keeps argparse's RawDescription behaviour."""
    with pytest.raises(SystemExit):
        main(["serve-model", "--help"])
    out = capsys.readouterr().out
    example = next(line for line in out.splitlines() if line.startswith("example:"))
    assert example.endswith("--model demo --out runs/demo")  # one line, as written
