"""``eog-core run`` throughput against a simulated model, beside upstream's way of talking to gyms.

A scripted OpenAI-compatible model (``tests/run/scripted_model.py``) answers every
turn after a fixed service time (default 100 ms) with unbounded parallelism, in
its own process; the demo task's correct trajectory takes 8 turns. Demo gyms
(``eog-core serve-local``) run in their own processes. For each concurrency C:

* **ours**: ``run_evaluation`` (seed, loop, strict + parity verification,
  delete, ``rollouts.jsonl`` and ``upstream/`` written), rollouts/s against the
  ideal C / (turns x service time);
* **per-request**: the same workload through a loop that talks to the gyms the
  way upstream's harness does: a new HTTP client (``httpx.AsyncClient``) per
  request, an MCP handshake and ``tools/list`` per rollout, verifiers one after
  another (parity only). The model side is the same pooled client in both, so
  the ratio is the gym side's.

Rounds alternate ours / per-request and medians are reported. Then client
memory per in-flight rollout (tracemalloc, model and gyms in other processes).

    python benchmarks/bench_run.py                      # C = 8, 32, 128; 2 gym processes
    python benchmarks/bench_run.py --concurrency 8 --rounds 1 --json bench_run.json

Not collected by pytest (no test functions): timings are benchmarks, not tests.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.run.scripted_model import ScriptedModel  # noqa: E402

from eog_core import Task, load_task  # noqa: E402
from eog_core.gym import GymDirectory  # noqa: E402
from eog_core.local import DEMO_SERVER_NAME, demo_paths, read_demo_seed  # noqa: E402
from eog_core.run import EvaluationPlan, ModelClient, ModelSettings, RolloutOptions, run_evaluation  # noqa: E402
from eog_core.tasks import ToolSpec  # noqa: E402

TURNS = 8
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def serve_model(service_time: float) -> None:
    async def forever() -> None:
        async with ScriptedModel(service_time=service_time, keep_bodies=False) as model:
            print(model.base_url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(forever())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spawn_model(service_time: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-model", str(service_time)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def spawn_gym() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the gym did not start")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_tasks(count: int) -> list[Task]:
    demo = load_task(demo_paths().task)
    return [attrs.evolve(demo, task_id=f"bench_{i}") for i in range(count)]


def settings(model_url: str) -> ModelSettings:
    return ModelSettings(model="demo-correct", base_url=model_url, timeout=120)


def _epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp).timestamp()


def breakdown(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean ms per rollout: waiting for the model, for tool calls, before the first turn
    (seed, connect), after the last (verify, delete), and the rest (the loop itself)."""
    parts: dict[str, list[float]] = {k: [] for k in ("duration", "model", "tools", "setup", "tail")}
    for r in records:
        turns = r["turns"]
        parts["duration"].append(r["duration_ms"])
        parts["model"].append(r["model_latency_ms"])
        parts["tools"].append(r["tool_latency_ms"])
        parts["setup"].append(1000 * (_epoch(turns[0]["started_at"]) - _epoch(r["started_at"])))
        parts["tail"].append(1000 * (_epoch(r["finished_at"]) - _epoch(turns[-1]["finished_at"])))
    means = {k: statistics.fmean(v) for k, v in parts.items()}
    means["loop"] = means["duration"] - sum(means[k] for k in ("model", "tools", "setup", "tail"))
    return {k: round(v, 1) for k, v in means.items()}


