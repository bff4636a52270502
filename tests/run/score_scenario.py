"""The run whose ``upstream/`` folder upstream's ``compute_score.py`` scored for the golden file.

Two tasks x two repeats with the scripted correct trajectory: the demo task (passes)
and a copy whose first verifier expects another end date (strict 5/6, parity 4/5
after upstream's same-name collapse), so the averages are not all 0 or 100.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from eog_core import load_task
from eog_core.gym import GymDirectory
from eog_core.local import LocalGym, demo_paths
from eog_core.run import EvaluationPlan, ModelSettings, RolloutOptions, RunReport, run_evaluation
from eog_core.tasks import DatabaseStateCheck
from tests.run.scripted_model import ScriptedModel


async def run_score_scenario(out: Path) -> RunReport:
    demo = load_task(demo_paths().task)
    first = demo.verifiers[0]
    check = first.validation_config
    assert isinstance(check, DatabaseStateCheck)
    stricter = attrs.evolve(
        first, validation_config=attrs.evolve(check, expected_value="active until 2028-06-30")
    )
    tasks = [
        attrs.evolve(demo, task_id="demo_pass"),
        attrs.evolve(demo, task_id="demo_partial", verifiers=(stricter, *demo.verifiers[1:])),
    ]
    async with LocalGym.demo() as gym, ScriptedModel() as model:
        return await run_evaluation(
            tasks,
            ModelSettings(model="demo-correct", base_url=model.base_url),
            out,
            plan=EvaluationPlan(repeats=2),
            directory=GymDirectory({gym.name: gym.url}),
            options=RolloutOptions.build(seed_root=demo_paths().directory),
        )
