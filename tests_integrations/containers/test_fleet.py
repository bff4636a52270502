"""The fleet on a real Podman: ``gyms up/status/logs/down``, ``run --launch`` with planned
restarts, SIGTERM and SIGKILL of the owner (the next ``gyms up`` reaps the orphans)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.run.scripted_model import ScriptedModel

from eog_core.fleet._ports import ephemeral_range
from eog_core.gym import GymClient
from eog_core.local import demo_paths
from tests_integrations.containers.conftest import our_containers, podman

DEADLINE = 300.0


async def eog(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eog_core",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), DEADLINE)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def lists_tools(url: str) -> bool:
    async with GymClient(url, name="sn-csm-server") as client:
        return bool(await client.list_tools())


async def test_gyms_up_two_domains_two_replicas_status_logs_down(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    directory = tmp_path / "gyms.json"
    code, out, err = await eog(
        fleet_env,
        "gyms",
        "up",
        "--domains",
        "csm,itsm",
        "--replicas",
        "2",
        "--write-directory",
        str(directory),
        "--json",
    )
    assert code == 0, err
    started = json.loads(out)
    table = json.loads(directory.read_text())
    assert table == started["gyms"]
    assert sorted(table) == ["gym-itsm-mcp", "sn-csm-server"]
    urls = [url for replicas in table.values() for url in replicas]
    assert len(set(urls)) == 4
    low, high = ephemeral_range()  # a NAT rule left by a dead container cannot catch a port
    assert all(not low <= urlsplit(url).port <= high for url in urls), urls  # bind(0) hands out
    assert all(await asyncio.gather(*(lists_tools(url) for url in urls)))
    assert len(our_containers()) == 4

    code, out, err = await eog(fleet_env, "gyms", "status", "--json")
    assert code == 0, err
    rows = json.loads(out)["containers"]
    assert sorted((r["domain"], r["replica"], r["owner"]) for r in rows) == [
        ("csm", 0, "detached"),
        ("csm", 1, "detached"),
        ("itsm", 0, "detached"),
        ("itsm", 1, "detached"),
    ]
    assert sorted(r["url"] for r in rows) == sorted(urls)

    code, out, err = await eog(fleet_env, "gyms", "logs", "itsm", "--replica", "1")
    assert code == 0, err
    assert "serving on" in out

    code, out, err = await eog(fleet_env, "gyms", "down", "--json")
    assert (code, json.loads(out)) == (0, {"removed": 4, "held": []}), err
    assert our_containers() == []


def csm_demo_task(folder: Path) -> Path:
    """The demo task on the csm gym's name (the fleet launches only the seven EOG gyms)."""
    text = demo_paths().task.read_text(encoding="utf-8").replace("demo-csm-server", "sn-csm-server")
    path = folder / "demo_on_csm.json"
    path.write_text(text, encoding="utf-8")
    return path


async def test_run_launch_restarts_at_the_lifecycle_cap_and_evaluates_every_rollout(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    async with ScriptedModel() as model:
        code, _, stderr = await eog(
            fleet_env,
            "-v",
            "run",
            str(csm_demo_task(tmp_path)),
            "--launch",
            "podman",
            "--max-lifecycles",
            "3",
            "--repeats",
            "8",
            "--concurrency",
            "2",
            "--base-url",
            model.base_url,
            "--model",
            "demo-correct",
            "--seed-root",
            str(demo_paths().directory),
            "--out",
            str(out),
            "--json",
        )
    assert code == 0, stderr
    records = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(records) == 8
    assert [r.get("failure_kind") for r in records] == [None] * 8
    assert all(r["success"] for r in records)
    assert stderr.count("restarted after its lifecycle cap") >= 2  # at 3 and at 6 lifecycles
    assert our_containers() == []


@contextlib.asynccontextmanager
async def foreground(env: dict[str, str], domain: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``gyms up --foreground`` once its gyms answer (its one JSON line); killed at the end."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eog_core",
        "gyms",
        "up",
        "--foreground",
        "--domains",
        domain,
        "--json",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), DEADLINE)
        assert line, f"gyms up --foreground ended early: {await process.stderr.read()!r}"
        assert list(json.loads(line)["gyms"]) == ["sn-csm-server"]
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def test_sigterm_of_a_foreground_fleet_removes_its_containers(
    fleet_env: dict[str, str],
) -> None:
    async with foreground(fleet_env, "csm") as process:
        assert len(our_containers()) == 1
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), DEADLINE) == 0
    assert our_containers() == []


