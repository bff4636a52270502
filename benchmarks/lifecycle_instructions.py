"""Client instructions per lifecycle and per tool call, counted by callgrind, against the floor.

``python benchmarks/lifecycle_instructions.py [--runs 3] [--lifecycles 16] [--calls 40]``

CPU time on a shared 2-core machine moves by about +-3 points from run to run;
an instruction count does not. This script starts LocalGym (``eog-core
serve-local``) in its own process, then, for each run and each client, one
client process under ``valgrind --tool=callgrind --instr-atstart=no``:

- ``floor``: raw pooled aiohttp (``lifecycle_vs_floor.Floor``: one MCP session,
  the same 8 requests per lifecycle, no checks beyond decoding the answers);
- ``floor_lean``: the raw floor on the new framing's pooled client: the same 8 requests
  sent raw with ``LeanTransport`` (``lifecycle_vs_floor.TransportFloor``), as ``floor``
  sends them raw with aiohttp's pooled client;
- ``floor_bare``: the same on bare asyncio protocols reading answers with
  ``eog_core._http1`` (``lifecycle_vs_floor.LeanFloor``: no timeouts, retries, pool
  bounds or typed errors): the least any client on the framing could run;
- ``floor_scored``: ``floor_lean`` that also scores the 5 answers with
  ``score_database_state`` (STRICT, no verdict, no records): the least any client that
  verifies on the new framing could run;
- ``gym_client``: the same 8 requests through ``GymClient`` (shared MCP session);
- ``session``: ``TaskSession`` through a ``GymDirectory`` held open (seed, one
  ``call_tool``, ``verify`` with 5 ``database_state`` verifiers, STRICT, close), on the
  default transport (the pool's ``LeanTransport``);
- ``session_aiohttp``: the same sessions with ``transport=AiohttpTransport()`` (the
  default before issue 30);
- ``session_lean``: the same sessions on a ``LeanTransport`` of their own.

Start-up, imports, connections and the warm-up run uninstrumented. The client
then asks callgrind (client requests, through a 10-line C helper built with
``cc`` against valgrind's ``callgrind.h``) to count from zero around each of
four windows: N lifecycles, 2N lifecycles, M tool calls, 2M tool calls, and to
dump the count after each. Per lifecycle is (count(2N) - count(N)) / N, per
tool call (count(2M) - count(M)) / M: whatever a window costs once cancels.
The figures are guest instructions of the client process only (user space; the
gym's are not counted). ``--keep DIR`` keeps the dumps for ``callgrind_annotate``.

Needs ``valgrind`` (Debian: ``apt-get install valgrind``, which ships the
headers) and a C compiler. Exit codes: 0 figures printed, 3 a tool is missing
or a client run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gym.lifecycle_task import QUERIES, TOOL, five_verifier_task  # noqa: E402

from bench_gym_client import wait_for_port  # noqa: E402
from eog_core import STRICT, Task  # noqa: E402
from eog_core.gym import (  # noqa: E402
    AiohttpTransport,
    GymClient,
    GymDirectory,
    LeanTransport,
    TaskSession,
    Transport,
    _transport,
    new_database_id,
)
from eog_core.local import DEMO_SERVER_NAME, read_demo_seed  # noqa: E402
from eog_core.tasks import DatabaseStateCheck, DatabaseStateVerifier  # noqa: E402
from eog_core.verify import SqlOutcome, score_database_state  # noqa: E402
from lifecycle_vs_floor import Floor, LeanFloor, Ours, TransportFloor, free_port  # noqa: E402

KINDS = (
    "floor",
    "floor_lean",
    "floor_bare",
    "floor_scored",
    "gym_client",
    "session",
    "session_aiohttp",
    "session_lean",
)
WARM_UP = 24
KEEPALIVE = 600.0
"""Seconds a pooled connection may idle, for both clients. Under callgrind a client runs
about 50 times slower: a window of tool calls leaves the lifecycle's other connections
idle for longer than the pool's 4 s (aiohttp's 15 s), which never happens at full speed,
and replacing them would count as the next window's work."""
REPEATS = 3
"""Each window is counted this many times in a run; the least count is kept: what moves a
count is work that comes on top (a collection of the cyclic GC, a pooled connection
replaced), never less work."""
HELPER_C = """
#include <valgrind/callgrind.h>
int eog_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
void eog_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void eog_zero(void) { CALLGRIND_ZERO_STATS; }
void eog_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void eog_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
Step = Callable[[], Awaitable[None]]
Mark = Callable[[int], None]
"""Called as a lifecycle enters each of its phases (0-3) and as it ends (4)."""
PHASES = ("seed / TaskSession.start", "tool call", "5 queries / verify", "delete / close")


def _unmarked(phase: int) -> None:
    pass


# -- the client process (under callgrind) -----------------------------------------------


class FloorClient:
    configs: tuple[DatabaseStateCheck, ...] = ()
    """The verifiers' checks the floor scores its answers with (``floor_scored``), or none."""

    def __init__(self, url: str, task: Task, seed: str) -> None:
        self.floor = Floor(url, task, seed, keepalive=KEEPALIVE)
        self.database_id = new_database_id()

    async def open(self) -> None:
        await self.floor.open()
        await self.floor.seed_database(self.database_id)

    async def close(self) -> None:
        await self.floor.delete_database(self.database_id)
        await self.floor.close()

    async def lifecycle(self, mark: Mark = _unmarked) -> None:
        floor, database_id = self.floor, new_database_id()
        mark(0)
        await floor.seed_database(database_id)
        mark(1)
        await floor.tool_call(database_id)
        mark(2)
        answers = await asyncio.gather(*(floor.query(database_id, query) for query in QUERIES))
        if self.configs:
            self.score(answers)
        mark(3)
        await floor.delete_database(database_id)
        mark(4)

    def score(self, answers: list[Any]) -> None:
        """Score each answer as its verifier would (``floor_scored`` only)."""
        results = [
            score_database_state(config, SqlOutcome.ok(answer), STRICT)
            for config, answer in zip(self.configs, answers, strict=True)
        ]
        assert all("error" not in result for result in results), results

    async def tool_call(self) -> None:
        await self.floor.tool_call(self.database_id)


