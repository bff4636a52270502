"""A new user's mistakes, each run as a subprocess: one clear line, the right exit code, no traceback."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eog_core.local import LocalGym, demo_paths
from tests.cli.test_cli import demo_snapshot, eog
from tests.datasets import EXAMPLES

DEMO_GYM = "demo-csm-server"


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


# -- serve-local ---------------------------------------------------------------------------


def test_serve_local_port_out_of_range_is_a_usage_error() -> None:
    done = eog("serve-local", "--port", "99999", check_code=2)
    assert "between 0 and 65535, got 99999" in done.stderr and "Traceback" not in done.stderr
    assert "whole number" in eog("serve-local", "--port", "eighty", check_code=2).stderr


def test_serve_local_json_announces_the_gym() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        announced = json.loads(server.stdout.readline())
        assert announced["gyms"] == {DEMO_GYM: announced["url"]}
        assert announced["mcp_url"] == announced["url"] + "/mcp"
        with urllib.request.urlopen(f"{announced['url']}/health", timeout=30) as answer:
            assert json.loads(answer.read())["status"] == "ok"
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)
    assert server.returncode == 0


# -- verify against gyms that fail ---------------------------------------------------------


class SilentGym:
    """Accepts every connection and never answers; counts the connections once closed."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                self.accepted.append(self.listener.accept()[0])
            except TimeoutError:
                continue

    def close(self) -> int:
        """Stop, take what still waits in the backlog, and return how many connections came."""
        if not self.stop.is_set():
            self.stop.set()
            self.thread.join()
            self.listener.setblocking(False)
            while True:
                try:
                    self.accepted.append(self.listener.accept()[0])
                except BlockingIOError:
                    break
            self.listener.close()
            for connection in self.accepted:
                connection.close()
        return len(self.accepted)


@pytest.fixture
def silent_gym() -> Iterator[SilentGym]:
    gym = SilentGym()
    yield gym
    gym.close()


def test_a_gym_that_never_answers_costs_one_timeout(silent_gym: SilentGym) -> None:
    done = eog(
        "verify",
        demo_paths().task,
        "--gym",
        f"{DEMO_GYM}={silent_gym.url}",
        "--database-id",
        f"{DEMO_GYM}=db_x",
        "--timeout",
        "2",
        check_code=3,
    )
    line = one_line(done.stderr)
    assert f"gym '{DEMO_GYM}' at {silent_gym.url} gave no answer within 2s (--timeout)" in line
    assert done.stdout == ""
    # each distinct query was sent at most once, for both policies together (not once per policy)
    queries = {
        v["validation_config"]["query"]
        for v in json.loads(demo_paths().task.read_text())["verifiers"]
    }
    assert 1 <= silent_gym.close() <= len(queries)


def test_an_unreachable_gym_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = eog(
        "verify",
        demo_paths().task,
        "--gym",
        f"{DEMO_GYM}=http://127.0.0.1:{port}",
        "--database-id",
        f"{DEMO_GYM}=db_x",
        check_code=3,
    )
    line = one_line(done.stderr)
    assert line.startswith(
        "eog-core verify: nothing could be scored: all 6 verifier(s) failed the same way"
    )
    assert f"127.0.0.1:{port}" in line and "cannot connect" in line
    verdict = json.loads(
        eog(
            "verify",
            demo_paths().task,
            "--gym",
            f"{DEMO_GYM}=http://127.0.0.1:{port}",
            "--database-id",
            f"{DEMO_GYM}=db_x",
            "--json",
            check_code=3,
        ).stdout
    )
    assert verdict["strict"]["failure_kind"] == "gym_unreachable"  # --json keeps every detail


async def test_a_wrong_database_id_is_one_line() -> None:
    import asyncio

    async with LocalGym.demo() as gym:
        done = await asyncio.to_thread(
            eog,
            "verify",
            demo_paths().task,
            "--gym",
            f"{DEMO_GYM}={gym.url}",
            "--database-id",
            f"{DEMO_GYM}=db_nobody_seeded",
            check_code=3,
        )
    line = one_line(done.stderr)
    assert "Database not found: db_nobody_seeded" in line and "--database-id" in line