async def test_after_a_sigkill_the_next_gyms_up_reaps_the_orphans(
    fleet_env: dict[str, str],
) -> None:
    async with foreground(fleet_env, "csm") as process:
        process.kill()
        await asyncio.wait_for(process.wait(), DEADLINE)
    orphans = our_containers()
    assert len(orphans) == 1  # SIGKILL: nothing could clean up

    code, out, err = await eog(fleet_env, "gyms", "up", "--domains", "itsm", "--json")
    assert code == 0, err
    left = our_containers()
    assert len(left) == 1 and orphans[0] not in left[0]
    domains = podman("ps", "-a", "--format", '{{index .Labels "io.eog-core.domain"}}').split()
    assert domains == ["itsm"]
    code, out, err = await eog(fleet_env, "gyms", "down")
    assert (code, out.strip()) == (0, "removed 1 gym container(s)"), err
    assert our_containers() == []


async def test_a_container_that_dies_is_replaced_on_the_same_url(fleet_env: dict[str, str]) -> None:
    async with foreground(fleet_env, "csm") as process:
        [first] = our_containers()
        code, out, err = await eog(fleet_env, "gyms", "status", "--json")
        assert code == 0, err
        [row] = json.loads(out)["containers"]
        podman("kill", first)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while True:  # the owner replaces the dead container; wait for the new one to answer
            running = podman("ps", "-q", "--filter", "label=io.eog-core.managed=1").split()
            if running and running[0] not in first:
                with contextlib.suppress(Exception):
                    if await lists_tools(row["url"]):
                        break
            assert loop.time() < deadline, "the dead container was not replaced"
            await asyncio.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), DEADLINE) == 0
    assert our_containers() == []


async def test_the_docker_path_is_the_same_code_through_a_docker_command(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    """``--engine docker`` with a ``docker`` command that is Podman (as the podman-docker
    package installs it: a script that runs podman with the same arguments)."""
    docker = tmp_path / "bin" / "docker"
    docker.parent.mkdir()
    docker.write_text(f'#!/bin/sh\nexec {shutil.which("podman")} "$@"\n')
    docker.chmod(0o755)
    env = {**fleet_env, "PATH": f"{docker.parent}:{fleet_env['PATH']}"}
    env.pop("EOG_ENGINE")
    code, out, err = await eog(env, "gyms", "up", "--engine", "docker", "--domains", "hr", "--json")
    assert code == 0, err
    [url] = json.loads(out)["gyms"]["sn-hr-internal"]
    assert await lists_tools(url)
    code, out, err = await eog(env, "gyms", "status", "--engine", "docker", "--json")
    assert [r["domain"] for r in json.loads(out)["containers"]] == ["hr"], err
    code, out, err = await eog(env, "gyms", "down", "--engine", "docker", "--json")
    assert (code, json.loads(out)) == (0, {"removed": 1, "held": []}), err
    assert our_containers() == []


def with_entrypoint(env: dict[str, str], code: str) -> dict[str, str]:
    """The test image with another command: ``code`` run by this Python."""
    entrypoint = json.dumps([sys.executable, "-u", "-c", code], separators=(",", ":"))
    return {
        **env,
        "EOG_FLEET_RUN_ARGS": f"{env['EOG_FLEET_RUN_ARGS']} --entrypoint {shlex.quote(entrypoint)}",
    }


@pytest.mark.parametrize("pause", [0, 1], ids=["before-its-port-is-read", "while-waited-for"])
async def test_a_gym_that_exits_fails_up_with_its_log_tail(
    fleet_env: dict[str, str], pause: int
) -> None:
    env = with_entrypoint(
        fleet_env,
        f"import sys, time; print('fatal: no database here'); time.sleep({pause}); sys.exit(1)",
    )
    code, _, err = await eog(env, "gyms", "up", "--domains", "email")
    assert code == 3
    assert "gym container for email" in err and "exited before answering" in err
    assert "fatal: no database here" in err  # the log tail
    assert our_containers() == []


async def test_a_gym_that_never_answers_times_out_with_its_log_tail(
    fleet_env: dict[str, str],
) -> None:
    env = with_entrypoint(fleet_env, "import time; print('still booting'); time.sleep(600)")
    code, _, err = await eog(env, "gyms", "up", "--domains", "teams", "--health-timeout", "6")
    assert code == 3
    assert "did not answer at http://127.0.0.1:" in err and "within 6 s" in err
    assert "still booting" in err
    assert our_containers() == []


async def test_sigterm_while_starting_removes_what_started_and_exits_130(
    fleet_env: dict[str, str],
) -> None:
    env = with_entrypoint(fleet_env, "import time; time.sleep(600)")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eog_core",
        "gyms",
        "up",
        "--domains",
        "csm,itsm",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while len(podman("ps", "-q", "--filter", "label=io.eog-core.managed=1").split()) < 2:
            assert loop.time() < deadline and process.returncode is None, "no container started"
            await asyncio.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), DEADLINE)
        assert process.returncode == 130
        assert "interrupted while starting" in err.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert our_containers() == []


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line with spaces) of every process now."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry.name)] = (int(stat.rpartition(")")[2].split()[1]), cmdline)
    return found


