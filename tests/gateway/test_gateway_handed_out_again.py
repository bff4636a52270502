"""A rollout abandoned (DELETE, or its TTL) and handed out again: its folder reads everywhere.

The gateway records the abandoned attempt (``incomplete``, ``abandoned``) and then the
evaluated one, both in ``rollouts.jsonl``; ``score``, ``report`` and ``compare`` count the
evaluated attempt once, as ``score RUN_DIR`` (``upstream/``) and a resumed run do.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eog_core.cli import main
from eog_core.local import LocalGym, load_demo_trajectory
from eog_core.metrics import corrected_summary, read_verdicts, runs_from_verdicts
from eog_core.report import load_run
from eog_core.run import ROLLOUTS_FILE, UPSTREAM_DIR, RolloutLog
from tests.gateway.conftest import Records, make_gateway
from tests.gateway.test_gateway_sdk import finish, mcp_session, start


def _cli(*argv: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main([str(a) for a in argv])
    return code, out.getvalue()


async def _abandon(
    how: str, http: aiohttp.ClientSession, url: str, rollout: dict[str, Any], records: Records
) -> None:
    if how == "delete":
        async with http.delete(f"{url}/rollouts/{rollout['rollout_id']}") as response:
            assert response.status == 200, await response.text()
    [record] = await records.wait_for(1)  # with "ttl": the reaper abandons it
    assert (record["rollout_id"], record["failure_kind"]) == (rollout["rollout_id"], "abandoned")


@pytest.mark.parametrize("how", ["delete", "ttl"])
async def test_a_rollout_abandoned_and_handed_out_again_scores_reports_and_compares(
    how: str, gym: LocalGym, tmp_path: Path, http: aiohttp.ClientSession, records: Records
) -> None:
    out = tmp_path / "out"
    rollouts = out / ROLLOUTS_FILE
    ttl = {"rollout_ttl": 1.0} if how == "ttl" else {}
    async with make_gateway(gym, out, repeats=1, on_record=records, **ttl) as gateway:
        first = await start(http, gateway)
        async with mcp_session(first["mcp_url"]) as agent:
            step = load_demo_trajectory()[0]
            await agent.call_tool(step["name"], step["arguments"])
        await _abandon(how, http, gateway.url, first, records)
        again = await start(http, gateway)  # the same task x repeat, handed out again
        assert (again["task_id"], again["repeat"]) == (first["task_id"], first["repeat"])
        async with mcp_session(again["mcp_url"]) as agent:
            for step in load_demo_trajectory():
                await agent.call_tool(step["name"], step["arguments"])
        record = await finish(http, gateway, again["rollout_id"], "Done.")
        assert record["status"] == "evaluated" and record["success"] is True
    lines = [json.loads(line) for line in rollouts.read_text().splitlines()]
    assert [(r["status"], r["failure_kind"]) for r in lines] == [
        ("incomplete", "abandoned"),
        ("evaluated", None),
    ]
    assert len(list((out / UPSTREAM_DIR / "run_1").glob("results_*.json"))) == 1

    # the library's reader: one run, the evaluated attempt
    [run] = runs_from_verdicts(read_verdicts(rollouts))
    assert run.strict is not None and run.strict.completed and run.strict.success
    assert run.parity is not None and run.parity.success
    summary = corrected_summary([run])
    assert summary.overall.strict is not None
    assert summary.overall.strict.runs_errored == 0

    # score: the rollouts file agrees with the upstream folder
    code, text = _cli("score", rollouts, "--json")
    assert code == 0, text
    ours = json.loads(text)["corrected"]
    code, text = _cli("score", out / UPSTREAM_DIR, "--json")
    assert code == 0, text
    theirs = json.loads(text)["corrected"]
    assert ours["overall"]["strict"]["task_success_rate"] == 1.0
    assert ours["overall"]["strict"]["runs_errored"] == 0
    assert ours["overall"]["parity"] == theirs["overall"]["parity"]

    # upstream's printout of the folder: one task, solved (only evaluated rollouts get a file)
    code, text = _cli("score", out, "--upstream-only")
    assert code == 0, text
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| upstream")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["upstream", "1", "0", "100", "100"]
    ]

    # report: the folder loads, its metrics count the run once
    source = load_run(out)
    assert source.kind == "rollouts" and len(source.records) == 2
    code, text = _cli("report", out, "-o", tmp_path / "report.html", "--n-boot", "100")
    assert code == 0, text
    assert (tmp_path / "report.html").is_file()

    # compare: the rollouts file against the upstream folder, and against itself
    code, text = _cli("compare", rollouts, out / UPSTREAM_DIR, "--json", "--n-boot", "100")
    assert code == 0, text
    comparison = json.loads(text)
    code, text = _cli("compare", out, rollouts, "--json", "--n-boot", "100")
    assert code == 0, text
    assert comparison

    # a resumed gateway (and run) still sees it evaluated
    log = RolloutLog.open(out, model="mcp-gateway")
    try:
        assert [key[2:] for key in log.finished] == [(first["task_id"], 0)]
    finally:
        log.close()
