"""The names 0.2 removed or made private still work for one release, each with a
``DeprecationWarning`` naming the new spelling (docs/api.md, "Stability"), and none of
them is exported again (``tests/test_exports.py`` keeps one meaning per public name)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from eog_core import local, metrics, run, tasks
from eog_core.errors import SchemaError, UsageError
from eog_core.local import demo_paths


def test_task_from_upstream_and_to_upstream_read_and_write_as_the_functions_do() -> None:
    raw = json.loads(demo_paths().task.read_text(encoding="utf-8"))
    with pytest.warns(DeprecationWarning, match=r"task_from_mapping\(obj\)"):
        task = tasks.Task.from_upstream(raw, source="demo")
    assert task == tasks.task_from_mapping(raw, source="demo")
    with pytest.warns(DeprecationWarning, match=r"eog_core\.tasks\.to_upstream\(task\)"):
        written = task.to_upstream()  # type: ignore[attr-defined]
    assert written == tasks.to_upstream(task)
    assert written["verifiers"] == raw["verifiers"]


def test_a_malformed_task_through_the_old_method_is_still_a_schema_error() -> None:
    with (
        pytest.warns(DeprecationWarning, match="Task.from_upstream"),
        pytest.raises(SchemaError, match="not-a-file"),
    ):
        tasks.Task.from_upstream({"verifiers": "nope"}, source="not-a-file")


def test_auth_config_from_upstream_structures_the_record() -> None:
    with pytest.warns(DeprecationWarning, match=r"structure_or_raise\(config, AuthConfig\)"):
        auth = tasks.AuthConfig.from_upstream({"type": "api_key", "token": "t"})  # type: ignore[attr-defined]
    assert auth == tasks.structure_or_raise({"type": "api_key", "token": "t"}, tasks.AuthConfig)
    with pytest.warns(DeprecationWarning, match="AuthConfig"), pytest.raises(SchemaError):
        tasks.AuthConfig.from_upstream({"type": "cookie"})  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("module", "name", "new", "replacement"),
    [
        (local, "ToolSpec", "RegisteredTool", lambda: local.RegisteredTool),
        (metrics, "Comparison", "RunComparison", lambda: metrics.RunComparison),
        (metrics, "percent", "internal helper", None),
        (run, "iso_time", "no public replacement", None),
        (run, "retry_after_seconds", "no public replacement", None),
        (tasks, "make_converter", "structure_or_raise", None),
    ],
)
def test_a_deprecated_module_name_warns_and_is_not_exported(
    module: object, name: str, new: str, replacement: object
) -> None:
    with pytest.warns(DeprecationWarning, match=new) as caught:
        value = getattr(module, name)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    if replacement is not None:
        assert value is replacement()  # type: ignore[operator]
    assert name not in module.__all__  # type: ignore[attr-defined]
    assert name not in vars(module)  # served by __getattr__, so every access warns


def test_the_plumbing_still_behaves_as_in_0_2() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert run.iso_time(0) == "1970-01-01T00:00:00.000+00:00"
        assert run.retry_after_seconds({"Retry-After": "2"}) == 2.0
        assert metrics.percent(0.5) == "50.00"
        assert metrics.percent(None) == "-"
        assert tasks.make_converter().structure({"type": "bearer", "token": "x"}, tasks.AuthConfig)


def test_an_unknown_name_is_still_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module in (local, metrics, run, tasks):
            with pytest.raises(AttributeError, match="no attribute 'ToolSpecs'"):
                _ = module.ToolSpecs  # type: ignore[attr-defined]


async def test_run_evaluation_s_old_keywords_build_the_plan_with_a_warning(tmp_path: Path) -> None:
    """The 0.2 keywords reach the run (here: the plan check refuses ``repeats=0`` either
    way), warn naming ``plan=EvaluationPlan(...)``, and may not be mixed with ``plan=``."""
    task = tasks.load_task(demo_paths().task)
    settings = run.ModelSettings(model="m", base_url="http://127.0.0.1:9/v1")
    with (
        pytest.warns(
            DeprecationWarning, match=r"plan=EvaluationPlan\(concurrency=, repeats=\.\.\.\)"
        ),
        pytest.raises(UsageError, match="repeats must be between 1"),
    ):
        await run.run_evaluation([task], settings, tmp_path, repeats=0, concurrency=2)
    with pytest.raises(UsageError, match="repeats must be between 1"):
        await run.run_evaluation([task], settings, tmp_path, plan=run.EvaluationPlan(repeats=0))
    with pytest.raises(UsageError, match="give plan= or repeats=, not both"):
        await run.run_evaluation([task], settings, tmp_path, plan=run.EvaluationPlan(), repeats=2)
    with pytest.raises(UsageError, match="unexpected keyword argument 'repeat'"):
        await run.run_evaluation([task], settings, tmp_path, repeat=2)  # type: ignore[call-arg]