class BareFloorClient(FloorClient):
    """The floor's 8 requests on bare protocols over the new framing (``LeanFloor``)."""

    def __init__(self, url: str, task: Task, seed: str) -> None:
        self.floor = LeanFloor(url, task, seed, keepalive=KEEPALIVE)
        self.database_id = new_database_id()


class LeanFloorClient(FloorClient):
    """The floor's 8 requests sent raw with ``LeanTransport`` (``TransportFloor``)."""

    def __init__(self, url: str, task: Task, seed: str) -> None:
        self.floor = TransportFloor(url, task, seed, keepalive=KEEPALIVE)
        self.database_id = new_database_id()


class ScoredFloorClient(LeanFloorClient):
    """``floor_lean`` that also scores the 5 answers (``score_database_state``, STRICT): the
    least any client that verifies on the new framing could run."""

    def __init__(self, url: str, task: Task, seed: str) -> None:
        super().__init__(url, task, seed)
        self.configs = tuple(
            verifier.validation_config
            for verifier in task.verifiers
            if isinstance(verifier, DatabaseStateVerifier)
        )


class GymClientClient:
    """The floor's 8 requests through ``GymClient`` on the loop's shared MCP session."""

    def __init__(self, url: str, task: Task, seed: str) -> None:
        self.seed, self.context = seed, task.gym_servers[0].context
        self.directory = GymDirectory({DEMO_SERVER_NAME: url})  # owns the loop's pool
        self.client = GymClient(url, name=DEMO_SERVER_NAME, share_mcp=True)
        self.database_id = ""

    async def open(self) -> None:
        await self.directory.__aenter__()
        self.database_id = await self.client.seed_database(self.seed)

    async def close(self) -> None:
        await self.client.delete_database(self.database_id)
        await self.client.aclose()
        await self.directory.aclose()

    async def lifecycle(self, mark: Mark = _unmarked) -> None:
        client, context = self.client, self.context
        mark(0)
        database_id = await client.seed_database(self.seed, database_id=new_database_id())
        mark(1)
        result = await client.call_tool(*TOOL, database_id=database_id, context=context)
        mark(2)
        assert not result.is_error, result.text
        outcomes = await asyncio.gather(
            *(
                client.run_sql(query, database_id=database_id, context=context, read_only=True)
                for query in QUERIES
            )
        )
        assert all(outcome.success for outcome in outcomes), outcomes
        mark(3)
        await client.delete_database(database_id)
        mark(4)

    async def tool_call(self) -> None:
        result = await self.client.call_tool(
            *TOOL, database_id=self.database_id, context=self.context
        )
        assert not result.is_error, result.text


