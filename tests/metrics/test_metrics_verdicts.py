"""Verdict JSONL reading, both policy layouts, expected task sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core.errors import EogError
from eog_core.metrics import (
    MetricsError,
    corrected_summary,
    expected_task_ids,
    format_corrected,
    read_verdicts,
    runs_from_verdicts,
)


def _line(task_id: str, repeat: int, policy: str, success: bool, **extra: Any) -> str:
    row: dict[str, Any] = {
        "task_id": task_id,
        "domain": "csm",
        "mode": "oracle",
        "repeat": repeat,
        "policy": policy,
        "success": success,
        "reward": 1.0 if success else 0.0,
        "pass_rate": 1.0 if success else 0.5,
        "num_defined": 2,
        "num_scored": 2,
        "evaluation_completed": True,
        "failure_kind": None,
    }
    row.update(extra)
    return json.dumps(row)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "verdicts.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_separate_lines_and_nested_parity_give_the_same_runs(tmp_path: Path) -> None:
    separate = _write(
        tmp_path,
        [
            _line("t1", 0, "strict", False),
            _line("t1", 0, "parity", True),
            "",
            _line("t2", 0, "strict", True),
            _line("t2", 0, "parity", True),
        ],
    )
    runs_separate = runs_from_verdicts(read_verdicts(separate))
    nested = _write(
        tmp_path,
        [
            _line("t1", 0, "strict", False, parity={"success": True, "pass_rate": 1.0}),
            _line("t2", 0, "strict", True, parity={"success": True, "pass_rate": 1.0}),
        ],
    )
    runs_nested = runs_from_verdicts(read_verdicts(nested))
    assert [(r.task_id, r.strict, r.parity) for r in runs_separate] == [
        (r.task_id, r.strict, r.parity) for r in runs_nested
    ]
    first = runs_nested[0]
    assert first.strict is not None
    assert first.parity is not None
    assert (first.strict.success, first.parity.success) == (False, True)
    assert first.primary is first.strict


def test_summary_reports_both_policies(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _line("t1", 0, "strict", False, parity={"success": True, "pass_rate": 1.0}),
            _line("t2", 0, "strict", True, parity={"success": True, "pass_rate": 1.0}),
            _line(
                "t3",
                0,
                "strict",
                False,
                evaluation_completed=False,
                failure_kind="verifier_error",
                parity={"success": False, "pass_rate": 0.5, "evaluation_completed": True},
            ),
        ],
    )
    summary = corrected_summary(read_verdicts(path))
    strict, parity = summary.overall.strict, summary.overall.parity
    assert strict is not None
    assert parity is not None
    # strict: t3 did not complete -> excluded; 1 success of 2 scored runs
    assert (strict.runs_scored, strict.runs_errored, strict.run_success_rate) == (2, 1, 0.5)
    assert strict.errors_by_kind == (("verifier_error", 1),)
    # parity scored t3 as a plain failure: 2 of 3
    assert (parity.runs_scored, parity.runs_errored) == (3, 0)
    assert parity.run_success_rate == pytest.approx(2 / 3)


def test_nested_parity_inherits_completion(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _line(
                "t1",
                0,
                "strict",
                False,
                evaluation_completed=False,
                failure_kind="gym_unreachable",
                parity={"success": False, "pass_rate": 0.0},
            ),
        ],
    )
    (run,) = runs_from_verdicts(read_verdicts(path))
    assert run.parity is not None
    assert (run.parity.completed, run.parity.failure_kind) == (False, "gym_unreachable")


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [_line("t1", 0, "strict", True), "", "{not json"])
    with pytest.raises(MetricsError, match=r"verdicts\.jsonl:3: invalid JSON") as caught:
        read_verdicts(path)
    assert caught.value.line == 3
    assert caught.value.source == str(path)
    assert isinstance(caught.value, EogError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"success": "yes"}, r"verdicts\.jsonl:2: \$\.success: expected true or false"),
        ({"policy": "lenient"}, r"verdicts\.jsonl:2: \$\.policy: expected 'strict' or 'parity'"),
        ({"repeat": -1}, r"\$\.repeat: expected a non-negative integer"),
        ({"repeat": True}, r"\$\.repeat: expected a non-negative integer"),
        ({"pass_rate": "1"}, r"\$\.pass_rate: expected a number"),
        ({"parity": {"success": True}}, r"\$\.parity\.pass_rate: missing"),
        ({"task_id": ""}, r"\$\.task_id: expected a non-empty string"),
    ],
)
def test_bad_field_names_its_path(tmp_path: Path, override: dict[str, Any], message: str) -> None:
    row = json.loads(_line("t2", 0, "strict", True))
    row.update(override)
    path = _write(tmp_path, [_line("t1", 0, "strict", True), json.dumps(row)])
    with pytest.raises(MetricsError, match=message):
        read_verdicts(path)


def test_missing_required_key(tmp_path: Path) -> None:
    row = json.loads(_line("t1", 0, "strict", True))
    del row["evaluation_completed"]
    path = _write(tmp_path, [json.dumps(row)])
    with pytest.raises(MetricsError, match=r":1: \$\.evaluation_completed: missing"):
        read_verdicts(path)


def test_a_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = _write(tmp_path, ["[1, 2]"])
    with pytest.raises(MetricsError, match=r":1: \$: expected a JSON object"):
        read_verdicts(path)


def test_duplicate_policy_for_one_run_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _line("t1", 0, "strict", True, parity={"success": True, "pass_rate": 1.0}),
            _line("t1", 0, "parity", True),
        ],
    )
    with pytest.raises(MetricsError, match=r"parity verdict for task 't1' repeat 0 given twice"):
        runs_from_verdicts(read_verdicts(path))


def test_two_evaluated_verdicts_for_one_run_name_both_lines_and_what_to_do(
    tmp_path: Path,
) -> None:
    parity = {"success": True, "pass_rate": 1.0}
    path = _write(
        tmp_path,
        [
            _line("t1", 0, "strict", True, parity=parity),
            _line("t2", 0, "strict", True, parity=parity),
            _line("t1", 0, "strict", False, parity=parity),
        ],
    )
    with pytest.raises(MetricsError) as caught:
        runs_from_verdicts(read_verdicts(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:3: strict verdict for task 't1' repeat 0 given twice")
    assert f"(at {path}:1 and again at {path}:3)" in message
    assert "remove the line that should not count" in message
    assert (caught.value.source, caught.value.line) == (str(path), 3)


def _unevaluated(task_id: str, repeat: int, kind: str = "abandoned") -> str:
    unscored = {"success": False, "pass_rate": 0.0, "evaluation_completed": False}
    return _line(
        task_id,
        repeat,
        "strict",
        False,
        evaluation_completed=False,
        failure_kind=kind,
        parity={**unscored, "failure_kind": kind},
    )


@pytest.mark.parametrize("evaluated_at", [0, 1, 2])
def test_an_attempt_not_evaluated_yields_to_the_evaluated_one(
    tmp_path: Path, evaluated_at: int
) -> None:
    # a gateway rollout abandoned and handed out again (evaluated last); any order reads alike
    lines = [_unevaluated("t1", 0), _unevaluated("t1", 0, "gym_error")]
    lines.insert(
        evaluated_at, _line("t1", 0, "strict", True, parity={"success": True, "pass_rate": 1.0})
    )
    [run] = runs_from_verdicts(read_verdicts(_write(tmp_path, lines)))
    assert run.strict is not None and run.strict.completed and run.strict.success
    assert run.parity is not None and run.parity.completed and run.parity.success


def test_of_attempts_none_evaluated_the_last_stands(tmp_path: Path) -> None:
    path = _write(tmp_path, [_unevaluated("t1", 0), _unevaluated("t1", 0, "gym_error")])
    [run] = runs_from_verdicts(read_verdicts(path))
    assert run.strict is not None and not run.strict.completed
    assert run.strict.failure_kind == "gym_error"
    summary = corrected_summary([run])
    assert summary.overall.strict is not None and summary.overall.strict.runs_errored == 1


def test_attempts_in_separate_policy_lines(tmp_path: Path) -> None:
    unevaluated = {"evaluation_completed": False, "failure_kind": "verifier_error"}
    path = _write(
        tmp_path,
        [
            _line("t1", 0, "strict", False, **unevaluated),
            _line("t1", 0, "parity", False),
            _line("t1", 0, "strict", True),
            _line("t1", 0, "parity", True),
        ],
    )
    [run] = runs_from_verdicts(read_verdicts(path))
    assert run.strict is not None and run.strict.success and run.strict.completed
    assert run.parity is not None and run.parity.success


def test_expected_task_ids_from_rows(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps({"task_id": "a"})
        + "\n"
        + json.dumps({"verifier_metadata": {"task_id": "b"}})
        + "\n\n",
        encoding="utf-8",
    )
    assert expected_task_ids(path) == frozenset({"a", "b"})


def test_expected_task_ids_row_without_id(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps({"task_id": "a"}) + "\n" + json.dumps({"x": 1}) + "\n", encoding="utf-8"
    )
    with pytest.raises(MetricsError, match=r"tasks\.jsonl:2: row has no task_id"):
        expected_task_ids(path)


def test_expected_task_ids_from_directory(tmp_path: Path) -> None:
    (tmp_path / "csm").mkdir()
    (tmp_path / "csm" / "task_1.json").write_text("{}", encoding="utf-8")
    (tmp_path / "task_2.json").write_text("{}", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    assert expected_task_ids(tmp_path) == frozenset({"task_1", "task_2"})


def test_expected_task_ids_refuses_other_files(tmp_path: Path) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("", encoding="utf-8")
    with pytest.raises(MetricsError, match=r"expected a \.jsonl"):
        expected_task_ids(path)


def test_summary_of_nothing_lists_every_expected_task() -> None:
    summary = corrected_summary([], expected_tasks=["b", "a"])
    assert summary.missing_tasks == (("?", "a"), ("?", "b"))
    assert (summary.overall.strict, summary.overall.parity) == (None, None)
    assert summary.ks == (1,)


def test_summary_refuses_k_below_one() -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        corrected_summary([], k=0)


def test_mean_over_repeats_and_pass_at_k_coverage(tmp_path: Path) -> None:
    # task a: repeats 0,1,2 -> T, F, T ; task b: repeats 0,1 -> F, F
    # per repeat: #0 = (1 + 0) / 2 = 0.5, #1 = (0 + 0) / 2 = 0, #2 = 1 / 1 = 1
    # mean = 0.5; sample sd = sqrt(((0)^2 + (0.5)^2 + (0.5)^2) / 2) = 0.5
    lines = []
    for task, outcomes in (("a", [True, False, True]), ("b", [False, False])):
        for repeat, ok in enumerate(outcomes):
            lines.append(
                json.dumps(
                    {
                        "task_id": task,
                        "domain": "csm",
                        "mode": "oracle",
                        "repeat": repeat,
                        "policy": "strict",
                        "success": ok,
                        "reward": float(ok),
                        "pass_rate": float(ok),
                        "num_defined": 1,
                        "num_scored": 1,
                        "evaluation_completed": True,
                        "failure_kind": None,
                    }
                )
            )
    path = tmp_path / "v.jsonl"
    path.write_text("\n".join(lines) + "\n")
    summary = corrected_summary(read_verdicts(path))
    stats = summary.overall.strict
    assert stats is not None
    assert stats.repeat_success_rates == ((0, 0.5), (1, 0.0), (2, 1.0))
    assert stats.repeat_mean == pytest.approx(0.5)
    assert stats.repeat_sd == pytest.approx(0.5)
    assert [(p.k, p.tasks) for p in stats.pass_at] == [(1, 2), (2, 2), (3, 1)]
    text = format_corrected(summary)
    assert "Mean success over 3 repeat(s) (strict): 50.00 ± 50.00" in text
    assert "pass@3 1 task(s)" in text
