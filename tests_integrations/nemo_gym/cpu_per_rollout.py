"""CPU per rollout of each process: NeMo Gym's ``SimpleAgent`` + ``EogResourcesServer`` beside
``eog-core run``, on the same work, for docs/performance.md.

Every server is its own process, started the way NeMo Gym starts one (``run_webserver()``
with ``NEMO_GYM_CONFIG_DICT`` and ``NEMO_GYM_CONFIG_PATH`` in its environment, so its
middleware, httptools and uvicorn are the production ones): the agent, our resources
server, a simulated Responses-API model (aiohttp, 100 ms a turn,
the demo task's correct trajectory: 8 turns, 9 tool calls, the
same answers for both) and LocalGym
(``eog-core serve-local``). The driver posts the demo row to the agent's ``/run`` as
NeMo Gym's rollout collection does. Then ``eog-core run --api responses`` does the same
rollouts against the same model and gym. CPU is read from ``/proc/<pid>/stat`` (user +
system) before and after a batch of rollouts, after a warm-up batch; ``eog-core run``'s
own CPU is the difference between a long and a short run, so start-up cancels out.
Reported, not asserted (timings are benchmarks). Run in the ``nemo_gym`` nox virtualenv::

    .nox/nemo_gym/bin/python -m tests_integrations.nemo_gym.cpu_per_rollout
    .nox/nemo_gym/bin/python -m tests_integrations.nemo_gym.cpu_per_rollout --profile eog.prof
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from eog_core import load_task, to_nemo_row
from eog_core.local import demo_paths, demo_tool_snapshot
from tests_integrations._support import FINAL_TEXT, free_port, script

PATHS = demo_paths()
TURNS = 8


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: The demo's correct trajectory in turns (tool-call indices answered together): 8 turns.
TURN_GROUPS = [[0, 1], [2], [3], [4], [5], [6], [7, 8]]


def answer(body: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A Responses-API answer both NeMo Gym (its response model) and ``eog-core run`` accept:
    the turn is the number of tool outputs sent back so far."""
    done = sum(1 for item in body.get("input") or [] if item.get("type") == "function_call_output")
    starts = [group[0] for group in TURN_GROUPS]
    output: list[dict[str, Any]]
    if done in starts:
        turn = starts.index(done)
        output = [
            {
                "type": "function_call",
                "id": f"fc_{i}",
                "call_id": f"call_{i}",
                "name": steps[i]["name"],
                "arguments": json.dumps(steps[i]["arguments"]),
                "status": "completed",
            }
            for i in TURN_GROUPS[turn]
        ]
    else:
        output = [
            {
                "type": "message",
                "id": "msg_final",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
            }
        ]
    return {
        "id": f"resp_{done}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": body.get("model", "demo"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def serve_model(port: int, service_time: float) -> None:
    """The simulated model (aiohttp): ``service_time`` a turn, any number in parallel."""
    from aiohttp import web

    steps = script("solve")

    async def responses(request: web.Request) -> web.Response:
        body = await request.json()
        await asyncio.sleep(service_time)
        return web.json_response(answer(body, steps))

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "demo", "object": "model"}]})

    async def forever() -> None:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/responses", responses)
        app.router.add_get("/v1/models", models)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(forever())


def serve_nemo(kind: str, profile: str | None) -> None:
    """One NeMo Gym server, as ``ng_run`` starts it (the config is in the environment)."""
    if kind == "eog":
        from eog_core.integrations.nemo_gym import EogResourcesServer as server
    elif kind == "null":
        from tests_integrations.nemo_gym.null_server import NullResourcesServer as server
    else:
        from responses_api_agents.simple_agent.app import SimpleAgent as server  # type: ignore[no-redef]
    if profile is None:
        server.run_webserver()
        return
    import cProfile

    profiler = cProfile.Profile(time.process_time)  # CPU, not the wall clock of a shared host
    profiler.enable()
    try:
        server.run_webserver()
    except KeyboardInterrupt:
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(profile)