def test_offline_details_are_whole_and_name_no_http(tmp_path: Path) -> None:
    snapshot = demo_snapshot(tmp_path / "final.sqlite", played=True)
    with sqlite3.connect(snapshot) as db:
        db.execute("DROP TABLE case_comment")
    done = eog(
        "verify",
        demo_paths().task,
        "--db",
        f"{DEMO_GYM}={snapshot}",
        "--policy",
        "strict",
        check_code=3,
    )
    assert (
        "SQLite rejected the query: no such table: case_comment" in done.stdout
    )  # not cut at 60 characters
    assert "HTTP" not in done.stdout


# -- validate ------------------------------------------------------------------------------


def _task(**changes: Any) -> dict[str, Any]:
    task = json.loads(demo_paths().task.read_text())
    task.update(changes)
    return task


def test_validate_reports_what_verify_would_reject(tmp_path: Path) -> None:
    base = _task()
    verifiers = base["verifiers"]
    no_query = json.loads(json.dumps(verifiers[0]))
    no_query["validation_config"]["query"] = ""
    odd_comparison = json.loads(json.dumps(verifiers[1]))
    odd_comparison["validation_config"]["comparison_type"] = "roughly"
    elsewhere = dict(json.loads(json.dumps(verifiers[3])), gym_name="gym-elsewhere")
    (tmp_path / "empty.json").write_text(json.dumps(_task(verifiers=[])))
    (tmp_path / "rows.jsonl").write_text(
        json.dumps(_task())
        + "\n"
        + json.dumps(_task(verifiers=[no_query, odd_comparison, elsewhere]))
        + "\n"
    )
    done = eog("validate", tmp_path / "empty.json", tmp_path / "rows.jsonl", check_code=1)
    assert "2 that verify would reject" in done.stdout
    assert f"{tmp_path / 'empty.json'} $.verifiers: no_verifiers" in done.stdout
    rows = tmp_path / "rows.jsonl"
    assert f"{rows}:2 $.verifiers[0].validation_config.query: verifier_without_query" in done.stdout
    assert (
        f"{rows}:2 $.verifiers[1].validation_config.comparison_type: unknown_comparison_type"
        in done.stdout
    )
    assert f"{rows}:2 $.verifiers[2].gym_name: verifier_gym_not_in_task" in done.stdout
    capped = eog(
        "validate", tmp_path / "empty.json", rows, "--max-findings", "2", check_code=1
    ).stdout
    assert "more findings not shown" in capped and "--json" in capped
    report = json.loads(
        eog("validate", tmp_path / "empty.json", rows, "--json", check_code=1).stdout
    )
    assert report["rejected_by_verify"] == 2
    kinds = {(f["source"], f["path"], f["kind"], f["severity"]) for f in report["findings"]}
    assert (
        f"{rows}:2",
        "$.verifiers[1].validation_config.comparison_type",
        "unknown_comparison_type",
        "rejected",
    ) in kinds


def test_validate_names_findings_inside_nemo_rows() -> None:
    report = json.loads(eog("validate", EXAMPLES / "nemo-rows" / "csm_rows.jsonl", "--json").stdout)
    paths = {(f["source"].rsplit(":", 1)[1], f["path"]) for f in report["findings"]}
    assert ("2", "$.verifier_metadata.verifiers[2].validation_config.expected_value") in paths


# -- non-UTF-8 input -----------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_binary_task_files_are_one_line(tmp_path: Path, suffix: str) -> None:
    binary = tmp_path / f"task{suffix}"
    binary.write_bytes(
        b'{"user_prompt": "caf\xe9"}\n' if suffix == ".jsonl" else b"\x89PNG\r\n\x1a\n\x00\xff"
    )
    validate = eog("validate", binary, check_code=1)
    assert str(binary) in validate.stderr and "Traceback" not in validate.stderr
    assert len([line for line in validate.stderr.splitlines() if line]) == 1
    for command in (
        ["verify", binary, "--db", "x=y"],
        ["convert", binary, "--tools", EXAMPLES / "tools", "-o", tmp_path / "out.jsonl"],
    ):
        done = eog(*command, check_code=3)
        assert "Traceback" not in done.stderr and str(binary) in done.stderr
    if suffix == ".jsonl":
        assert "byte offset 20" in validate.stderr  # \xe9 sits at byte 20 of the file


