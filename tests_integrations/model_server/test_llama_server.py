"""``eog-core run`` against a real model server: llama.cpp's ``llama-server`` serving
SmolLM2-135M-Instruct (``nox -s model_server``; provision.py builds and caches both).

The demo gym and the command line run as a user runs them (subprocesses on loopback).
The 135M model rarely writes a parseable tool call: where it does, the call must be
executed and recorded; how often it does is reported, never asserted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.run import decomposing_upstream, planner_upstream
from tests_integrations._support import free_port

from eog_core.local import demo_paths
from eog_core.run import IncompleteKind

PROVISION = Path(__file__).with_name("provision.py")
DEADLINE = 600.0
REPORT = Path(os.environ.get("EOG_MODEL_SERVER_REPORT", "model-server-report.json"))


@pytest.fixture(scope="session")
def llama() -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, str(PROVISION)], check=True, capture_output=True, text=True
    )
    paths: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return paths


class LlamaServer:
    """One ``llama-server`` process on a free loopback port; killed and reaped on exit."""

    def __init__(self, paths: dict[str, str], *, context: int, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.argv = [
            paths["server"],
            "-m",
            paths["model"],
            "--jinja",
            "--chat-template-file",
            paths["template"],
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-c",
            str(context),
            "-t",
            "2",
            "--parallel",
            "1",
            "--no-webui",
        ]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        import urllib.request

        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"llama-server exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.25)
        raise AssertionError("llama-server did not become healthy in 120 s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)


@pytest.fixture
def server(llama: dict[str, str], tmp_path: Path) -> Iterator[LlamaServer]:
    running = LlamaServer(llama, context=8192, log=tmp_path / "llama.log")
    running.start()
    try:
        yield running
    finally:
        running.kill()


@pytest.fixture(scope="module")
def gym(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port), "--json"],
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        announced = json.loads(process.stdout.readline())
        yield f"{announced['name']}={announced['url']}"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


def run(gym: str, base_url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    paths = demo_paths()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "eog_core",
            "run",
            str(paths.task),
            "--seed-root",
            str(paths.directory),
            "--gym",
            gym,
            "--base-url",
            base_url,
            "--model",
            "smollm2",
            "--out",
            str(out),
            "--max-turns",
            "3",
            "--json",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "rollouts.jsonl").read_bytes().split(b"\n")
    return [json.loads(line) for line in lines if line]


def note(name: str, value: Any) -> None:
    """What is reported, not asserted: appended to the session's report file."""
    seen = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    seen[name] = value
    REPORT.write_text(json.dumps(seen, indent=2))
    print(f"{name}: {value}")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_rollouts_are_evaluated_with_usage_on_both_apis(
    server: LlamaServer, gym: str, tmp_path: Path, api: str
) -> None:
    done = run(
        gym, server.base_url, tmp_path, "--api", api, "--repeats", "2", "--max-output-tokens", "96"
    )
    assert done.returncode == 0, done.stderr
    found = records(tmp_path)
    assert [r["status"] for r in found] == ["evaluated", "evaluated"]
    for record in found:
        assert record["usage"]["input_tokens"] > 1000  # the demo prompt and its tools
        assert record["usage"]["output_tokens"] > 0
        assert record["stop_reason"] in ("answered", "truncated", "max_turns")
    calls = [c for r in found for t in r["turns"] for c in t["tool_calls"]]
    for call in calls:  # a parsed call was executed and recorded
        assert call["gym"] and call["observation"] is not None and call["latency_ms"] >= 0
    note(
        f"{api}_tool_calls",
        {
            "rollouts": len(found),
            "tool_calls": len(calls),
            "names": sorted({c["name"] for c in calls}),
        },
    )
    summary = json.loads(done.stdout)["summary"]
    assert summary["overall"]["strict"]["runs_scored"] == 2


STANDINS = {
    "planner_react": planner_upstream.fake_upstream,
    "decomposing": decomposing_upstream.fake_upstream,
}
"""Each planner orchestrator's stand-in upstream file (our own words, upstream's shape): CI
has no upstream checkout; with ``EOG_UPSTREAM_DIR`` the real texts are used."""
NAMED_FAILURES = set(typing.get_args(IncompleteKind))


@pytest.mark.parametrize("orchestrator", sorted(STANDINS))
def test_a_planner_orchestrator_reaches_a_named_ending_on_every_rollout(
    server: LlamaServer, gym: str, tmp_path: Path, orchestrator: str
) -> None:
    """The planner's and the executor's turns from a real (and weak) model: every rollout is
    evaluated or ends with a named failure kind, never a crash; the plan is recorded."""
    upstream = os.environ.get("EOG_UPSTREAM_DIR") or str(
        STANDINS[orchestrator](tmp_path / "upstream")
    )
    done = run(
        gym,
        server.base_url,
        tmp_path / "out",
        "--orchestrator",
        orchestrator,
        "--upstream-dir",
        upstream,
        "--repeats",
        "2",
        "--max-output-tokens",
        "96",
    )
    assert done.returncode in (0, 3), done.stderr
    assert "Traceback" not in done.stderr
    found = records(tmp_path / "out")
    assert len(found) == 2
    for record in found:
        assert record["orchestrator"] == orchestrator
        if record["status"] == "evaluated":
            assert record["stop_reason"] in (
                "answered",
                "truncated",
                "max_turns",
                "context_overflow",
            )
        else:
            assert record["failure_kind"] in NAMED_FAILURES, record["failure_kind"]
        assert set(record["usage_by_role"]) >= {"planner"}
    note(
        f"{orchestrator}_endings",
        [(r["status"], r["failure_kind"] or r["stop_reason"], bool(r["plan"])) for r in found],
    )
    assert done.returncode == (0 if all(r["status"] == "evaluated" for r in found) else 3)


