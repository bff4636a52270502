"""The EOG inspect Task under inspect's own ``eval()`` and tool loop, with mockllm replaying
the demo's tool calls; the gym runs in a thread since ``eval()`` owns its event loop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model

from eog_core.gym import GymDirectory
from eog_core.integrations.inspect_ai import eog_dataset, eog_task, inspect_parameters
from eog_core.local import LocalGym, demo_paths, demo_tool_snapshot
from tests_integrations._support import FINAL_TEXT, doc_examples, run_example, script

PATHS = demo_paths()


def replay(steps: list[dict[str, Any]]) -> Any:
    """mockllm's custom output function: the script's next call, then the final answer."""

    def next_output(
        messages: list[Any], tools: list[Any], tool_choice: Any, config: Any
    ) -> ModelOutput:
        done = sum(isinstance(m, ChatMessageTool) for m in messages)
        if done < len(steps):
            step = steps[done]
            output = ModelOutput.for_tool_call(
                model="mockllm/model",
                tool_name=step["name"],
                tool_arguments=step["arguments"],
                tool_call_id=f"call_{done}",
            )
        else:
            output = ModelOutput.from_content(model="mockllm/model", content=FINAL_TEXT)
        # With usage given, mockllm does not count tokens (tiktoken would download its table).
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return next_output


@pytest.fixture(scope="module")
def gym() -> Iterator[LocalGym]:
    with LocalGym.demo().run_in_thread() as server:
        yield server


def run(gym: LocalGym, kind: str, tmp_path: Path) -> EvalLog:
    task = eog_task(
        [PATHS.task],
        directory=GymDirectory({gym.name: gym.url}),
        seed_root=PATHS.directory,
        message_limit=40,
    )
    model = get_model("mockllm/model", custom_outputs=replay(script(kind)))
    [log] = inspect_eval(task, model=model, display="none", log_dir=str(tmp_path))
    assert log.status == "success", log.error
    return log


def only_score(log: EvalLog) -> Any:
    assert log.samples is not None and len(log.samples) == 1
    scores = log.samples[0].scores
    assert scores is not None
    [score] = scores.values()
    return score


def test_the_correct_trajectory_scores_one(gym: LocalGym, tmp_path: Path) -> None:
    log = run(gym, "solve", tmp_path)
    score = only_score(log)
    assert score.value == 1.0 and score.metadata["success"] is True
    assert score.metadata["reward"] == 1.0 and "verifiers passed" in score.explanation
    tool_messages = [m for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]
    assert len(tool_messages) == len(script("solve")) and all(
        m.error is None for m in tool_messages
    )
    assert gym.database_ids() == []


def test_doing_nothing_scores_zero(gym: LocalGym, tmp_path: Path) -> None:
    score = only_score(run(gym, "idle", tmp_path))
    assert score.value == 0.0 and score.metadata["success"] is False
    assert gym.database_ids() == []


def test_a_gym_fault_reaches_the_model_as_a_tool_error(gym: LocalGym, tmp_path: Path) -> None:
    gym.drop_next(after_tool_call=True)
    log = run(gym, "solve", tmp_path)
    tool_messages = [m for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]
    assert tool_messages[0].error is not None and "Error: " in tool_messages[0].error.message
    assert all(m.error is None for m in tool_messages[1:])
    only_score(log)
    assert gym.database_ids() == []


def test_samples_and_tool_schemas_are_what_inspect_accepts() -> None:
    [sample] = eog_dataset([PATHS.task])
    assert sample.metadata is not None and sample.metadata["eog_task"]["task_id"] == sample.id
    for spec in demo_tool_snapshot().tools:
        params = inspect_parameters(spec)
        assert set(params.properties) == set(spec.parameters()["properties"])
        assert params.required == spec.parameters().get("required", [])


@pytest.mark.parametrize("code", doc_examples("inspect"))
def test_the_documented_example_runs(code: str, tmp_path: Path) -> None:
    assert "inspect task: score 1.0" in run_example(code, tmp_path)