# -- compare and score ---------------------------------------------------------------------


def verdicts(path: Path, outcomes: dict[str, bool]) -> Path:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": task,
                    "domain": "csm",
                    "mode": "oracle",
                    "repeat": 0,
                    "policy": "strict",
                    "success": ok,
                    "reward": float(ok),
                    "pass_rate": float(ok),
                    "num_defined": 1,
                    "num_scored": 1,
                    "evaluation_completed": True,
                    "failure_kind": None,
                }
            )
            + "\n"
            for task, ok in outcomes.items()
        )
    )
    return path


def test_compare_without_a_task_in_common_exits_3(tmp_path: Path) -> None:
    a = verdicts(tmp_path / "a.jsonl", {"t1": True, "t2": False})
    b = verdicts(tmp_path / "b.jsonl", {"t3": True})
    line = one_line(eog("compare", a, b, check_code=3).stderr)
    assert "no run in common" in line and "2 task(s) only in A, 1 only in B" in line


def test_compare_names_its_policy_and_needs_a_sample(tmp_path: Path) -> None:
    a = verdicts(tmp_path / "a.jsonl", {"t1": True})
    done = eog("compare", a, a, "--n-boot", "200")
    assert "policy: each side's primary outcome: strict where present, else parity" in done.stdout
    assert "not judged: 1 paired task(s), equivalence needs at least 10" in done.stdout
    assert (
        json.loads(eog("compare", a, a, "--n-boot", "200", "--json").stdout)["equivalent"] is False
    )
    many = verdicts(tmp_path / "m.jsonl", {f"t{i}": i % 2 == 0 for i in range(12)})
    assert (
        json.loads(eog("compare", many, many, "--n-boot", "200", "--json").stdout)["equivalent"]
        is True
    )
    assert "between 0 and 1" in one_line(
        eog("compare", a, a, "--margin", "50", check_code=2).stderr
    )
    help_text = eog("compare", "--help").stdout
    assert "95% CI" in help_text and "%%" not in help_text


def test_score_on_broken_files_lists_each_and_why(tmp_path: Path) -> None:
    run = tmp_path / "results" / "run_1"
    run.mkdir(parents=True)
    (run / "results_oracle__csm__t1.json").write_text("{bad")
    (run / "results_oracle__csm__t2.json").write_text("[]")
    (run / "results_oracle__csm__t3.json").write_bytes(b"\xff\xfe")
    done = eog("score", tmp_path / "results", check_code=3)
    assert "all 3 result file(s) were left out" in done.stderr and "Traceback" not in done.stderr
    for name in ("t1", "t2", "t3"):
        assert f"results_oracle__csm__{name}.json: " in done.stderr


# -- output and logging --------------------------------------------------------------------


def test_broken_pipe_stops_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "eog_core", "validate", EXAMPLES / "tasks", "--json"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0 and done.stderr == ""


def test_verbosity_flags_go_anywhere_and_show_the_library_log() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    words = [
        "verify",
        str(demo_paths().task),
        "--gym",
        f"{DEMO_GYM}=http://127.0.0.1:{port}",
        "--database-id",
        f"{DEMO_GYM}=db_x",
        "--policy",
        "strict",
    ]
    quiet = eog(*words, check_code=3).stderr
    assert "INFO" not in quiet
    before = eog("-v", *words, check_code=3).stderr
    after = eog(*words, "--verbose", check_code=3).stderr
    for text in (before, after):
        assert "INFO eog_core.cli.verify: gym demo-csm-server failed to answer" in text
    assert "DEBUG eog_core" in eog(*words, "-vv", check_code=3).stderr
    assert eog("-q", "demo").stderr == "" and eog("demo", "-q").stderr == ""