def test_decomposing_sub_agents_on_the_real_model_reach_a_named_ending(
    server: LlamaServer, gym: str, tmp_path: Path
) -> None:
    """The 135M model writes no JSON decomposition (``bad_decomposition`` above), so here the
    scripted model (``eog-core serve-model``) plays the planner with the demo decomposition
    and llama.cpp plays every sub-agent and memory question."""
    upstream = os.environ.get("EOG_UPSTREAM_DIR") or str(
        STANDINS["decomposing"](tmp_path / "upstream")
    )
    planner = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-model", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
    )
    try:
        assert planner.stdout is not None
        announced = json.loads(planner.stdout.readline())
        done = run(
            gym,
            server.base_url,
            tmp_path / "out",
            "--orchestrator",
            "decomposing",
            "--upstream-dir",
            upstream,
            "--planner-base-url",
            announced["base_url"],
            "--planner-model",
            "demo",
            "--max-output-tokens",
            "96",
        )
    finally:
        planner.send_signal(signal.SIGINT)
        planner.wait(30)
        if planner.stdout is not None:
            planner.stdout.close()
    assert done.returncode in (0, 3), done.stderr
    assert "Traceback" not in done.stderr
    [record] = records(tmp_path / "out")
    if record["status"] == "evaluated":
        results = record["decomposition"]["results"]
        assert len(results) == 3  # the demo decomposition's subtasks, each run by a sub-agent
        roles = {turn.get("role", "") for turn in record["turns"]}
        assert {"sub-agent 1", "sub-agent 2", "sub-agent 3"} <= roles
    else:
        assert record["failure_kind"] in NAMED_FAILURES, record["failure_kind"]
    note(
        "decomposing_real_sub_agents",
        {
            "status": record["status"],
            "ending": record["failure_kind"] or record["stop_reason"],
            "subtasks_succeeded": [
                r.get("success") for r in (record.get("decomposition") or {}).get("results", [])
            ],
        },
    )


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_answer_cut_off_by_the_output_limit_is_truncated(
    server: LlamaServer, gym: str, tmp_path: Path, api: str
) -> None:
    done = run(gym, server.base_url, tmp_path, "--api", api, "--max-output-tokens", "4")
    found = records(tmp_path)
    [record] = found
    if record["num_tool_calls"]:
        pytest.skip(
            "the model wrote a tool call in 4 tokens; nothing was cut off"
        )  # pragma: no cover
    assert done.returncode == 0, done.stderr
    assert (record["status"], record["stop_reason"]) == ("evaluated", "truncated")


def test_a_small_context_overflows_and_the_state_is_verified(
    llama: dict[str, str], gym: str, tmp_path: Path
) -> None:
    small = LlamaServer(llama, context=1024, log=tmp_path / "llama.log")
    small.start()
    try:
        done = run(gym, small.base_url, tmp_path / "out", "--max-output-tokens", "32")
    finally:
        small.kill()
    assert done.returncode == 0, done.stderr
    [record] = records(tmp_path / "out")
    assert (record["status"], record["stop_reason"]) == ("evaluated", "context_overflow")
    assert "exceeds the available context size" in record["context_overflow"]
    assert record["evaluation_completed"] is True


def test_a_server_killed_mid_run_is_resumed_cleanly(
    llama: dict[str, str], gym: str, tmp_path: Path
) -> None:
    server = LlamaServer(llama, context=8192, log=tmp_path / "llama.log")
    server.start()
    out = tmp_path / "out"
    paths = demo_paths()
    argv = [
        sys.executable,
        "-m",
        "eog_core",
        "run",
        str(paths.task),
        "--seed-root",
        str(paths.directory),
        "--gym",
        gym,
        "--base-url",
        server.base_url,
        "--model",
        "smollm2",
        "--out",
        str(out),
        "--max-turns",
        "3",
        "--max-output-tokens",
        "64",
        "--repeats",
        "4",
        "--concurrency",
        "1",
        "--unreachable-after",
        "2",
        "--rollout-retries",
        "0",
        "--stop-after-unreachable",
        "2",
    ]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + DEADLINE
        while not (out / "rollouts.jsonl").exists() or not records(out):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no rollout finished"
            time.sleep(0.2)
        server.kill()  # mid-run: the next rollout's requests find nothing listening
        _, stderr = process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
        server.kill()
    assert process.returncode == 3, stderr
    assert "rollouts in a row found the model endpoint unreachable" in stderr
    assert "Traceback" not in stderr
    first = records(out)
    assert first[0]["status"] == "evaluated"
    note("killed_run", [r["failure_kind"] or r["status"] for r in first])

    server.start()  # the same port: resume where it stopped
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=DEADLINE, check=False)
    finally:
        server.kill()
    assert done.returncode == 0, done.stderr
    final = records(out)
    assert sorted(r["repeat"] for r in final) == [0, 1, 2, 3]
    assert all(r["status"] == "evaluated" for r in final)
    upstream = sorted(p.parent.name for p in (out / "upstream").rglob("results_*.json"))
    assert upstream == ["run_1", "run_2", "run_3", "run_4"]
