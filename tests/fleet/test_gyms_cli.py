"""``eog-core gyms`` and ``run --launch`` without an engine: usage and input errors are
one line each with their exit codes; ``gyms compose`` prints the pinned services."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from eog_core.cli import main
from eog_core.cli._main import build_parser
from eog_core.local import demo_paths


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_compose_prints_the_asked_domains_with_image_overrides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["gyms", "compose", "--domains", "hr,email", "--image", "hr=local/hr:1"]) == 0
    out = capsys.readouterr().out
    assert out.index("  email:") < out.index("  hr:")
    assert 'image: "local/hr:1"' in out and "enterpriseops-gym-mcp-email@sha256:69c2081f" in out
    assert "csm" not in out


def test_compose_for_tasks_starts_only_the_gyms_they_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.datasets import EXAMPLES

    assert main(["gyms", "compose", "--for", str(EXAMPLES / "tasks")]) == 0
    out = capsys.readouterr().out
    assert "  csm:" in out and "  itsm:" in out and "  hr:" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["gyms", "up", "--domains", "nope"], "unknown gym domain(s) nope"),
        (["gyms", "up", "--replicas", "0"], "--replicas must be at least 1"),
        (["gyms", "up", "--image", "csm"], "--image takes DOMAIN=REF"),
        (
            ["gyms", "compose", "--domains", "csm", "--for", "x.json"],
            "--domains or --for, not both",
        ),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in one_line(capsys)


def test_a_missing_engine_exits_3_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gyms", "up", "--engine", "/nonexistent/podman", "--domains", "csm"]) == 3
    assert "container engine '/nonexistent/podman' not found on PATH" in one_line(capsys)
    assert main(["gyms", "status", "--engine", "/nonexistent/docker"]) == 3
    assert "not found on PATH" in one_line(capsys)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--launch", "podman", "--gym", "a=http://x"], "--gym/--gyms or --launch, not both"),
        (["--max-lifecycles", "3"], "needs --launch"),
        (["--launch", "podman", "--max-lifecycles", "0"], "positive number"),
    ],
)
def test_run_launch_usage_errors_exit_2(
    extra: list[str], message: str, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        str(demo_paths().task),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--out",
        str(tmp_path),
        *extra,
    ]
    assert main(argv) == 2
    assert message in one_line(capsys)


def test_run_launch_of_a_gym_outside_the_seven_is_a_usage_error(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        str(demo_paths().task),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--out",
        str(tmp_path),
        "--launch",
        "/nonexistent/podman",
        "--no-preflight",
    ]
    assert main(argv) == 2  # (with the preflight, the dead model at :9 is named first, also 2)
    assert "gym 'demo-csm-server' is not one of the seven EOG gyms" in one_line(capsys)


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize(
    ("group", "action"),
    [("gyms", a) for a in ("up", "status", "logs", "down", "compose")] + [("seeds", "unpack")],
)
def test_each_action_has_a_description_an_example_v_q_and_help_for_every_option(
    group: str, action: str
) -> None:
    parser = _actions(_actions(build_parser())[group])[action]
    assert parser.description and parser.epilog and "eog-core " in parser.epilog
    options = {s for a in parser._actions for s in a.option_strings}
    assert {"-v", "--verbose", "-q", "--quiet"} <= options
    undocumented = [a.dest for a in parser._actions if not a.help and a.dest not in ("help",)]
    assert undocumented == []


def test_compose_for_says_write_and_up_for_says_start() -> None:
    gyms = _actions(_actions(build_parser())["gyms"])
    helps = {
        name: next(a.help for a in gyms[name]._actions if "--for" in a.option_strings)
        for name in ("up", "compose")
    }
    assert str(helps["compose"]).startswith("write only the gyms")
    assert str(helps["up"]).startswith("start only the gyms")


def fake_engine(folder: Path, name: str, script: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return folder


def test_an_engine_that_does_not_answer_is_hinted_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = fake_engine(
        tmp_path,
        "docker",
        'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2\nexit 1\n',
    )
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("EOG_ENGINE", raising=False)
    for action in ("status", "down"):
        assert main(["gyms", action]) == 3
        err = one_line(capsys)
        assert "docker ps failed (exit 1): Cannot connect to the Docker daemon" in err
        assert "choose another with --engine podman or EOG_ENGINE=podman" in err


def test_without_engine_every_installed_engine_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docker's daemon is away, podman answers (with nothing): no error, no hint."""
    fake_engine(tmp_path, "docker", 'echo "Cannot connect to the Docker daemon." >&2\nexit 1\n')
    fake_engine(tmp_path, "podman", 'case "$1" in --version) echo "podman version 4";; esac\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("EOG_ENGINE", raising=False)
    monkeypatch.delenv("EOG_FLEET_ENGINE_ARGS", raising=False)
    assert main(["gyms", "status"]) == 0
    assert (
        capsys.readouterr().out.strip() == "no gym containers (start them with: eog-core gyms up)"
    )
    assert main(["gyms", "down", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"removed": 0, "held": []}