class SessionClient:
    """``TaskSession`` through a directory held open (lifecycle_vs_floor's ``Ours``)."""

    def __init__(self, url: str, task: Task, seed: str) -> None:
        self.ours = Ours(url, task, seed)
        self.task, self.seed = task, seed
        self.stack = contextlib.AsyncExitStack()
        self.session: TaskSession | None = None

    async def open(self) -> None:
        await self.ours.open()
        self.session = await self.stack.enter_async_context(
            TaskSession.start(
                self.task, directory=self.ours.directory, seed_sql={DEMO_SERVER_NAME: self.seed}
            )
        )

    async def close(self) -> None:
        await self.stack.aclose()
        await self.ours.close()

    async def lifecycle(self, mark: Mark = _unmarked) -> None:
        await self._lifecycle(mark, None)

    async def _lifecycle(self, mark: Mark, transport: Transport | None) -> None:
        ours = self.ours
        start = TaskSession.start(
            self.task,
            directory=ours.directory,
            seed_sql=ours.seed,
            janitor=ours.janitor,
            transport=transport,
        )
        mark(0)
        session = await start.__aenter__()  # as ``async with`` (lifecycle_vs_floor), marked
        try:
            mark(1)
            result = await session.call_tool(*TOOL)
            mark(2)
            assert not result.is_error, result.text
            verdict = await session.verify(policy=STRICT)
            assert verdict.num_scored == 5 and verdict.evaluation_completed
            mark(3)
        finally:
            await start.__aexit__(None, None, None)
        mark(4)

    async def tool_call(self) -> None:
        assert self.session is not None
        result = await self.session.call_tool(*TOOL)
        assert not result.is_error, result.text

    def clear(self) -> None:
        if self.session is not None:
            self.session.trajectory.clear()


class TransportSessionClient(SessionClient):
    """``SessionClient`` whose sessions send with a transport of their own."""

    def __init__(self, url: str, task: Task, seed: str, transport: Transport) -> None:
        super().__init__(url, task, seed)
        self.transport = transport

    async def open(self) -> None:
        await self.ours.open()
        self.session = await self.stack.enter_async_context(
            TaskSession.start(
                self.task,
                directory=self.ours.directory,
                seed_sql={DEMO_SERVER_NAME: self.seed},
                transport=self.transport,
            )
        )

    async def close(self) -> None:
        await super().close()
        await self.transport.aclose()

    async def lifecycle(self, mark: Mark = _unmarked) -> None:
        await self._lifecycle(mark, self.transport)


def aiohttp_session(url: str, task: Task, seed: str) -> TransportSessionClient:
    """``TaskSession`` with ``transport=AiohttpTransport()`` (the default before issue 30)."""
    return TransportSessionClient(url, task, seed, AiohttpTransport())


def lean_session(url: str, task: Task, seed: str) -> TransportSessionClient:
    """``TaskSession`` on a ``LeanTransport`` of its own (the gateway's way)."""
    return TransportSessionClient(url, task, seed, LeanTransport(keepalive=KEEPALIVE))


async def run_phases(
    client: FloorClient | GymClientClient | SessionClient, callgrind: Any, lifecycles: int
) -> None:
    """Per phase, ``lifecycles`` lifecycles counted only while they are in that phase."""
    for phase in range(len(PHASES)):

        def mark(entered: int, phase: int = phase) -> None:
            if entered in (phase, phase + 1):
                callgrind.eog_toggle()

        gc.collect()
        callgrind.eog_zero()
        callgrind.eog_toggle()  # not counting, until the phase begins
        for _ in range(lifecycles):
            await client.lifecycle(mark)
        callgrind.eog_toggle()
        callgrind.eog_dump(f"phase {phase}".encode())


