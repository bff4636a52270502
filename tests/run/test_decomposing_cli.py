"""``eog-core run --orchestrator decomposing`` as a user runs it: ``eog-core serve-model`` in
one process, ``eog-core run`` in another, the demo gym on loopback; refusals in one line."""

from __future__ import annotations

from pathlib import Path

from eog_core.local import LocalGym
from tests.run.decomposing_upstream import fake_upstream
from tests.run.scripted_model import ScriptedModel
from tests.run.test_run_cli import command, finish, records, serve_model, spawn


async def test_serve_model_and_run_decomposing_offline(gym: LocalGym, tmp_path: Path) -> None:
    """The two commands of docs/run.md's offline try, with an upstream checkout."""
    upstream = fake_upstream(tmp_path / "upstream")
    async with serve_model() as base_url:
        async with ScriptedModel() as unused:  # command() wants a model; its URL is replaced
            argv = command(gym, unused, tmp_path / "decomposed", name="demo")
        argv[argv.index("--base-url") + 1] = base_url
        decomposed = [*argv, "--orchestrator", "decomposing", "--upstream-dir", str(upstream)]
        code, _, stderr = await finish(await spawn([*decomposed, "--repeats", "2"]))
        assert code == 0, stderr
        found = records(tmp_path / "decomposed")
        assert [(r["success"], r["orchestrator"], r["stop_reason"]) for r in found] == [
            (True, "decomposing", "answered")
        ] * 2
        assert [len(r["decomposition"]["results"]) for r in found] == [3, 3]

        bad = [*decomposed, "--planner-model", "plan-no-json"]
        bad[bad.index("--out") + 1] = str(tmp_path / "bad")
        code, _, stderr = await finish(await spawn(bad))
        assert code == 3, stderr
        [record] = records(tmp_path / "bad")
        assert (record["failure_kind"], record["stop_reason"]) == (
            "bad_decomposition",
            "bad_decomposition",
        )
    assert gym.database_ids() == []
