"""The chaos run in small: 100 sessions, faults at 15 %, the gym process killed twice;
the demo gym's MCP session is shared, the notes gym's opened per task session.

The full run (1,000 sessions, figures) is ``nox -s chaos``. Every bound here is
a count or a generous deadline, so CPU contention slows the run but cannot fail it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eog_core.local import Fault

from .harness import DEMO, NOTES, ChaosConfig, ChaosReport, run_chaos

CONFIG = ChaosConfig(
    sessions=100,
    concurrency=32,
    fault_rate=0.15,
    restarts=2,
    expiries=2,
    cancel_rate=0.05,
    rpc_timeout=3.0,
    seed_timeout=3.0,
    delay=4.0,
    landing_window=20.0,
    own_mcp=frozenset({NOTES}),  # one gym's MCP sessions per task session
    session_deadline=300.0,
    drain_deadline=300.0,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def report(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ChaosReport]:
    workdir: Path = tmp_path_factory.mktemp("chaos")
    yield await run_chaos(CONFIG, workdir)


async def test_the_storm_happened(report: ChaosReport) -> None:
    print(report.summary())
    accounted = report.completed + report.failed + report.cancelled + report.hangs
    assert accounted + len(report.foreign) >= CONFIG.sessions, report.summary()
    assert (report.restarts, report.expiries) == (2, 2)
    assert sum(report.faults.values()) > 0
    assert all(report.faults[fault.value] >= 0 for fault in Fault)
    assert report.completed > 0 and report.tool_executions > 0, report.summary()
    assert set(report.mcp_sessions_left) == {DEMO, NOTES}


async def test_no_tool_call_executed_twice(report: ChaosReport) -> None:
    assert report.executed_twice == {}


async def test_nothing_but_eog_errors_escaped(report: ChaosReport) -> None:
    assert report.foreign == []


async def test_no_session_hung(report: ChaosReport) -> None:
    assert report.hangs == 0
    assert report.drained


async def test_no_database_left_after_the_janitor_drained(report: ChaosReport) -> None:
    assert report.databases_left == {}, report.summary()
    assert report.janitor_leaked == []


async def test_no_mcp_session_orphaned(report: ChaosReport) -> None:
    for gym, left in report.mcp_sessions_left.items():
        assert 0 <= left <= report.mcp_sessions_excused[gym], report.summary()


async def test_the_report_names_each_broken_guarantee() -> None:
    broken = ChaosReport(
        CONFIG,
        hangs=1,
        foreign=["ValueError"],
        drained=False,
        executed_twice={"g:db:t": 2},
        databases_left={NOTES: ["db_1"]},
        mcp_sessions_left={NOTES: 3},
        mcp_sessions_excused={NOTES: 1},
    ).broken()
    assert len(broken) == 6, broken
    assert (
        ChaosReport(CONFIG, mcp_sessions_left={NOTES: 1}, mcp_sessions_excused={NOTES: 1}).broken()
        == []
    )