async def run_client(
    url: str, kind: str, lifecycles: int, calls: int, helper: str, mode: str
) -> None:
    callgrind = ctypes.CDLL(helper)
    if not callgrind.eog_on_valgrind():
        raise SystemExit("lifecycle_instructions: the client must run under valgrind")
    _transport.KEEPALIVE_SECONDS = KEEPALIVE  # before the pool's aiohttp session is made
    task, seed = five_verifier_task(), read_demo_seed()
    client = {
        "floor": FloorClient,
        "floor_lean": LeanFloorClient,
        "floor_bare": BareFloorClient,
        "floor_scored": ScoredFloorClient,
        "gym_client": GymClientClient,
        "session": SessionClient,
        "session_aiohttp": aiohttp_session,
        "session_lean": lean_session,
    }[kind](url, task, seed)
    await client.open()
    pool = _transport._POOLS.get(asyncio.get_running_loop())
    if pool is not None:  # the default transport's connections, made with the pool
        pool.lean.keepalive = KEEPALIVE
    try:
        for _ in range(WARM_UP):
            await client.lifecycle()
            await client.tool_call()
        callgrind.eog_start()
        if mode == "phases":
            await run_phases(client, callgrind, lifecycles)
            return
        windows = [("lifecycle", client.lifecycle, n) for n in (lifecycles, 2 * lifecycles)]
        windows += [("call", client.tool_call, n) for n in (calls, 2 * calls)]
        for repeat in range(REPEATS):
            for name, step, count in windows:
                if isinstance(client, SessionClient):
                    client.clear()
                gc.collect()
                callgrind.eog_zero()
                for _ in range(count):
                    await step()
                callgrind.eog_dump(f"{name} {count} #{repeat}".encode())
    finally:
        await client.close()


# -- the driver --------------------------------------------------------------------------


def fail(message: str) -> NoReturn:
    print(f"lifecycle_instructions: {message}", file=sys.stderr)
    raise SystemExit(3)


def build_helper(directory: Path) -> Path:
    source, library = directory / "callgrind_requests.c", directory / "callgrind_requests.so"
    source.write_text(HELPER_C)
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        fail("no C compiler (cc) on PATH: needed for callgrind's client requests")
    done = subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["?"])[0]
        fail(f"could not build the callgrind helper (valgrind headers?): {first}")
    return library


def read_counts(out_prefix: Path) -> dict[str, int]:
    """``{"lifecycle 16": instructions, ...}`` from the dumps the client requested: the
    least count of each window's repeats."""
    counts: dict[str, int] = {}
    for dump in sorted(out_prefix.parent.glob(out_prefix.name + ".*")):
        label, total = None, None
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("desc: Trigger: Client Request: "):
                label = line.removeprefix("desc: Trigger: Client Request: ").strip()
            elif line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
        if label is not None and total is not None:
            window = label.partition(" #")[0]
            counts[window] = min(total, counts.get(window, total))
    return counts


def spawn_gym() -> tuple[subprocess.Popen[bytes], str]:
    """LocalGym in its own process, ahead of other work on the machine when this may raise
    its priority (root): a gym slowed by other jobs makes the client's event loop wake more
    often, which is work the count would show."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eog_core", "serve-local", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_raise_priority,
    )
    return process, wait_for_port(process, port)


def _raise_priority() -> None:
    with contextlib.suppress(OSError):
        os.nice(-10)


def count(
    url: str,
    kind: str,
    args: argparse.Namespace,
    work: Path,
    run: int,
    mode: str,
    wanted: list[str],
) -> dict[str, int]:
    """One client process under callgrind: the counts of the windows it dumped."""
    prefix = work / f"callgrind.{kind}.{mode}.{run}"
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--dump-instr=no",
        f"--callgrind-out-file={prefix}",
        sys.executable,
        __file__,
        "client",
        url,
        kind,
        str(args.lifecycles),
        str(args.calls),
        str(work / "callgrind_requests.so"),
        mode,
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    counts = read_counts(prefix)
    if done.returncode != 0 or any(label not in counts for label in wanted):
        lines = done.stderr.strip().splitlines()
        tail = ([line for line in lines if not line.startswith("==")] or lines or ["no output"])[-1]
        fail(f"the {kind} client run failed (exit {done.returncode}): {tail}")
    return counts


def measure(
    url: str, kind: str, args: argparse.Namespace, work: Path, run: int
) -> dict[str, float]:
    n, m = args.lifecycles, args.calls
    wanted = [f"lifecycle {n}", f"lifecycle {2 * n}", f"call {m}", f"call {2 * m}"]
    counts = count(url, kind, args, work, run, "windows", wanted)
    return {
        "lifecycle": (counts[wanted[1]] - counts[wanted[0]]) / n,
        "call": (counts[wanted[3]] - counts[wanted[2]]) / m,
    }


def phases(url: str, kinds: list[str], args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Instructions per lifecycle in each phase, per client, with each one's excess over the floor."""
    wanted = [f"phase {phase}" for phase in range(len(PHASES))]
    per_kind = {
        kind: [
            count(url, kind, args, work, 0, "phases", wanted)[label] / args.lifecycles
            for label in wanted
        ]
        for kind in kinds
    }
    print(f"{'phase':<26}" + "".join(f"{kind:>24}" for kind in kinds))
    for index, name in enumerate((*PHASES, "whole lifecycle")):
        cells = [
            sum(per_kind[kind]) if index == len(PHASES) else per_kind[kind][index] for kind in kinds
        ]
        print(
            f"{name:<26}" + "".join(f"{cell:>13,.0f} ({cell - cells[0]:+8,.0f})" for cell in cells),
            flush=True,
        )
    return per_kind


