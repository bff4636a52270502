"""``eog-core run`` as a subprocess: exit codes, the key kept secret, Ctrl-C, kill and resume.

The gym and the scripted model run in the test's event loop; the command runs
in its own process, as a user runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from eog_core.cli import main
from eog_core.cli._run import progress_line
from eog_core.local import LocalGym, demo_paths
from eog_core.run import ROLLOUTS_FILE, RunProgress
from eog_core.run._folder import LOCK_FILE
from tests.cli.test_cli_first_hour import SilentGym
from tests.run.conftest import API_KEY
from tests.run.scripted_model import ScriptedModel
from tests.run.test_endings import SilentModel

KEY_VAR = "EOG_TEST_MODEL_KEY"
DEADLINE = 120.0


def command(
    gym: LocalGym, model: ScriptedModel, out: Path, *extra: str, name: str = "demo-correct"
) -> list[str]:
    paths = demo_paths()
    return [
        sys.executable,
        "-m",
        "eog_core",
        "-v",
        "run",
        str(paths.task),
        "--base-url",
        model.base_url,
        "--model",
        name,
        "--api-key-env",
        KEY_VAR,
        "--gym",
        f"{gym.name}={gym.url}",
        "--seed-root",
        str(paths.directory),
        "--out",
        str(out),
        *extra,
    ]


async def spawn(argv: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, KEY_VAR: API_KEY, "OPENAI_API_KEY": ""},
    )


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def serve_model(*extra: str) -> AsyncIterator[str]:
    """``eog-core serve-model --port 0 --json`` as a user starts it: its announced base URL;
    stopped with SIGINT (and checked to exit 0) on the way out."""
    server = await spawn(
        [sys.executable, "-m", "eog_core", "serve-model", "--port", "0", "--json", *extra]
    )
    try:
        assert server.stdout is not None
        announced = json.loads(await asyncio.wait_for(server.stdout.readline(), DEADLINE))
        yield str(announced["base_url"])
    finally:
        if server.returncode is None:
            server.send_signal(signal.SIGINT)
        code, _, err = await finish(server)
    assert code == 0, err


async def finish(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(process.communicate(), DEADLINE)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def records(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / ROLLOUTS_FILE).read_text().splitlines()]


def every_output_text(out: Path) -> str:
    return "".join(p.read_text() for p in out.rglob("*") if p.is_file())


async def test_run_end_to_end_exit_0_summary_and_key_kept_secret(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    code, stdout, stderr = await finish(
        await spawn(command(gym, model, tmp_path, "--repeats", "2"))
    )

    assert code == 0, stderr
    assert [r["success"] for r in records(tmp_path)] == [True, True]
    assert "strict pass@1 %" in stdout and "csm" in stdout and "100.0" in stdout
    assert all(r["authorization"] == f"Bearer {API_KEY}" for r in model.requests)
    for text in (stdout, stderr, every_output_text(tmp_path)):
        assert API_KEY not in text
    assert gym.database_ids() == []


async def test_capture_state_stores_the_states_the_records_name(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    argv = command(gym, model, tmp_path, "--capture-state", "--max-state-rows", "1000")
    code, _, stderr = await finish(await spawn(argv))

    assert code == 0, stderr
    [record] = records(tmp_path)
    assert record["success"] is True
    for key in ("before", "after"):
        assert (tmp_path / "states" / f"{record['state'][key]}.json.gz").is_file()


async def test_incomplete_rollouts_exit_3_and_key_stays_out_of_logs(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.fail_next(100, status=503, body={"error": {"message": "overloaded"}})
    directory = tmp_path / "gyms.json"
    directory.write_text(json.dumps({gym.name: [gym.url]}))
    argv = command(gym, model, tmp_path / "out", "--model-retries", "1", "--rollout-retries", "0")
    argv[argv.index("--gym") : argv.index("--gym") + 2] = ["--gyms", str(directory)]
    code, stdout, stderr = await finish(await spawn(argv))

    assert code == 3
    [record] = records(tmp_path / "out")
    assert record["failure_kind"] == "model_unreachable"
    assert "model_unreachable" in stdout and "retry 1 of 1" in stderr  # -v logs the retries
    for text in (stdout, stderr, every_output_text(tmp_path / "out")):
        assert API_KEY not in text


async def test_timeout_bounds_every_gym_request(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    silent = (
        SilentGym()
    )  # accepts connections, never answers: without --timeout seeding waits 1200 s
    try:
        argv = command(gym, model, tmp_path, "--rollout-retries", "0", "--timeout", "1", "--json")
        argv[argv.index("--gym") + 1] = f"{gym.name}={silent.url}"
        started = time.monotonic()
        code, stdout, stderr = await finish(await spawn(argv))
        took = time.monotonic() - started
    finally:
        silent.close()
    # every gym request, the janitor's cleanup retries included, waits at most --timeout:
    # the janitor's own default (30 s per request) made this run take 33 s
    assert took < 25, f"the run took {took:.1f}s: some gym request ignored --timeout 1"

    assert code == 3, stderr
    [record] = records(tmp_path)
    assert record["failure_kind"] == "gym_unreachable"
    assert "1" in str(record["failure_reason"]) and "Traceback" not in stderr
    assert json.loads(stdout)["incomplete"][0]["failure_kind"] == "gym_unreachable"
    assert model.requests == []


def test_timeout_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                str(demo_paths().task),
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--out",
                str(tmp_path),
                "--timeout",
                "0",
            ]
        )
    assert exited.value.code == 2
    assert "--timeout: expected a positive number of seconds" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--extra-body", "[1]"], "--extra-body must be a JSON object"),
        (["--extra-body", "{"], "--extra-body is not JSON"),
        (["--repeats", "0"], "--repeats must be between 1 and 100,000, got 0"),
        (["--ray", "auto"], "requires the ray extra"),
        (["--max-state-bytes", "0"], "--max-state-bytes must be at least 1, got 0"),
        (["--capture-state", "--max-state-rows", "0"], "--max-state-rows must be at least 1"),
        (["--ray-actors", "2"], "--ray-actors needs --ray ADDRESS"),
        (["--ray", "auto", "--ray-actors", "0"], "--ray-actors must be at least 1"),
        (
            ["--api-key-env", "EOG_TEST_NOT_SET_ANYWHERE"],
            "EOG_TEST_NOT_SET_ANYWHERE: that environment",
        ),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
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
    assert message in capsys.readouterr().err
    assert not (tmp_path / ROLLOUTS_FILE).exists()


async def test_ctrl_c_cancels_in_flight_deletes_databases_and_leaves_valid_output(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.service_time = 60.0  # every rollout sits in a model call with its database seeded
    argv = command(gym, model, tmp_path, "--repeats", "3", "--concurrency", "3")
    process = await spawn(argv)
    await until(
        lambda: model.in_flight == 3 and len(gym.database_ids()) == 3, "three rollouts in flight"
    )

    process.send_signal(signal.SIGINT)
    code, _, stderr = await finish(process)

    assert code == 130, stderr
    assert "interrupted" in stderr
    assert gym.database_ids() == []
    assert not (tmp_path / ROLLOUTS_FILE).exists()  # nothing finished: nothing new is left


async def test_killed_run_resumes_where_it_stopped(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.service_time = 0.05
    argv = command(gym, model, tmp_path, "--repeats", "6", "--concurrency", "1")
    process = await spawn(argv)
    rollouts = tmp_path / ROLLOUTS_FILE

    def two_done() -> bool:
        return rollouts.exists() and rollouts.read_text().count("\n") >= 2

    await until(two_done, "two finished rollouts")
    process.kill()
    await finish(process)
    assert (tmp_path / LOCK_FILE).exists()  # a dead run's lock file: the kernel dropped its lock
    before = rollouts.read_text().splitlines()
    with rollouts.open("a") as out:
        out.write('{"format": "eog_core.rollout/1", "task_id": "demo_csm_fl')  # a torn write

    code, _, stderr = await finish(await spawn(argv))

    assert code == 0, stderr
    after = records(tmp_path)
    assert [json.dumps(r) for r in after[: len(before)]] == [
        json.dumps(json.loads(b)) for b in before
    ]
    assert sorted(r["repeat"] for r in after) == list(range(6))
    assert all(r["success"] for r in after)
    assert not (tmp_path / LOCK_FILE).exists()


def test_progress_line_and_summary_table() -> None:
    progress = RunProgress(
        total=40,
        skipped=4,
        done=8,
        in_flight=8,
        evaluated=7,
        passed=3,
        incomplete=1,
        started=time.monotonic() - 16,
    )
    line = progress_line(progress)
    assert line.startswith("[#######") and "12/40" in line and "pass 42.9%" in line
    assert "in flight 8" in line and "incomplete 1" in line and "ETA 0m56s" in line
    assert progress_line(RunProgress(total=3)).endswith("pass -  in flight 0  ETA ?")


# -- #17: fail fast, one line, exit codes ------------------------------------------------------


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("eog-core")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


async def test_a_dead_model_endpoint_is_one_line_and_exit_2_before_seeding(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, unused_tcp_port: int
) -> None:
    argv = command(gym, model, tmp_path, name="demo-correct")
    argv[argv.index("--base-url") + 1] = f"http://127.0.0.1:{unused_tcp_port}/v1"
    code, stdout, stderr = await finish(await spawn(argv))
    assert code == 2
    assert "no model server answers at" in one_line(stderr)
    assert sum(gym.ledger.seeds.values()) == 0
    assert "eog-core score" not in stdout  # no upstream folder was made: no hint for one


async def test_a_model_that_goes_down_stops_the_run_with_exit_3(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, unused_tcp_port: int
) -> None:
    argv = command(
        gym,
        model,
        tmp_path,
        "--no-preflight",
        "--repeats",
        "5",
        "--concurrency",
        "1",
        "--rollout-retries",
        "0",
        "--unreachable-after",
        "0.1",
        "--stop-after-unreachable",
        "2",
        "--model-retries",
        "1",
    )
    argv[argv.index("--base-url") + 1] = f"http://127.0.0.1:{unused_tcp_port}/v1"
    code, _, stderr = await finish(await spawn(argv))
    assert code == 3
    assert "2 rollouts in a row found the model endpoint unreachable" in one_line(stderr)
    assert [r["failure_kind"] for r in records(tmp_path)] == ["model_unreachable"] * 2
    assert gym.database_ids() == []


@pytest.mark.parametrize(
    "extra",
    [("--repeats", "99999999999999999999"), ("--concurrency", "1000000000"), ("--repeats", "0")],
)
async def test_absurd_plans_are_one_line_and_exit_2(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path, extra: tuple[str, str]
) -> None:
    code, _, stderr = await finish(await spawn(command(gym, model, tmp_path, *extra)))
    assert code == 2 and "must be between" in one_line(stderr)


async def test_an_empty_task_folder_is_a_usage_error(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    empty = tmp_path / "no-tasks"
    empty.mkdir()
    argv = command(gym, model, tmp_path / "out")
    argv[argv.index("run") + 1] = str(empty)
    code, _, stderr = await finish(await spawn(argv))
    assert code == 2 and "no tasks in" in one_line(stderr)
    assert model.requests == []


async def test_an_error_inside_a_worker_is_the_typed_line_not_a_group(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    (tmp_path / "upstream").mkdir()
    (tmp_path / "upstream" / "run_1").write_text("a file where a folder must go")
    code, _, stderr = await finish(await spawn(command(gym, model, tmp_path)))
    assert code == 3, stderr
    assert "ExceptionGroup" not in stderr and "run_1" in one_line(stderr)
    assert not (tmp_path / ROLLOUTS_FILE).exists()  # the upstream file first: no record
    assert gym.database_ids() == []


async def test_serve_model_and_run_are_the_offline_try(gym: LocalGym, tmp_path: Path) -> None:
    """The README's offline try: `eog-core serve-model` in one process, `eog-core run` of the
    demo task (paths from `eog-core demo --print-paths`) in another."""
    async with serve_model() as base_url:
        paths = {}
        for which in ("task", "seed-root"):
            code, out, _ = await finish(
                await spawn([sys.executable, "-m", "eog_core", "demo", "--print-paths", which])
            )
            assert code == 0
            paths[which] = out.strip()
        for api in ("chat", "responses"):
            out = tmp_path / api
            code, _, stderr = await finish(
                await spawn(
                    [
                        sys.executable,
                        "-m",
                        "eog_core",
                        "run",
                        paths["task"],
                        "--seed-root",
                        paths["seed-root"],
                        "--gym",
                        f"{gym.name}={gym.url}",
                        "--base-url",
                        base_url,
                        "--model",
                        "any-name",
                        "--api",
                        api,
                        "--repeats",
                        "2",
                        "--out",
                        str(out),
                    ]
                )
            )
            assert code == 0, stderr
            assert [r["success"] for r in records(out)] == [True, True]
            assert [r["stop_reason"] for r in records(out)] == ["answered", "answered"]
    assert gym.database_ids() == []


async def test_serve_model_noop_does_nothing(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    async with serve_model("--script", "noop") as base_url:
        argv = command(gym, model, tmp_path)
        argv[argv.index("--base-url") + 1] = base_url
        code, _, stderr = await finish(await spawn(argv))
        assert code == 0, stderr
        [record] = records(tmp_path)
        assert (record["success"], record["num_tool_calls"]) == (False, 0)


async def test_serve_model_on_a_taken_port_is_one_line(tmp_path: Path) -> None:
    async with ScriptedModel() as taken:
        port = taken.base_url.rsplit(":", 1)[1].split("/")[0]
        code, _, stderr = await finish(
            await spawn([sys.executable, "-m", "eog_core", "serve-model", "--port", port])
        )
    assert code == 3 and "cannot listen on 127.0.0.1" in one_line(stderr)


# -- one folder, one run (#35) -------------------------------------------------------------


async def test_a_second_run_on_the_same_out_is_refused_in_one_line_exit_2(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.service_time = 60.0
    first = await spawn(command(gym, model, tmp_path, "--repeats", "2"))
    await until(lambda: model.in_flight == 2, "the first run's rollouts in flight")

    code, _, stderr = await finish(await spawn(command(gym, model, tmp_path, "--repeats", "2")))
    assert code == 2
    assert f"is in use by another run (process {first.pid})" in one_line(stderr)
    assert model.in_flight == 2 and len(model.requests) == 2  # it asked nothing

    first.send_signal(signal.SIGINT)
    assert (await finish(first))[0] == 130


async def test_a_rerun_into_a_finished_out_says_nothing_ran(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    assert (await finish(await spawn(command(gym, model, tmp_path))))[0] == 0
    asked = len(model.requests)
    code, stdout, stderr = await finish(await spawn(command(gym, model, tmp_path)))
    assert code == 0, stderr
    assert "nothing to run: all 1 rollout(s) are already recorded in" in stdout
    assert "strict pass@1 %" in stdout  # and the table of what is recorded
    assert len(model.requests) == asked  # nothing was asked of the model


async def test_a_seed_root_without_the_seed_files_is_one_line_before_any_rollout(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    empty = tmp_path / "seeds"
    empty.mkdir()
    argv = command(gym, model, tmp_path / "out")
    argv[argv.index("--seed-root") + 1] = str(empty)
    code, _, stderr = await finish(await spawn(argv))
    assert code == 3
    assert "seed file of gym 'demo-csm-server' is not found" in one_line(stderr)
    assert model.requests == [] and sum(gym.ledger.seeds.values()) == 0
    assert not (tmp_path / "out").exists()


async def test_probe_timeout_bounds_the_preflight_of_a_hung_server(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    async with SilentModel() as silent:
        argv = command(gym, model, tmp_path / "out", "--probe-timeout", "0.3")
        argv[argv.index("--base-url") + 1] = silent
        code, _, stderr = await finish(await spawn(argv))
    assert code == 2
    assert "GET /models got no answer in 0.3s (--probe-timeout)" in one_line(stderr)
    assert not (tmp_path / "out").exists()
