"""Fixtures for ``eog_core.run``: the demo gym, the scripted model, a helper to run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from eog_core import Task, load_task
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, demo_paths
from eog_core.run import EvaluationPlan, ModelSettings, RolloutOptions, RunReport, run_evaluation
from tests.run.scripted_model import ScriptedModel

API_KEY = "sk-test-0123456789-DO-NOT-LEAK"


@pytest.fixture
async def gym() -> AsyncIterator[LocalGym]:
    async with LocalGym.demo() as server:
        yield server


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    async with ScriptedModel() as server:
        yield server


@pytest.fixture
def demo_task() -> Task:
    return load_task(demo_paths().task)


async def evaluate(
    gym: LocalGym,
    model: ScriptedModel,
    out: Path,
    *,
    name: str = "demo-correct",
    api: str = "chat",
    tasks: list[Task] | None = None,
    repeats: int = 1,
    concurrency: int = 2,
    settings: dict[str, Any] | None = None,
    directory: GymDirectory | None = None,
    judge_model: str | None = None,
    preflight: bool = True,
    max_consecutive_unreachable: int | None = 3,
    **options: Any,
) -> RunReport:
    """One run of the scripted model on the demo gym, with fast retries."""
    model_settings = ModelSettings(
        model=name,
        base_url=model.base_url,
        api=api,  # type: ignore[arg-type]
        api_key=API_KEY,
        backoff_initial=0.01,
        backoff_max=0.05,
        **(settings or {}),
    )
    options.setdefault("retry_delay", 0.01)
    options.setdefault("seed_root", demo_paths().directory)
    return await run_evaluation(
        tasks or [load_task(demo_paths().task)],
        model_settings,
        out,
        plan=EvaluationPlan(
            repeats=repeats,
            concurrency=concurrency,
            judge_model=judge_model,
            preflight=preflight,
            max_consecutive_unreachable=max_consecutive_unreachable,
        ),
        directory=directory or GymDirectory({gym.name: gym.url}),
        options=RolloutOptions.build(**options),
    )