@contextmanager
def process(argv: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=None if os.environ.get("EOG_BENCH_VERBOSE") else subprocess.DEVNULL,
        text=True,
    )
    try:
        yield child
    finally:
        child.send_signal(
            signal.SIGINT
        )  # uvicorn re-raises it: KeyboardInterrupt, the profile written
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def wait_http(url: str, deadline: float = 60) -> None:
    end = time.monotonic() + deadline
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            if time.monotonic() > end:
                raise RuntimeError(f"{url} did not answer") from None
            time.sleep(0.1)


class Stack:
    """The four processes; ``pids`` by role."""

    def __init__(self, agent_url: str, model_url: str, gym_url: str, pids: dict[str, int]):
        self.agent_url, self.model_url, self.gym_url, self.pids = (
            agent_url,
            model_url,
            gym_url,
            pids,
        )

    def row(self) -> dict[str, Any]:
        row = to_nemo_row(load_task(PATHS.task), {"demo-csm-server": demo_tool_snapshot()})
        row["responses_create_params"]["model"] = "demo"  # a model server would set it
        return row

    def rollouts(self, count: int, concurrency: int) -> None:
        import requests

        row = self.row()

        def one(_: int) -> float:
            answer = requests.post(f"{self.agent_url}/run", json=row, timeout=300)
            if answer.status_code != 200:
                raise RuntimeError(f"/run answered {answer.status_code}: {answer.text[:2000]}")
            reward: float = answer.json()["reward"]
            return reward

        with ThreadPoolExecutor(concurrency) as pool:
            rewards = list(pool.map(one, range(count)))
        if rewards != [1.0] * count:
            raise RuntimeError(f"a rollout did not score 1: {rewards}")

    def cpu(self) -> dict[str, float]:
        return {role: cpu_seconds(pid) for role, pid in self.pids.items()}


@contextmanager
def running_stack(service_time: float, profile: str | None, server: str = "eog") -> Iterator[Stack]:
    ports = {name: free_port() for name in ("head", "model", "eog", "agent", "gym")}
    gym_url = f"http://127.0.0.1:{ports['gym']}"
    config = {
        "head_server": {"host": "127.0.0.1", "port": ports["head"]},
        "dry_run": False,
        "model": {
            "responses_api_models": {"scripted": {"host": "127.0.0.1", "port": ports["model"]}}
        },
        "eog": {
            "resources_servers": {
                "eog": {
                    "host": "127.0.0.1",
                    "port": ports["eog"],
                    "entrypoint": "",
                    "gym_url_pools": {"demo-csm-server": [gym_url]},
                    "seed_sql_root": str(PATHS.directory),
                }
            }
        },
        "agent": {
            "responses_api_agents": {
                "simple_agent": {
                    "host": "127.0.0.1",
                    "port": ports["agent"],
                    "entrypoint": "",
                    "model_server": {"type": "responses_api_models", "name": "model"},
                    "resources_server": {"type": "resources_servers", "name": "eog"},
                }
            }
        },
    }
    me = [sys.executable, "-m", "tests_integrations.nemo_gym.cpu_per_rollout"]
    env = os.environ | {"NEMO_GYM_CONFIG_DICT": json.dumps(config)}
    with ExitStack() as stack:
        gym = stack.enter_context(
            process([sys.executable, "-m", "eog_core", "serve-local", "--port", str(ports["gym"])])
        )
        model = stack.enter_context(
            process(
                [*me, "--serve-model", str(ports["model"]), "--service-time", str(service_time)]
            )
        )
        eog_argv = [*me, "--serve", server] + (["--profile", profile] if profile else [])
        eog = stack.enter_context(process(eog_argv, env | {"NEMO_GYM_CONFIG_PATH": "eog"}))
        agent = stack.enter_context(
            process([*me, "--serve", "agent"], env | {"NEMO_GYM_CONFIG_PATH": "agent"})
        )
        for port in (ports["gym"], ports["eog"], ports["agent"]):
            wait_http(f"http://127.0.0.1:{port}/health")
        assert model.stdout is not None and model.stdout.readline().strip() == "ready"
        pids = {"resources server": eog.pid, "agent": agent.pid, "model": model.pid, "gym": gym.pid}
        yield Stack(
            f"http://127.0.0.1:{ports['agent']}",
            f"http://127.0.0.1:{ports['model']}/v1",
            gym_url,
            pids,
        )