def _fleet_processes(fleet: str) -> list[str]:
    """The processes (conmon, mostly) that name a container of ``fleet`` (eog-DOMAIN-ID-N)."""
    return [cmd for _, cmd in _processes().values() if f"-{fleet}-" in cmd and "eog-" in cmd]


async def test_ctrl_c_while_a_container_is_being_created_leaves_no_process_behind(
    fleet_env: dict[str, str],
) -> None:
    """A terminal's Ctrl-C reaches the whole foreground process group: the engine's
    ``run`` must not be killed mid-create (its conmon and ``runc init`` would stay, with
    the port, in no list of the engine's)."""
    env = with_entrypoint(fleet_env, "import time; time.sleep(600)")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eog_core",
        "gyms",
        "up",
        "--domains",
        "csm,itsm,hr",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own group, as a shell gives a foreground command
    )
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        creating: list[str] = []
        while not (creating and our_containers()):  # a `run -d` under way, its record made
            creating = [
                cmd
                for parent, cmd in _processes().values()
                if parent == process.pid and " run -d " in cmd
            ]
            assert loop.time() < deadline and process.returncode is None, "no run started"
            await asyncio.sleep(0.01)
        fleet = creating[0].split(" --name eog-", 1)[1].split()[0].split("-")[1]
        os.killpg(process.pid, signal.SIGINT)
        _, err = await asyncio.wait_for(process.communicate(), DEADLINE)
        assert process.returncode == 130, err.decode()
        assert "interrupted while starting" in err.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert our_containers() == []
    assert _fleet_processes(fleet) == []


async def test_a_failed_up_removes_the_other_domains_containers(
    fleet_env: dict[str, str],
) -> None:
    """One domain's image cannot be had while the others are being created: ``up`` fails
    naming it, and removes the others once their creates end (none stays ``detached``)."""
    env = {**fleet_env, "EOG_FLEET_RUN_ARGS": f"{fleet_env['EOG_FLEET_RUN_ARGS']} --pull=never"}
    code, _, err = await eog(
        env,
        "gyms",
        "up",
        "--domains",
        "all",
        "--replicas",
        "2",
        "--image",
        "hr=localhost/eog-core-no-such-image:1",
    )
    assert code == 3
    assert "podman run failed" in err and "eog-core-no-such-image" in err, err
    assert our_containers() == []


CRASH_AFTER_SERVING = """
import os, socket, subprocess, sys, time
marker = {marker!r}
first = not os.path.exists(marker)
with open(marker, "a") as log:
    log.write("start\\n")
server = subprocess.Popen(
    [sys.executable, "-m", "eog_core", "serve-local", "--host", "0.0.0.0", "--port", "8005"]
)
if first:
    sys.exit(server.wait())
while True:
    try:
        socket.create_connection(("127.0.0.1", 8005), 1).close()
        break
    except OSError:
        time.sleep(0.1)
time.sleep(2)
server.kill()
print("crashing on purpose")
sys.exit(1)
"""