TARGETS = {
    ("session", "lifecycle", "floor"): 0.70,  # issue 30: the default at <= 0.70x aiohttp's floor
    ("session", "lifecycle", "floor_lean"): 1.08,  # and within 1.08x of the new framing's floor
    ("session_aiohttp", "lifecycle", "floor"): 1.15,
    ("session_aiohttp", "call", "floor"): 1.05,
}
FLOORS = ("floor", "floor_lean", "floor_bare", "floor_scored")


def _verdict(ratios: list[float], median: float, target: float) -> str:
    over = sum(ratio > target for ratio in ratios)
    if not over:
        return "met"
    if median <= target:
        return f"met in the median, {over} of {len(ratios)} runs over"
    return "not met"


def report(results: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Print, per figure, each client's median and spread and its ratio to each floor run."""
    summary: dict[str, Any] = {}
    for figure in ("lifecycle", "call"):
        for kind in results:
            values = [run[figure] for run in results[kind]]
            entry: dict[str, Any] = {
                "median": statistics.median(values),
                "min": min(values),
                "max": max(values),
            }
            spread = (entry["max"] - entry["min"]) / entry["median"] * 100
            line = (
                f"{kind:>15} per {figure:<9}: {entry['median']:>11,.0f} instructions "
                f"(runs {entry['min']:,.0f}-{entry['max']:,.0f}, spread {spread:.2f}%)"
            )
            for floor_kind in FLOORS:
                if floor_kind not in results or kind == floor_kind or kind in FLOORS[:1]:
                    continue
                floor = [run[figure] for run in results[floor_kind]]
                ratios = [v / f for v, f in zip(values, floor, strict=True)]
                ratio = statistics.median(ratios)
                entry[f"ratio_{floor_kind}"] = ratio
                entry[f"ratio_{floor_kind}_runs"] = ratios
                line += f"; {ratio:.3f}x {floor_kind}"
                target = TARGETS.get((kind, figure, floor_kind))
                if target is not None:
                    line += f" (target <= {target}: {_verdict(ratios, ratio, target)})"
            summary[f"{kind} per {figure}"] = entry
            print(line, flush=True)
    return summary


def main() -> None:
    if len(sys.argv) == 8 and sys.argv[1] == "client":
        _, _, url, kind, lifecycles, calls, helper, mode = sys.argv
        asyncio.run(run_client(url, kind, int(lifecycles), int(calls), helper, mode))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lifecycles", type=int, default=16, help="N: windows of N and 2N")
    parser.add_argument("--calls", type=int, default=40, help="M: windows of M and 2M tool calls")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--keep", type=Path, help="keep the callgrind dumps in this directory")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--phases",
        action="store_true",
        help="instead: one run of N lifecycles per client, counted per phase",
    )
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if "floor" not in kinds or not set(kinds) <= set(KINDS):
        parser.error(f"--kinds takes floor and any of {', '.join(KINDS[1:])}")
    if shutil.which("valgrind") is None:
        fail("valgrind is not on PATH (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="eog-callgrind-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        build_helper(work)
        process, url = spawn_gym()
        try:
            if args.phases:
                by_phase = phases(url, kinds, args, work)
                if args.json:
                    args.json.write_text(json.dumps({"phases": PHASES, "runs": by_phase}, indent=2))
                return
            results: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
            for run in range(args.runs):
                for kind in kinds:
                    results[kind].append(measure(url, kind, args, work, run))
                    print(f"run {run + 1} {kind}: {results[kind][-1]}", file=sys.stderr, flush=True)
        finally:
            process.terminate()
            process.wait(timeout=10)
    summary = report(results)
    if args.json:
        args.json.write_text(json.dumps({"runs": results, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