def eog_core_run(stack: Stack, repeats: int, concurrency: int, out: Path) -> dict[str, float]:
    """CPU of the ``eog-core run`` process and of the model and gym during it."""
    before = stack.cpu()
    started = os.times()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "eog_core",
            "run",
            str(PATHS.task),
            "--base-url",
            stack.model_url,
            "--api",
            "responses",
            "--model",
            "demo",
            "--gym",
            f"demo-csm-server={stack.gym_url}",
            "--seed-root",
            str(PATHS.directory),
            "--repeats",
            str(repeats),
            "--concurrency",
            str(concurrency),
            "--out",
            str(out),
            "-q",
        ],
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )
    ended = os.times()
    after = stack.cpu()
    run_cpu = (ended.children_user + ended.children_system) - (
        started.children_user + started.children_system
    )
    return {"eog-core run": run_cpu} | {k: after[k] - before[k] for k in ("model", "gym")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--service-time", type=float, default=0.1)
    parser.add_argument("--profile", help="cProfile the resources server into this file")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--serve", choices=["eog", "null", "agent"], help=argparse.SUPPRESS)
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_nemo(args.serve, args.profile)
        return
    if args.serve_model is not None:
        serve_model(args.serve_model, args.service_time)
        return

    n, c = args.rollouts, args.concurrency
    figures: dict[str, Any] = {"rollouts": n, "concurrency": c, "service_time_s": args.service_time}
    for server in ("eog", "null"):
        with running_stack(args.service_time, args.profile, server) as stack:
            figures[server] = nemo_gym_cpu(stack, n, c)
            if server == "eog":
                figures["eog-core run"] = run_cpu(stack, n, c)
    print(
        f"{n} demo rollouts at concurrency {c}, model {1000 * args.service_time:g} ms a turn; "
        "CPU ms per rollout of each process:"
    )
    for name, title in TITLES.items():
        print(f"  {title}")
        for role, value in figures[name].items():
            print(f"    {role:<18} {value:7.1f}")
    ours, floor, run = (
        figures["eog"]["resources server"],
        figures["null"]["resources server"],
        figures["eog-core run"]["eog-core run"],
    )
    print(
        f"  resources server / eog-core run: {ours / run:.2f}x (target <= 1.00x); "
        f"NeMo Gym's framework alone (the no-work server) / eog-core run: {floor / run:.2f}x; "
        f"ours above that floor: {ours - floor:.1f} ms"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


TITLES = {
    "eog": "NeMo Gym SimpleAgent + EogResourcesServer:",
    "null": "the same with a resources server that does no work (NeMo Gym's framework alone):",
    "eog-core run": "eog-core run --api responses, same model and gym:",
}


def nemo_gym_cpu(stack: Stack, n: int, c: int) -> dict[str, float]:
    """CPU ms per rollout of each process over ``n`` rollouts at concurrency ``c``, after a
    warm-up batch (the pools, the MCP session, the imports)."""
    stack.rollouts(c, c)
    before = stack.cpu()
    stack.rollouts(n, c)
    after = stack.cpu()
    return {role: round(1000 * (after[role] - before[role]) / n, 1) for role in before}


def run_cpu(stack: Stack, n: int, c: int) -> dict[str, float]:
    """The same for ``eog-core run``: a run of ``n + c`` rollouts less one of ``c``."""
    with tempfile.TemporaryDirectory() as tmp:
        short = eog_core_run(stack, c, c, Path(tmp) / "short")
        long = eog_core_run(stack, n + c, c, Path(tmp) / "long")
    return {role: round(1000 * (long[role] - short[role]) / n, 1) for role in long}


if __name__ == "__main__":
    main()