async def test_a_crash_looping_gym_is_given_up_after_a_few_restarts(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    """Once killed, each replacement serves a moment and exits: the foreground fleet
    restarts it a bounded number of times (with backoff), then gives it up, says so
    and exits 3, removing its containers."""
    from eog_core.fleet._fleet import CRASH_RESTARTS, RESTART_ATTEMPTS

    marker = tmp_path / "starts.log"
    env = with_entrypoint(
        {
            **fleet_env,
            "EOG_FLEET_RUN_ARGS": f"{fleet_env['EOG_FLEET_RUN_ARGS']} -v {tmp_path}:{tmp_path}",
        },
        CRASH_AFTER_SERVING.format(marker=str(marker)),
    )
    async with foreground(env, "csm") as process:
        assert process.stderr is not None
        [first] = our_containers()
        podman("kill", first)
        code = await asyncio.wait_for(process.wait(), DEADLINE)
        err = (await process.stderr.read()).decode()
    assert code == 3, err
    assert "gym container eog-csm-" in err and "(csm replica 0)" in err
    assert "not restarted again" in err or "could not be restarted" in err, err
    assert "eog-core gyms up: stopping: a gym was given up" in err
    starts = marker.read_text().count("start")
    assert 2 <= starts <= 1 + CRASH_RESTARTS * RESTART_ATTEMPTS, err
    assert our_containers() == []


async def test_down_leaves_a_live_owners_containers_naming_it_unless_forced(
    fleet_env: dict[str, str],
) -> None:
    async with foreground(fleet_env, "csm") as process:
        assert process.stderr is not None
        code, out, err = await eog(fleet_env, "gyms", "down")
        assert code == 3
        assert out.strip() == "removed 0 gym container(s)"
        assert f"pid {process.pid} (eog-core gyms up --foreground --domains csm --json)" in err
        assert "or pass --force" in err and len(err.strip().splitlines()) == 1
        assert len(our_containers()) == 1

        code, out, err = await eog(fleet_env, "gyms", "status", "--json")
        [row] = json.loads(out)["containers"]
        assert (row["owner_state"], row["owner_pid"]) == ("alive", process.pid), err
        assert row["owner_command"].startswith("eog-core gyms up --foreground")

        code, out, err = await eog(fleet_env, "gyms", "down", "--force", "--json")
        assert (code, json.loads(out)) == (0, {"removed": 1, "held": []}), err
        assert await asyncio.wait_for(process.wait(), DEADLINE) == 3  # it gives the gym up
        told = (await process.stderr.read()).decode()
        assert "was removed by another command" in told and "not replaced" in told
        assert "eog-core gyms up: stopping: a gym was given up" in told
    assert our_containers() == []


async def test_status_logs_and_down_find_the_engine_that_started_the_gyms(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    """``gyms up --engine podman``, then bare ``status/logs/down`` with a ``docker`` client
    on the PATH whose daemon does not answer: they look on every engine installed."""
    docker = tmp_path / "bin" / "docker"
    docker.parent.mkdir()
    docker.write_text(
        "#!/bin/sh\n"
        'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2\n'
        "exit 1\n"
    )
    docker.chmod(0o755)
    env = {**fleet_env, "PATH": f"{docker.parent}:{fleet_env['PATH']}"}
    env.pop("EOG_ENGINE")
    code, out, err = await eog(env, "gyms", "up", "--engine", "podman", "--domains", "hr")
    assert code == 0, err
    code, out, err = await eog(env, "gyms", "status", "--json")
    assert code == 0, err
    assert [(r["domain"], r["engine"]) for r in json.loads(out)["containers"]] == [("hr", "podman")]
    code, out, err = await eog(env, "gyms", "logs", "hr")
    assert (code, "serving on" in out) == (0, True), err
    code, out, err = await eog(env, "gyms", "status", "--engine", "docker")
    assert code == 3
    assert "Cannot connect to the Docker daemon" in err and "--engine podman" in err
    code, out, err = await eog(env, "gyms", "down")
    assert (code, out.strip()) == (0, "removed 1 gym container(s)"), err
    assert our_containers() == []
