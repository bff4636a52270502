"""``eog-core gyms`` and ``run --launch`` without an engine: usage and input errors are
one line each with their exit codes; ``gyms compose`` prints the pinned services."""

from __future__ import annotations

import pytest

from eog_core.cli import main
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