async def ours(
    concurrency: int, tasks: list[Task], gyms: list[str], model_url: str
) -> tuple[float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        report = await run_evaluation(
            tasks,
            settings(model_url),
            out,
            plan=EvaluationPlan(concurrency=concurrency),
            directory=GymDirectory({DEMO_SERVER_NAME: gyms}),
            options=RolloutOptions.build(seed_root=demo_paths().directory),
        )
        wall = time.perf_counter() - started
    assert report.all_evaluated and all(r["success"] for r in report.records), "a rollout failed"
    return wall, breakdown(report.records)


async def _post(
    url: str, body: dict[str, Any], headers: dict[str, str] | None = None, method: str = "POST"
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as http:  # a new client per request, as upstream
        response = await http.request(method, url, json=body, headers={**ACCEPT, **(headers or {})})
        response.raise_for_status()
        return response


async def _per_request_rollout(task: Task, gym: str, client: ModelClient, seed: str) -> None:
    database = f"db_{uuid.uuid4().hex[:12]}"
    await _post(
        gym + "/api/seed-database",
        {
            "database_id": database,
            "name": task.task_id or "",
            "description": "",
            "sql_content": seed,
        },
    )
    try:
        init = await _post(
            gym + "/mcp",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {"tools": {}},
                    "clientInfo": {"name": "per-request", "version": "1"},
                },
            },
        )
        session = {"mcp-session-id": init.headers["mcp-session-id"]}
        await _post(
            gym + "/mcp",
            {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}},
            session,
        )
        listed = await _post(
            gym + "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, session
        )
        selected = set(task.selected_tools or ())
        tools = [
            ToolSpec.from_mcp(t).to_chat_tool()
            for t in listed.json()["result"]["tools"]
            if not selected or t["name"] in selected
        ]
        context = dict(task.gym_servers[0].context)
        call_headers = {**session, "x-database-id": database, **context}
        conversation = client.conversation(task.system_prompt, task.user_prompt, tools)
        for turn in range(1, 51):
            reply = await client.ask(conversation, turn=turn)
            conversation.add_turn(reply.turn)
            if not reply.turn.tool_calls:
                break
            for number, call in enumerate(reply.turn.tool_calls):
                answer = await _post(
                    gym + "/mcp",
                    {
                        "jsonrpc": "2.0",
                        "id": 10 * turn + number,
                        "method": "tools/call",
                        "params": {"name": call.name, "arguments": json.loads(call.arguments)},
                    },
                    call_headers,
                )
                conversation.add_observation(call, json.dumps(answer.json().get("result", {})))
        for verifier in task.verifiers:  # one after another, a new client each
            query = verifier.validation_config.query  # type: ignore[union-attr]
            await _post(
                gym + "/api/sql-runner",
                {"query": query, "database_id": database},
                {"x-database-id": database},
            )
    finally:
        await _post(gym + "/api/delete-database", {"database_id": database}, method="DELETE")


async def per_request(
    concurrency: int, tasks: list[Task], gyms: list[str], model_url: str
) -> float:
    seed = read_demo_seed()
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, task: Task) -> None:
        async with gate:
            await _per_request_rollout(task, gyms[index % len(gyms)], client, seed)

    async with ModelClient(settings(model_url)) as client:
        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for index, task in enumerate(tasks):
                group.create_task(one(index, task))
        return time.perf_counter() - started


