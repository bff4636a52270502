"""``eog-core gateway`` as a subprocess: announce, a whole rollout by the SDK client, exits."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import aiohttp

from eog_core.local import LocalGym, demo_paths, load_demo_trajectory
from eog_core.run import ROLLOUTS_FILE
from tests.gateway.test_gateway_sdk import mcp_session

TOKEN_VAR = "EOG_TEST_GATEWAY_TOKEN"
TOKEN = "gateway-token-DO-NOT-LEAK-42"
DEADLINE = 60.0


def command(gym: LocalGym, out: Path, *extra: str) -> list[str]:
    paths = demo_paths()
    return [
        sys.executable,
        "-m",
        "eog_core",
        "gateway",
        str(paths.task),
        "--gym",
        f"{gym.name}={gym.url}",
        "--seed-root",
        str(paths.directory),
        "--out",
        str(out),
        "--json",
        *extra,
    ]


async def spawn(argv: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, TOKEN_VAR: TOKEN},
    )


async def announced(process: asyncio.subprocess.Process) -> dict[str, object]:
    assert process.stdout is not None
    async with asyncio.timeout(DEADLINE):
        line = await process.stdout.readline()
    assert line, "the gateway exited without announcing itself"
    value: dict[str, object] = json.loads(line)
    return value


async def ended(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    async with asyncio.timeout(DEADLINE):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_cli_serves_a_whole_run_and_exits_when_done(gym: LocalGym, tmp_path: Path) -> None:
    process = await spawn(command(gym, tmp_path / "out", "--token-env", TOKEN_VAR, "--finish-tool"))
    try:
        info = await announced(process)
        assert (info["planned"], info["pending"], info["token_required"]) == (1, 1, True)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            aiohttp.ClientSession(headers=auth) as http,
            http.post(f"{info['rollouts_url']}", json={}) as response,
        ):
            assert response.status == 201
            rollout = await response.json()
        async with mcp_session(rollout["mcp_url"], headers=auth) as agent:
            assert "finish" in {t.name for t in (await agent.list_tools()).tools}
            for step in load_demo_trajectory():
                assert (await agent.call_tool(step["name"], step["arguments"])).isError is False
            done = await agent.call_tool("finish", {"answer": "Renewed and opened the case."})
            assert done.isError is False
        code, out, err = await ended(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0, err
    assert TOKEN not in out + err
    [record] = [
        json.loads(line) for line in (tmp_path / "out" / ROLLOUTS_FILE).read_text().splitlines()
    ]
    assert (record["success"], record["reward"], record["final_answer"]) == (
        True,
        1.0,
        "Renewed and opened the case.",
    )
    assert json.loads(out.splitlines()[-1])["evaluated"] == 1
    assert gym.database_ids() == []
    # `score` reads both outputs, as it reads `run`'s
    for path in (tmp_path / "out" / ROLLOUTS_FILE, tmp_path / "out" / "upstream"):
        scored = await spawn([sys.executable, "-m", "eog_core", "score", str(path), "--json"])
        code, out, err = await ended(scored)
        assert code == 0, err
        overall = json.loads(out)["corrected"]["overall"]
        assert overall["parity"]["run_success_rate"] == 1.0
    # resumed on a finished run: nothing to hand out, it says so and exits 0 at once
    again = await spawn(command(gym, tmp_path / "out"))
    info = await announced(again)
    assert info["pending"] == 0
    code, _, err = await ended(again)
    assert code == 0, err


async def test_cli_max_request_bytes_bounds_a_body(gym: LocalGym, tmp_path: Path) -> None:
    process = await spawn(command(gym, tmp_path / "out", "--max-request-bytes", "2048"))
    try:
        info = await announced(process)
        async with aiohttp.ClientSession() as http:
            for size, status in ((1500, 400), (4096, 413)):  # read and refused, or not read
                body = {"pad": "x" * size}
                async with http.post(f"{info['rollouts_url']}", json=body) as response:
                    assert response.status == status, size
                    text = await response.text()
                    assert ("2048" in text) == (status == 413), text
        process.send_signal(signal.SIGTERM)
        code, _, err = await ended(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 130, err
    assert gym.database_ids() == []


async def test_cli_sigterm_abandons_and_exits_130(gym: LocalGym, tmp_path: Path) -> None:
    process = await spawn(command(gym, tmp_path / "out", "--repeats", "2"))
    try:
        info = await announced(process)
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{info['rollouts_url']}") as response,
        ):
            assert response.status == 201
        assert len(gym.database_ids()) == 1
        process.send_signal(signal.SIGTERM)
        code, _, err = await ended(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 130, err
    [record] = [
        json.loads(line) for line in (tmp_path / "out" / ROLLOUTS_FILE).read_text().splitlines()
    ]
    assert record["failure_kind"] == "abandoned"
    assert gym.database_ids() == []


async def test_cli_bad_input_is_one_line(gym: LocalGym, tmp_path: Path) -> None:
    cases = [
        (["--token-env", "EOG_TEST_UNSET_VARIABLE_X"], 2, "--token-env EOG_TEST_UNSET_VARIABLE_X"),
        (["--token-env", TOKEN_VAR, "--control-token-env", TOKEN_VAR], 2, "must differ"),
        (["--control-token-env", "EOG_TEST_UNSET_Y"], 2, "--control-token-env EOG_TEST_UNSET_Y"),
        (["--host", "0.0.0.0"], 2, "not a loopback address"),
        (["--repeats", "0"], 2, "--repeats must be at least 1"),
        (["--max-calls-per-rollout", "0"], 2, "--max-calls-per-rollout must be at least 1"),
        (["--max-connections", "0"], 2, "--max-connections: expected 1 to"),
        (["--max-request-bytes", "10"], 2, "--max-request-bytes: expected 1024 to"),
        (["--capture-state", "--max-state-bytes", "0"], 2, "--max-state-bytes must be at"),
        (["--gym", "no-equals-sign"], 2, "--gym takes NAME=URL"),
        (
            ["--gym", "sn-csm-server=http://127.0.0.1:9"],
            2,
            "--gym sn-csm-server: no task uses that gym; the tasks' gyms are demo-csm-server",
        ),
    ]
    for extra, expected, text in cases:
        process = await spawn(command(gym, tmp_path / "out", *extra))
        code, _out, err = await ended(process)
        assert (code, text in err, len(err.strip().splitlines())) == (expected, True, 1), (
            extra,
            err,
        )
        assert "Traceback" not in err
    process = await spawn(
        [
            sys.executable,
            "-m",
            "eog_core",
            "gateway",
            str(tmp_path / "missing.json"),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    code, _, err = await ended(process)
    assert code == 3 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
