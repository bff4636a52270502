"""Each eog-core command end to end, as a subprocess, on real files and the local gym."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eog_core import load_tasks
from eog_core.local import LocalGym, demo_paths
from tests.datasets import DataSet


def eog(*args: str | Path, check_code: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "eog_core", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check_code is not None:
        assert done.returncode == check_code, (
            f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    return done


def test_demo_plays_verifies_and_cleans_up() -> None:
    done = eog("demo")
    assert "strict: SUCCESS" in done.stdout and "parity: SUCCESS" in done.stdout
    assert "passed 5/5 counted (6 defined)" in done.stdout  # parity collapses the duplicate name
    assert "databases left on the gym: 0; leaked: 0" in done.stdout
    report = json.loads(eog("demo", "--sse", "--json").stdout)
    assert report["ok"] is True
    assert report["played"]["strict"]["success"] and not report["control"]["strict"]["success"]
    assert report["databases_left"] == [] and report["leaked"] == []


def test_help_has_examples() -> None:
    for command in ("demo", "validate", "convert", "verify", "score", "compare", "serve-local"):
        assert "example:" in eog(command, "--help").stdout


def test_validate_data_and_defects(tmp_path: Path, dataset: DataSet) -> None:
    data = dataset.root
    report = json.loads(
        eog(
            "validate", data / "tasks", data / "nemo-rows", "--tools", data / "tools", "--json"
        ).stdout
    )
    assert report["invalid"] == 0 and report["valid"] == dataset.valid_in_validate
    assert report["verifier_kinds"] == {"database_state": dataset.verifiers_in_validate}
    assert report["finding_counts"]["duplicate_verifier_name"] > 0
    assert report["finding_counts"]["tool_not_in_snapshots"] == 1  # get_team, in the hybrid row
    broken = json.loads(demo_paths().task.read_text())
    broken["verifiers"][2]["validation_config"]["query"] = 7
    broken["verifiers"][0]["validation_config"]["expected_value"] = "1"
    (tmp_path / "bad.json").write_text(json.dumps(broken))
    done = eog("validate", tmp_path / "bad.json", demo_paths().task, check_code=1)
    assert "$.verifiers[2].validation_config.query" in done.stderr and "bad.json" in done.stderr
    assert "1 valid task(s), 1 invalid" in done.stdout


def test_convert_matches_the_nemo_rows(tmp_path: Path, dataset: DataSet) -> None:
    data = dataset.root
    out = tmp_path / "rows.jsonl"
    eog("convert", data / "tasks", "--tools", data / "tools", "-o", out)
    rows = {
        json.loads(line)["verifier_metadata"]["task_id"]: json.loads(line)
        for line in out.read_text().splitlines()
    }
    assert len(rows) == dataset.upstream_files
    assert {t.task_id for t in load_tasks(out)} == set(rows)  # the rows load back as tasks
    for line in (data / "nemo-rows" / dataset.csm_rows_file).read_text().splitlines():
        nemo = json.loads(line)
        ours = rows[nemo["verifier_metadata"]["task_id"]]
        # the rows carry what the model is shown: upstream's cleaned schemas, in merge order
        assert ours["responses_create_params"]["tools"] == nemo["responses_create_params"]["tools"]
        assert ours["verifier_metadata"]["verifiers"] == nemo["verifier_metadata"]["verifiers"]
        assert ours["verifier_metadata"]["tool_to_gym"] == nemo["verifier_metadata"]["tool_to_gym"]
        assert [m["content"] for m in ours["responses_create_params"]["input"]] == [
            m["content"] for m in nemo["responses_create_params"]["input"]
        ]


def demo_snapshot(path: Path, *, played: bool) -> Path:
    with sqlite3.connect(path) as db:
        db.executescript(demo_paths().seed_sql.read_text())
        if played:
            db.executescript("""
                UPDATE entitlement SET status = 'active', end_date = '2027-06-30' WHERE sys_id = 'ent_002';
            """)
    return path


def test_verify_offline_with_pinned_now(tmp_path: Path) -> None:
    snapshot = demo_snapshot(tmp_path / "final.sqlite", played=True)
    done = eog(
        "verify", demo_paths().task, "--db", f"demo-csm-server={snapshot}", "--json", check_code=1
    )
    verdicts = json.loads(done.stdout)
    assert verdicts["strict"]["results"][0]["passed"] is True  # entitlement_renewed
    assert verdicts["strict"]["num_passed"] == 1 and verdicts["parity"]["num_scored"] == 5
    # 'now' pinned 10 years ahead: the "touched recently" verifier cannot pass
    with sqlite3.connect(snapshot) as db:
        db.execute(
            "UPDATE \"case\" SET sys_updated_on = '2030-01-01 00:00:00' WHERE number = 'CS0001003'"
        )
    pinned = json.loads(
        eog(
            "verify",
            demo_paths().task,
            "--db",
            f"demo-csm-server={snapshot}",
            "--policy",
            "strict",
            "--now",
            "2030-01-01 06:00:00",
            "--json",
            check_code=1,
        ).stdout
    )
    assert (
        pinned["results"][4]["name"] == "login_case_touched_recently"
        and pinned["results"][4]["passed"]
    )


def test_verify_errors_are_clear(tmp_path: Path) -> None:
    done = eog(
        "verify",
        demo_paths().task,
        "--db",
        f"demo-csm-server={tmp_path / 'nope.sqlite'}",
        check_code=3,
    )
    assert "not found" in done.stderr and "nope.sqlite" in done.stderr
    assert "--db GYM=FILE" in eog("verify", demo_paths().task, check_code=3).stderr
    (tmp_path / "t.json").write_text("{")
    assert "invalid JSON" in eog("verify", tmp_path / "t.json", "--db", "x=y", check_code=3).stderr


async def test_verify_live_gym(tmp_path: Path) -> None:
    async with LocalGym.demo() as gym:
        import aiohttp

        async with aiohttp.ClientSession() as http:
            body = {
                "database_id": "db_cli",
                "name": "n",
                "description": "d",
                "sql_content": demo_paths().seed_sql.read_text(),
            }
            async with http.post(f"{gym.url}/api/seed-database", json=body) as answer:
                assert answer.status == 200
        import asyncio

        done = await asyncio.to_thread(
            eog,
            "verify",
            demo_paths().task,
            "--gym",
            f"demo-csm-server={gym.url}",
            "--database-id",
            "demo-csm-server=db_cli",
            "--policy",
            "parity",
            "--json",
            check_code=1,
        )
        verdict = json.loads(done.stdout)
        assert verdict["num_scored"] == 5 and verdict["num_passed"] == 0


def upstream_file(root: Path, run: int, task: str, domain: str, runs: list[dict[str, Any]]) -> None:
    successes = sum(bool(r.get("overall_success")) for r in runs)
    checked = sum(r.get("verification_summary", {}).get("total", 0) for r in runs)
    passed = sum(r.get("verification_summary", {}).get("passed", 0) for r in runs)
    folder = root / f"run_{run}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"results_oracle__{domain}__{task}.json").write_text(
        json.dumps(
            {
                "runs": runs,
                "statistics": {
                    "total_runs": len(runs),
                    "successful_runs": successes,
                    "overall_success_rate": successes / len(runs),
                    "pass_at_1": float(bool(runs[0].get("overall_success"))),
                    "verifier_level_pass_rate": passed / checked if checked else 0,
                    "total_verifiers_checked": checked,
                    "total_verifiers_passed": passed,
                },
            }
        )
    )


def ok_run(passed: int, total: int) -> dict[str, Any]:
    return {
        "run_number": 1,
        "overall_success": passed == total,
        "verification_summary": {
            "total": total,
            "passed": passed,
            "failed": total - passed,
            "pass_rate": passed / total,
        },
    }


def test_score_upstream_folder_with_errors_and_missing_task(tmp_path: Path) -> None:
    results = tmp_path / "results"
    upstream_file(results, 1, "t1", "csm", [ok_run(2, 2)])  # success, verifiers 1.0
    upstream_file(results, 1, "t2", "csm", [ok_run(1, 2)])  # failure, verifiers 0.5
    upstream_file(
        results,
        1,
        "t3",
        "hr",
        [{"run_number": 1, "error": "LLM timeout", "overall_success": False}],
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": t}) + "\n" for t in ("t1", "t2", "t3", "t4")))
    done = eog("score", results, "--tasks", tasks)
    # upstream: success mean(1, 0, 0) = 33.33 and verifier mean(1, .5, 0) = 50.00, the errored file at 0
    assert "33.33" in done.stdout and "50.00" in done.stdout
    report = json.loads(eog("score", results, "--tasks", tasks, "--json").stdout)
    overall = report["corrected"]["overall"]
    strict_or_parity = overall["parity"] or overall["strict"]
    assert (
        strict_or_parity["runs_scored"] == 2 and strict_or_parity["runs_errored"] == 1
    )  # t3 excluded
    assert strict_or_parity["run_success_rate"] == pytest.approx(0.5)  # t1 of t1, t2
    assert strict_or_parity["verifier_pass_rate"] == pytest.approx(0.75)  # mean(1, .5)
    assert [task for _, task in report["corrected"]["missing_tasks"]] == ["t4"]


def test_compare_two_verdict_files(tmp_path: Path) -> None:
    def write(name: str, outcomes: list[bool]) -> Path:
        path = tmp_path / name
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "task_id": f"t{i}",
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
                for i, ok in enumerate(outcomes)
            )
        )
        return path

    # 10 tasks: both pass 3, only A 1, only B 6 -> McNemar exact p = 2 * (C(7,0)+C(7,1)) / 2^7 = 0.125
    a = write("a.jsonl", [True] * 3 + [True] + [False] * 6)
    b = write("b.jsonl", [True] * 3 + [False] + [True] * 6)
    report = json.loads(eog("compare", a, b, "--n-boot", "2000", "--json").stdout)
    assert report["only_a"] == 1 and report["only_b"] == 6
    assert report["mcnemar_p"] == pytest.approx(0.125)
    assert report["difference"] == pytest.approx(0.5)
    assert report["equivalent"] is False
    assert "McNemar" in eog("compare", a, b, "--n-boot", "500").stdout


def test_bad_inputs_exit_3(tmp_path: Path) -> None:
    (tmp_path / "v.jsonl").write_text('{"task_id": "t"}\n')
    done = eog("score", tmp_path / "v.jsonl", check_code=3)
    assert "v.jsonl:1" in done.stderr
    assert eog("compare", tmp_path / "x.txt", tmp_path / "v.jsonl", check_code=3).stderr


def test_argument_errors_exit_2_with_a_message(tmp_path: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(
        json.dumps(
            {
                "task_id": "t",
                "domain": "csm",
                "mode": "oracle",
                "repeat": 0,
                "policy": "strict",
                "success": True,
                "reward": 1.0,
                "pass_rate": 1.0,
                "num_defined": 1,
                "num_scored": 1,
                "evaluation_completed": True,
                "failure_kind": None,
            }
        )
        + "\n"
    )
    assert "margin" in eog("compare", verdicts, verdicts, "--margin", "0", check_code=2).stderr
    assert "margin" in eog("compare", verdicts, verdicts, "--margin", "1.5", check_code=2).stderr
    assert (
        "min_tasks" in eog("compare", verdicts, verdicts, "--min-tasks", "0", check_code=2).stderr
    )
    assert (
        "--n-boot: expected 1 to 100000, got 0"
        in eog("compare", verdicts, verdicts, "--n-boot", "0", check_code=2).stderr
    )
    assert "--k: expected 1 to 20, got 0" in eog("score", verdicts, "--k", "0", check_code=2).stderr
    task = demo_paths().task
    assert (
        "http"
        in eog(
            "verify",
            task,
            "--gym",
            "demo-csm-server=localhost:8001",
            "--database-id",
            "demo-csm-server=db",
            check_code=2,
        ).stderr
    )
    assert (
        "--database-id"
        in eog("verify", task, "--gym", "demo-csm-server=http://127.0.0.1:9", check_code=3).stderr
    )
    snapshot = demo_snapshot(tmp_path / "s.sqlite", played=False)
    assert (
        "demo-csm-server"
        in eog("verify", task, "--db", f"other-gym={snapshot}", check_code=3).stderr
    )
    assert (
        "SQLite understands"
        in eog(
            "verify", task, "--db", f"demo-csm-server={snapshot}", "--now", "soon", check_code=2
        ).stderr
    )


def test_verify_against_a_dead_gym_is_an_incomplete_evaluation() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket closes
    done = eog(
        "verify",
        demo_paths().task,
        "--gym",
        f"demo-csm-server=http://127.0.0.1:{port}",
        "--database-id",
        "demo-csm-server=db_x",
        "--policy",
        "strict",
        "--json",
        check_code=3,
    )
    verdict = json.loads(done.stdout)
    assert verdict["evaluation_completed"] is False and verdict["failure_kind"] == "gym_unreachable"


def test_validate_counts_a_task_in_every_mode(tmp_path: Path) -> None:
    row = json.loads(demo_paths().task.read_text())
    row["verifiers"][0]["validation_config"]["expected_value"] = "1"
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(json.dumps(dict(row, mode=mode)) + "\n" for mode in ("oracle", "plus_5_tools"))
    )
    report = json.loads(eog("validate", rows, "--json").stdout)
    assert report["finding_counts"]["numeric_string_expectation"] == 2
    assert report["finding_counts"]["duplicate_verifier_name"] == 2


def test_serve_local_runs_until_interrupted() -> None:
    import signal
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port), "--sse"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                    assert json.loads(answer.read())["status"] == "ok"
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, server.stderr
                time.sleep(0.05)
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
    assert server.returncode == 0
    assert f"127.0.0.1:{port}" in out


def test_empty_inputs_are_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    page = ["-o", str(tmp_path / "r.html")]
    for words in (["score"], ["report", *page]):  # one wording for a folder that is no run
        assert "empty: not a run: expected a run folder" in (
            eog(*words, tmp_path / "empty", check_code=3).stderr
        )
    compared = eog("compare", tmp_path / "empty", tmp_path / "empty", check_code=3).stderr
    assert "empty: not a run: expected a run folder" in compared
    (tmp_path / "v.jsonl").write_text("")
    assert (
        "no scored runs"
        in eog("compare", tmp_path / "v.jsonl", tmp_path / "v.jsonl", check_code=3).stderr
    )