async def memory_per_rollout(concurrency: int, gyms: list[str], model_url: str) -> float:
    """Traced client memory with ``concurrency`` rollouts parked in a model call, per rollout."""
    tasks = bench_tasks(concurrency)
    with tempfile.TemporaryDirectory() as out:
        tracemalloc.start()
        baseline = tracemalloc.get_traced_memory()[0]
        run = asyncio.ensure_future(
            run_evaluation(
                tasks,
                settings(model_url),
                out,
                plan=EvaluationPlan(concurrency=concurrency),
                directory=GymDirectory({DEMO_SERVER_NAME: gyms}),
                options=RolloutOptions.build(seed_root=demo_paths().directory),
            )
        )
        samples = []
        while not run.done():
            await asyncio.sleep(0.05)
            samples.append(tracemalloc.get_traced_memory()[0])
        await run
        tracemalloc.stop()
    return (statistics.median(sorted(samples)[len(samples) // 2 :]) - baseline) / concurrency


async def main(args: argparse.Namespace) -> dict[str, Any]:
    model_process, model_url = spawn_model(args.service_time)
    gym_processes = [spawn_gym() for _ in range(args.gyms)]
    gyms = [url for _, url in gym_processes]
    pids: dict[str, Any] = {"model": model_process.pid, "gyms": [p.pid for p, _ in gym_processes]}
    results: dict[str, Any] = {
        "service_time": args.service_time,
        "turns": TURNS,
        "gym_processes": args.gyms,
        "levels": [],
    }
    try:
        await ours(4, bench_tasks(8), gyms, model_url)  # warm-up: imports, pools, first seeds
        for concurrency in args.concurrency:
            count = concurrency * args.waves
            ideal = concurrency / (TURNS * args.service_time)
            level: dict[str, Any] = {
                "concurrency": concurrency,
                "rollouts": count,
                "ideal_per_s": ideal,
                "ours_s": [],
                "per_request_s": [],
                "client_cpu_ms_per_rollout": [],
                "gym_cpu_ms_per_rollout": [],
                "model_cpu_ms_per_rollout": [],
                "load_average": [],
            }
            for _ in range(args.rounds):
                cpu, gym_cpu = time.process_time(), sum(map(cpu_seconds, pids["gyms"]))
                model_cpu = cpu_seconds(pids["model"])
                wall, parts = await ours(concurrency, bench_tasks(count), gyms, model_url)
                level["ours_s"].append(wall)
                level.setdefault("breakdown_ms", []).append(parts)
                level["client_cpu_ms_per_rollout"].append(
                    1000 * (time.process_time() - cpu) / count
                )
                level["gym_cpu_ms_per_rollout"].append(
                    1000 * (sum(map(cpu_seconds, pids["gyms"])) - gym_cpu) / count
                )
                level["model_cpu_ms_per_rollout"].append(
                    1000 * (cpu_seconds(pids["model"]) - model_cpu) / count
                )
                level["load_average"].append(os.getloadavg()[0])
                if not args.skip_per_request:
                    level["per_request_rollouts"] = slow = concurrency * args.per_request_waves
                    level["per_request_s"].append(
                        await per_request(concurrency, bench_tasks(slow), gyms, model_url)
                    )
            ours_rate = count / statistics.median(level["ours_s"])
            level["ours_per_s"] = ours_rate
            level["ours_of_ideal"] = ours_rate / ideal
            cpu_per_rollout = (
                sum(
                    statistics.median(level[f"{part}_cpu_ms_per_rollout"])
                    for part in ("client", "gym", "model")
                )
                / 1000
            )
            level["cpu_ceiling_per_s_per_core"] = 1 / cpu_per_rollout
            if level["per_request_s"]:
                level["per_request_per_s"] = level["per_request_rollouts"] / statistics.median(
                    level["per_request_s"]
                )
                level["ours_over_per_request"] = ours_rate / level["per_request_per_s"]
            results["levels"].append(level)
            print(
                json.dumps(
                    {k: v for k, v in level.items() if not isinstance(v, list)}
                    | {"breakdown_ms": level["breakdown_ms"]}
                ),
                flush=True,
            )
        if args.memory:
            results["memory_bytes_per_in_flight_rollout"] = await memory_per_rollout(
                args.memory, gyms, model_url
            )
            print(
                json.dumps(
                    {
                        "memory_concurrency": args.memory,
                        "bytes_per_rollout": results["memory_bytes_per_in_flight_rollout"],
                    }
                ),
                flush=True,
            )
    finally:
        processes: list[subprocess.Popen[Any]] = [model_process, *(p for p, _ in gym_processes)]
        for process in processes:
            process.kill()
            process.wait()
    return results


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve-model", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--service-time", type=float, default=0.1)
    parser.add_argument("--waves", type=int, default=4, help="rollouts per level = C x waves")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--per-request-waves",
        type=int,
        default=1,
        help="rollouts of the (slow) per-request loop = C x this",
    )
    parser.add_argument("--gyms", type=int, default=2, help="demo gym processes (replicas)")
    parser.add_argument(
        "--memory", type=int, default=64, help="concurrency of the memory run (0: skip)"
    )
    parser.add_argument("--skip-per-request", action="store_true")
    parser.add_argument("--json", type=Path, help="write every figure here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    options = parse(sys.argv[1:])
    if options.serve_model is not None:
        serve_model(options.serve_model)
    else:
        figures = asyncio.run(main(options))
        if options.json:
            options.json.write_text(json.dumps(figures, indent=2))
