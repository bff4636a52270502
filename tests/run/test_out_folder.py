"""A run's output folder (#35): one run at a time, one model on one API, nothing left by a
run that recorded nothing, and what is missing found before the first rollout."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from eog_core import load_task
from eog_core.errors import ModelPreflightError, SeedFileError, UsageError
from eog_core.local import LocalGym, demo_paths
from eog_core.run import ROLLOUTS_FILE, ModelClient, ModelSettings
from eog_core.run._folder import LOCK_FILE
from tests.run.conftest import evaluate
from tests.run.scripted_model import ScriptedModel
from tests.run.test_endings import SilentModel


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_second_run_on_a_folder_in_use_is_refused_and_touches_nothing(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    model.service_time = 60.0  # the first run sits in a model call, its folder locked
    first = asyncio.create_task(evaluate(gym, model, tmp_path, repeats=2))
    await until(lambda: model.in_flight == 2, "the first run's rollouts in flight")
    before = names(tmp_path)

    with pytest.raises(UsageError, match=rf"in use by another run \(process {os.getpid()}\)"):
        await evaluate(gym, model, tmp_path, repeats=2)
    assert names(tmp_path) == before
    assert model.in_flight == 2  # the second one asked the model nothing

    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert not (tmp_path / LOCK_FILE).exists()  # released, and its file removed
    model.service_time = 0.0
    report = await evaluate(gym, model, tmp_path, repeats=2)  # the folder is free again
    assert report.all_evaluated and report.ran == 2
    assert not (tmp_path / LOCK_FILE).exists()


async def test_switching_the_api_in_one_folder_is_refused(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    await evaluate(gym, model, tmp_path, api="chat")
    with pytest.raises(UsageError, match="holds rollouts of API 'chat', not 'responses'"):
        await evaluate(gym, model, tmp_path, api="responses", repeats=2)
    assert len((tmp_path / ROLLOUTS_FILE).read_text().splitlines()) == 1


async def test_a_folder_of_records_without_an_api_or_with_a_deep_value_resumes(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    """Records of an older writer (no ``api``) and a record too deep for json.loads (an
    agent's nested arguments) are read on resume as score reads them: nothing refused."""
    await evaluate(gym, model, tmp_path, api="chat", repeats=1)
    log = tmp_path / ROLLOUTS_FILE
    [line] = log.read_text().splitlines()
    record = json.loads(line)
    del record["api"]
    deep = "[" * 5000 + "]" * 5000
    log.write_text(json.dumps(record)[:-1] + f', "nested": {deep}}}\n')
    report = await evaluate(gym, model, tmp_path, api="chat", repeats=2)
    assert (report.ran, report.all_evaluated) == (1, True)
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and deep in lines[0]  # the old line is kept whole


async def test_a_missing_seed_file_is_found_before_the_first_rollout(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    task = load_task(demo_paths().task)
    gone = attrs.evolve(
        task,
        task_id="gone",
        gym_servers=[attrs.evolve(g, seed_database_file="gone.sql") for g in task.gym_servers],
    )
    out = tmp_path / "runs" / "gone"
    with pytest.raises(
        SeedFileError, match=r"task 'gone': the seed file .* not found: .*gone\.sql"
    ):
        await evaluate(gym, model, out, tasks=[task, gone])
    assert model.requests == []  # not even the preflight
    assert sum(gym.ledger.seeds.values()) == 0
    assert names(tmp_path) == []  # nothing left behind


async def test_a_seed_root_that_is_not_a_folder_is_found_before_the_first_rollout(
    gym: LocalGym, model: ScriptedModel, tmp_path: Path
) -> None:
    with pytest.raises(SeedFileError, match=r"seed root .*typo is not a folder"):
        await evaluate(gym, model, tmp_path / "out", seed_root=tmp_path / "typo")
    assert model.requests == []
    assert not (tmp_path / "out").exists()


async def test_a_failed_preflight_leaves_an_existing_folder_as_it_was(
    gym: LocalGym, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    async with ScriptedModel(api_key="another key") as model:
        with pytest.raises(ModelPreflightError, match="refused the API key"):
            await evaluate(gym, model, tmp_path)
    assert names(tmp_path) == ["notes.txt"]  # no empty rollouts.jsonl, no lock file


async def test_https_to_a_plain_http_server_is_named(model: ScriptedModel) -> None:
    url = model.base_url.replace("http://", "https://", 1)
    async with ModelClient(ModelSettings(model="demo", base_url=url)) as client:
        with pytest.raises(ModelPreflightError, match="looks like https:// spoken to a plain HTTP"):
            await client.preflight()


async def test_a_base_url_without_v1_that_answers_404_is_told_so(model: ScriptedModel) -> None:
    base = model.base_url.removesuffix("/v1")
    async with ModelClient(ModelSettings(model="demo", base_url=base)) as client:
        with pytest.raises(ModelPreflightError, match=rf"HTTP 404.*try --base-url {base}/v1$"):
            await client.preflight()


async def test_the_preflight_probe_takes_its_limit_from_probe_timeout() -> None:
    async with SilentModel() as url:
        settings = ModelSettings(model="m", base_url=url, probe_timeout=0.2)
        async with ModelClient(settings) as client:
            with pytest.raises(
                ModelPreflightError, match=r"no answer in 0\.2s \(--probe-timeout\)"
            ):
                await client.preflight()
