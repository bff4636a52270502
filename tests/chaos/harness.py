"""The chaos run: many task sessions against two gyms behind fault proxies, one gym killed.

Topology: ``demo-csm-server`` runs in its own process (``eog-core serve-local``,
killed and restarted on its port during the run) and ``chaos-notes`` in this
process (its MCP sessions expired during the run). Each gym has two replicas in
the directory: a :class:`FaultProxy` in front of it (faults at ``fault_rate``)
and the gym itself. Every session seeds both gyms, makes several tool calls,
verifies and closes, bounded by a deadline. The verdict comes from the gyms'
ledgers, not from what the client believed: after the janitor drains, no
database may be left, no tool call may have executed twice, nothing but
``EogError`` may have escaped, and no session may have hung.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import traceback
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import attrs

from eog_core import EogError
from eog_core.gym import GymDirectory, Janitor, TaskSession, Timeouts
from eog_core.local import (
    Fault,
    FaultProxy,
    GymProcess,
    Ledger,
    LocalGym,
    ToolContext,
    ToolError,
    load_demo_task,
    load_demo_trajectory,
    read_demo_seed,
)
from eog_core.tasks import Task, task_from_mapping

DEMO = "demo-csm-server"
NOTES = "chaos-notes"
NOTES_SCHEMA = "CREATE TABLE note (key TEXT PRIMARY KEY, text TEXT NOT NULL);"


@attrs.frozen(kw_only=True)
class ChaosConfig:
    """One chaos run; every bound is a count or a generous deadline, never a speed."""

    sessions: int = 100
    concurrency: int = 32
    fault_rate: float = 0.15
    faults: tuple[Fault, ...] = tuple(Fault)
    own_mcp: bool | frozenset[str] = False
    """Each task session opens (and must end) its own MCP sessions instead of sharing one
    (with every gym, or with the gyms named)."""
    sse: bool = False
    """The gym process answers MCP requests as SSE streams (the in-process gym always does)."""
    replicas: str = "both"
    """Each gym's replicas in the directory: "both" (its proxy and itself), "proxy" or "direct"
    (then the only faults are restarts, expiries and cancellations; a restart leaves a
    gym with no replica at all, as in issue #8 item 7)."""
    restarts: int = 2
    """Kills + restarts of the gym process, spread over the run by progress."""
    expiries: int = 2
    """Expiries of every MCP session of the in-process gym, spread likewise."""
    delay: float = 3.0
    """How long a DELAY fault holds a request: past the client's timeouts."""
    landing_window: float = 15.0
    """How long the janitor takes a 404 for "not there yet" (past ``delay``: nothing is held longer)."""
    rpc_timeout: float = 2.0
    seed_timeout: float = 2.0
    cancel_rate: float = 0.05
    """Share of sessions cancelled at a random moment (a harness giving up on a rollout)."""
    session_deadline: float = 180.0
    drain_deadline: float = 180.0
    seed: int = 0


@attrs.define
class ChaosReport:
    """What happened, with the server-side audit; :meth:`broken` lists failed guarantees."""

    config: ChaosConfig
    elapsed: float = 0.0
    completed: int = 0
    """Sessions that verified and closed."""
    failed: int = 0
    """Sessions ended by an EogError (seeding failed, verification impossible)."""
    cancelled: int = 0
    """Sessions the harness cancelled on purpose."""
    passed: int = 0
    """Sessions whose verdict was a success (faults make many fail; that is fine)."""
    errors: Counter[str] = attrs.field(factory=Counter)
    """EogError classes that ended a session or a tool call."""
    foreign: list[str] = attrs.field(factory=list)
    """Anything not an EogError that escaped or was logged (with its traceback)."""
    hangs: int = 0
    faults: Counter[str] = attrs.field(factory=Counter)
    restarts: int = 0
    expiries: int = 0
    tool_calls: int = 0
    tool_executions: int = 0
    executed_twice: dict[str, int] = attrs.field(factory=dict)
    databases_left: dict[str, list[str]] = attrs.field(factory=dict)
    janitor_leaked: list[str] = attrs.field(factory=list)
    mcp_sessions_left: dict[str, int] = attrs.field(factory=dict)
    """MCP sessions still open on each gym after every client closed."""
    mcp_sessions_excused: dict[str, int] = attrs.field(factory=dict)
    """Of those, at most this many can be initializes whose answer the proxy lost."""
    drained: bool = True

    @property
    def sessions_per_second(self) -> float:
        return self.config.sessions / self.elapsed if self.elapsed else 0.0

    def broken(self) -> list[str]:
        """The guarantees this run violated (empty: all held)."""
        out = []
        left = sum(len(ids) for ids in self.databases_left.values())
        if left:
            out.append(f"{left} database(s) left on the gyms: {self.databases_left}")
        if self.executed_twice:
            out.append(
                f"{len(self.executed_twice)} tool call(s) executed more than once: "
                f"{self.executed_twice}"
            )
        if self.foreign:
            out.append(f"{len(self.foreign)} non-EogError exception(s); first: {self.foreign[0]}")
        if self.hangs:
            out.append(f"{self.hangs} session(s) hung past the deadline")
        orphans = {
            gym: left - self.mcp_sessions_excused.get(gym, 0)
            for gym, left in self.mcp_sessions_left.items()
            if left < 0 or left > self.mcp_sessions_excused.get(gym, 0)
        }
        if orphans:
            out.append(
                f"MCP sessions left open beyond lost initialize answers: {orphans} "
                f"(left {self.mcp_sessions_left}, excused {self.mcp_sessions_excused})"
            )
        if not self.drained:
            out.append("requests still in flight after the drain deadline")
        return out

    def summary(self) -> str:
        c = self.config
        lines = [
            f"sessions {c.sessions} at concurrency {c.concurrency}, replicas {c.replicas}, "
            f"MCP sessions per database {_gyms(c.own_mcp)}, "
            f"gym process answers {'SSE' if c.sse else 'JSON'}, "
            f"fault rate {c.fault_rate:.0%}{' (no proxy in use)' if c.replicas == 'direct' else ''}, "
            f"cancel rate {c.cancel_rate:.0%}, "
            f"restarts {self.restarts}, session expiries {self.expiries}",
            f"elapsed {self.elapsed:.1f} s = {self.sessions_per_second:.2f} sessions/s; "
            f"completed {self.completed} (verdict success {self.passed}), ended by an EogError "
            f"{self.failed}, cancelled on purpose {self.cancelled}",
            f"faults injected {dict(sorted(self.faults.items()))}",
            f"errors seen (EogError) {dict(sorted(self.errors.items()))}",
            f"tool calls attempted {self.tool_calls}, executed by the gyms {self.tool_executions}",
            f"executed twice {len(self.executed_twice)}, databases left "
            f"{sum(len(v) for v in self.databases_left.values())}, non-EogError "
            f"{len(self.foreign)}, hangs {self.hangs}, janitor still holding "
            f"{len(self.janitor_leaked)}",
            f"MCP sessions left open {self.mcp_sessions_left} (initialize answers lost to "
            f"faults {self.mcp_sessions_excused})",
        ]
        return "\n".join(lines)


def _gyms(choice: bool | frozenset[str]) -> str:
    if isinstance(choice, bool):
        return "with every gym" if choice else "with none (shared)"
    return "with " + ", ".join(sorted(choice))


def notes_gym(**options: Any) -> LocalGym:
    """A second gym with its own tools: notes keyed by a unique key per call."""
    gym = LocalGym(name=NOTES, **options)
    key_schema = {
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
        "additionalProperties": False,
    }

    @gym.tool(
        name="put_note",
        description="Store a note.",
        input_schema={
            "type": "object",
            "properties": {"key": {"type": "string"}, "text": {"type": "string"}},
            "required": ["key", "text"],
            "additionalProperties": False,
        },
    )
    def put_note(ctx: ToolContext, key: str, text: str) -> dict[str, str]:
        ctx.connection.execute("INSERT INTO note (key, text) VALUES (?, ?)", (key, text))
        return {"key": key}

    @gym.tool(name="get_note", description="Read a note.", input_schema=key_schema)
    def get_note(ctx: ToolContext, key: str) -> str:
        row = ctx.connection.execute("SELECT text FROM note WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise ToolError(f"no note {key}")
        return str(row[0])

    return gym


def chaos_task(notes_url: str) -> Task:
    raw = load_demo_task()
    raw["task_id"] = "chaos_two_gyms"
    raw["gym_servers_config"].append(
        {"mcp_server_name": NOTES, "mcp_server_url": notes_url, "seed_database_file": "notes.sql"}
    )
    raw["selected_tools"] += ["put_note", "get_note"]
    raw["verifiers"].append(
        {
            "verifier_type": "database_state",
            "name": "two_notes",
            "gym_name": NOTES,
            "validation_config": {
                "query": "SELECT COUNT(*) FROM note",
                "expected_value": 2,
                "comparison_type": "equals",
            },
        }
    )
    return task_from_mapping(raw)


def session_calls(index: int) -> list[tuple[str, dict[str, Any]]]:
    """Every call of one session; arguments are unique per session database."""
    demo = [(call["name"], call["arguments"]) for call in load_demo_trajectory()]
    first = ("put_note", {"key": f"s{index}-a", "text": "before"})
    second = ("put_note", {"key": f"s{index}-b", "text": "after"})
    read = ("get_note", {"key": f"s{index}-a"})
    return [first, *demo[:5], second, *demo[5:], read]


class _ForeignLog(logging.Handler):
    """Collects logged exceptions that are not EogError (cleanup swallows and logs them)."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            if not isinstance(error, EogError | asyncio.CancelledError):
                text = "".join(traceback.format_exception(error))
                self.sink.append(f"logged by {record.name}: {record.getMessage()}\n{text}")


@contextlib.contextmanager
def _watch_foreign(report: ChaosReport) -> Any:
    loop = asyncio.get_running_loop()
    handler = _ForeignLog(report.foreign)
    logger = logging.getLogger("eog_core")
    logger.addHandler(handler)
    previous = loop.get_exception_handler()

    def on_loop_error(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, EogError):
            report.errors[f"unretrieved {type(error).__name__}"] += 1
            return
        report.foreign.append(f"event loop: {context.get('message')} {error!r}")

    loop.set_exception_handler(on_loop_error)
    try:
        yield
    finally:
        loop.set_exception_handler(previous)
        logger.removeHandler(handler)


@contextlib.asynccontextmanager
async def chaos_gyms(config: ChaosConfig, workdir: Path) -> AsyncIterator[dict[str, Any]]:
    (workdir / "demo.jsonl").unlink(missing_ok=True)  # a reused workdir: audit this run only
    async with contextlib.AsyncExitStack() as stack:
        process = await stack.enter_async_context(
            GymProcess(
                domain="demo",
                sse=config.sse,
                journal=workdir / "demo.jsonl",
                log=workdir / "demo.log",
            )
        )
        notes = await stack.enter_async_context(notes_gym(response_mode="sse"))
        proxies = {}
        for name, upstream, salt in ((DEMO, process.url, 1), (NOTES, notes.url, 2)):
            proxies[name] = await stack.enter_async_context(
                FaultProxy(
                    upstream=upstream,
                    rate=config.fault_rate,
                    faults=config.faults,
                    delay=config.delay,
                    seed=config.seed * 10 + salt,
                )
            )
        yield {
            "process": process,
            "notes": notes,
            "proxies": proxies,
            "journal": workdir / "demo.jsonl",
        }


async def run_chaos(config: ChaosConfig, workdir: Path) -> ChaosReport:
    """Run every session, drain, audit the gyms; never raises for a broken guarantee."""
    report = ChaosReport(config)
    with _watch_foreign(report):
        async with chaos_gyms(config, workdir) as gyms:
            await _run(config, report, gyms)
    return report


async def _run(config: ChaosConfig, report: ChaosReport, gyms: dict[str, Any]) -> None:
    process: GymProcess = gyms["process"]
    notes: LocalGym = gyms["notes"]
    proxies: dict[str, FaultProxy] = gyms["proxies"]
    direct = {DEMO: process.url, NOTES: notes.url}
    table = {
        gym: {
            "both": [proxies[gym].url, direct[gym]],
            "proxy": [proxies[gym].url],
            "direct": [direct[gym]],
        }[config.replicas]
        for gym in (DEMO, NOTES)
    }
    directory = GymDirectory(table, probe_after=0.5)
    task = chaos_task(notes.url)
    seeds = {DEMO: read_demo_seed(), NOTES: NOTES_SCHEMA}
    timeouts = Timeouts(
        connect=5.0,
        rpc=config.rpc_timeout,
        sql=config.rpc_timeout,
        seed=config.seed_timeout,
        admin=10.0,
    )
    janitor = Janitor(
        base_delay=0.05, max_delay=1.0, interval=0.1, landing_window=config.landing_window
    )
    gate = asyncio.Semaphore(config.concurrency)
    actions = _Monkey(config, report, process, notes)

    chooser = random.Random(config.seed)
    budgets = [
        chooser.uniform(0.0, 1.0) if chooser.random() < config.cancel_rate else None
        for _ in range(config.sessions)
    ]

    async def one(index: int) -> None:
        async with gate:
            try:
                async with asyncio.timeout(config.session_deadline):
                    await _session_or_cancel(
                        budgets[index],
                        index,
                        task,
                        directory,
                        seeds,
                        janitor,
                        timeouts,
                        config.own_mcp,
                        report,
                    )
            except TimeoutError:
                report.hangs += 1
            actions.progress()

    async with directory:  # holds the pool: its exit ends the shared MCP sessions
        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(config.sessions)))
        report.elapsed = time.perf_counter() - started
        await actions.finish()
        await _drain(config, report, proxies, janitor)
    _audit(report, process, notes, gyms["journal"])
    await _audit_mcp_sessions(report, process, notes, proxies)


async def _session_or_cancel(budget: float | None, *args: Any) -> None:
    if budget is None:
        await _session(*args)
        return
    report: ChaosReport = args[-1]
    try:
        async with asyncio.timeout(budget):
            await _session(*args)
    except TimeoutError:
        report.cancelled += 1


async def _session(
    index: int,
    task: Task,
    directory: GymDirectory,
    seeds: dict[str, str],
    janitor: Janitor,
    timeouts: Timeouts,
    per_database: bool | frozenset[str],
    report: ChaosReport,
) -> None:
    try:
        async with TaskSession.start(
            task,
            directory=directory,
            seed_sql=seeds,
            janitor=janitor,
            timeouts=timeouts,
            own_mcp=per_database,
        ) as session:
            for name, arguments in session_calls(index):
                report.tool_calls += 1
                try:
                    await session.call_tool(name, arguments)
                except EogError as exc:  # a harness shows the error to the model and goes on
                    report.errors[type(exc).__name__] += 1
            verdict = await session.verify()
        report.completed += 1
        report.passed += verdict.success
    except EogError as exc:
        cause = f" <- {type(exc.__cause__).__name__}" if exc.__cause__ is not None else ""
        report.errors[type(exc).__name__ + cause] += 1
        report.failed += 1
    except Exception as exc:  # the guarantee under test: nothing else escapes
        report.foreign.append("".join(traceback.format_exception(exc)))


@attrs.define
class _Monkey:
    """Kills the gym process and expires sessions as the run progresses (not on a clock)."""

    config: ChaosConfig
    report: ChaosReport
    process: GymProcess
    notes: LocalGym
    done: int = 0
    _plan: list[tuple[int, Callable[[], Any]]] = attrs.field(factory=list)
    _tasks: list[asyncio.Task[None]] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        n = self.config.sessions
        for i in range(1, self.config.restarts + 1):
            self._plan.append((n * i // (self.config.restarts + 1), self._restart))
        for i in range(1, self.config.expiries + 1):
            self._plan.append((n * (2 * i - 1) // (2 * self.config.expiries + 1), self._expire))
        self._plan.sort(key=lambda item: item[0])

    def progress(self) -> None:
        self.done += 1
        while self._plan and self._plan[0][0] <= self.done:
            _, action = self._plan.pop(0)
            self._tasks.append(asyncio.ensure_future(action()))

    async def _restart(self) -> None:
        await self.process.restart()
        self.report.restarts += 1

    async def _expire(self) -> None:
        self.notes.expire_sessions()
        self.report.expiries += 1

    async def finish(self) -> None:
        for task in self._tasks:
            await task


async def _drain(
    config: ChaosConfig, report: ChaosReport, proxies: dict[str, FaultProxy], janitor: Janitor
) -> None:
    for proxy in proxies.values():
        report.faults.update({fault.value: n for fault, n in proxy.injected.items()})
        proxy.clear()  # the storm is over; what is held still lands
    try:
        async with asyncio.timeout(config.drain_deadline):
            for proxy in proxies.values():
                await proxy.drain()
            while janitor.leaked():  # noqa: ASYNC110 - a Janitor has no "drained" event
                await asyncio.sleep(0.1)
    except TimeoutError:
        report.drained = False
    left = await janitor.aclose()
    report.janitor_leaked = [f"{e.gym}:{e.database_id} ({e.last_error})" for e in left]


def _audit(report: ChaosReport, process: GymProcess, notes: LocalGym, journal: Path) -> None:
    demo = Ledger.from_journal(journal)
    report.databases_left = {
        gym: ids for gym, ids in ((DEMO, demo.live_databases), (NOTES, notes.database_ids())) if ids
    }
    report.tool_executions = demo.tool_executions + notes.ledger.tool_executions
    for gym, ledger in ((DEMO, demo), (NOTES, notes.ledger)):
        for key, count in ledger.executed_more_than_once().items():
            report.executed_twice[f"{gym}:{key.database_id}:{key.tool}"] = count
    for fault in Fault:
        report.faults.setdefault(fault.value, 0)


async def _audit_mcp_sessions(
    report: ChaosReport, process: GymProcess, notes: LocalGym, proxies: dict[str, FaultProxy]
) -> None:
    """MCP sessions still open on the gyms once every client is closed.

    The only excusable ones are those whose ``initialize`` reached the gym while
    its answer never reached the client (held, dropped, cut or replaced by the
    proxy): the client cannot end a session whose id it never learned.
    """
    health = await process.health() or {}
    left = {DEMO: int(health.get("sessions", -1)), NOTES: len(notes.session_ids())}
    for gym, count in left.items():
        excused = sum(
            n
            for (fault, method), n in proxies[gym].faulted_methods.items()
            if method == "initialize" and fault.reaches_gym
        )
        report.mcp_sessions_left[gym] = count
        report.mcp_sessions_excused[gym] = excused
