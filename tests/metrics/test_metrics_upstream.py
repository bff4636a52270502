"""Upstream's numbers and the corrected ones, on an upstream results folder built here.

The folder (``out/``), two repeats of three oracle tasks, plus a fourth expected
task that crashed before any run and left no file:

=====  ======  =====================  =================================  ==========
run    task    domain                 outcome                            verifiers
=====  ======  =====================  =================================  ==========
run_1  t1      csm                    success                            3/3 = 1.0
run_1  t2      csm                    failure                            1/4 = 0.25
run_1  t3      hr                     run error ("LLM timeout")          none = 0.0
run_2  t1      csm                    failure                            1/2 = 0.5
run_2  t2      csm                    success                            4/4 = 1.0
run_2  t3      hr                     success                            2/2 = 1.0
run_2  broken  -                      not JSON at all                    -
=====  ======  =====================  =================================  ==========
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eog_core.metrics import (
    MetricsError,
    UpstreamResultFile,
    corrected_summary,
    format_corrected,
    format_upstream,
    read_upstream_results,
    runs_from_upstream,
    upstream_summary,
)


def _run(passed: int, total: int) -> dict[str, Any]:
    return {
        "run_number": 1,
        "verification_results": {f"v{i}": {"passed": i < passed} for i in range(total)},
        "verification_summary": {
            "total": total,
            "passed": passed,
            "failed": total - passed,
            "pass_rate": passed / total,
        },
        "overall_success": passed == total,
    }


def _result(run: dict[str, Any]) -> dict[str, Any]:
    ok = 1 if run["overall_success"] else 0
    summary = run.get("verification_summary", {"total": 0, "passed": 0})
    return {
        "benchmark_config": {"model": "m"},
        "runs": [run],
        "statistics": {
            "total_runs": 1,
            "successful_runs": ok,
            "overall_success_rate": float(ok),
            "pass_at_1": float(ok),
            "verifier_level_pass_rate": (
                summary["passed"] / summary["total"] if summary["total"] else 0.0
            ),
            "total_verifiers_checked": summary["total"],
            "total_verifiers_passed": summary["passed"],
        },
    }


def _write(root: Path, run: str, name: str, content: dict[str, Any] | str) -> None:
    folder = root / run
    folder.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content)
    (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    errored = {"run_number": 1, "error": "LLM timeout", "overall_success": False}
    _write(root, "run_1", "results_oracle__csm__t1.json", _result(_run(3, 3)))
    _write(root, "run_1", "results_oracle__csm__t2.json", _result(_run(1, 4)))
    _write(root, "run_1", "results_oracle__hr__t3.json", _result(errored))
    _write(root, "run_2", "results_oracle__csm__t1.json", _result(_run(1, 2)))
    _write(root, "run_2", "results_oracle__csm__t2.json", _result(_run(4, 4)))
    _write(root, "run_2", "results_oracle__hr__t3.json", _result(_run(2, 2)))
    _write(root, "run_2", "results_oracle__csm__broken.json", "{not json")
    return root


def test_reader_parses_names_runs_and_errors(results: Path) -> None:
    files = read_upstream_results(results)
    assert len(files) == 7
    by_name = {(Path(f.path).parent.name, Path(f.path).name): f for f in files}
    errored = by_name[("run_1", "results_oracle__hr__t3.json")]
    assert (errored.group, errored.run_index) == ("run_1", 1)
    assert (errored.mode, errored.domain, errored.task_id) == ("oracle", "hr", "t3")
    assert errored.has_run_error
    assert errored.runs[0].error == "LLM timeout"
    broken = by_name[("run_2", "results_oracle__csm__broken.json")]
    assert broken.error is not None
    assert broken.error.startswith("invalid JSON at line 1")


def test_upstream_numbers_as_upstream_computes_them(results: Path) -> None:
    summary = upstream_summary(read_upstream_results(results))
    run_1, run_2 = summary.groups
    # run_1: success (1 + 0 + 0) / 3 = 0.3333; verifier (1 + 0.25 + 0) / 3 = 0.41667.
    # The errored file counts as a file with errors *and* stays in both means at 0.
    assert (run_1.name, run_1.total_files, run_1.files_with_errors) == ("run_1", 3, 1)
    assert run_1.avg_success_rate == pytest.approx(1 / 3)
    assert run_1.avg_verifier_pass_rate == pytest.approx(1.25 / 3)
    # run_2: success (0 + 1 + 1) / 3 = 0.6667; verifier (0.5 + 1 + 1) / 3 = 0.8333.
    # The broken file would crash upstream; here it is reported and left out.
    assert (run_2.name, run_2.total_files, run_2.files_with_errors) == ("run_2", 3, 0)
    assert run_2.avg_success_rate == pytest.approx(2 / 3)
    assert run_2.avg_verifier_pass_rate == pytest.approx(2.5 / 3)
    assert [path for path, _ in summary.unreadable] == [
        str(results / "run_2" / "results_oracle__csm__broken.json")
    ]
    # The missing task t4 is nowhere: upstream never knew about it.
    assert summary.overall.total_files == 6


def test_upstream_printout(results: Path) -> None:
    text = format_upstream(upstream_summary(read_upstream_results(results)))
    table = "\n".join(
        [
            "+--------+---------------+-------------------+------------------------+-------------------------+",
            "| Mode   |   Total Files |   Files w/ Errors |   Avg Success Rate (%) |   Avg Verifier Pass (%) |",
            "+========+===============+===================+========================+=========================+",
            "| run_1  |             3 |                 1 |                  33.33 |                   41.67 |",
            "+--------+---------------+-------------------+------------------------+-------------------------+",
            "| run_2  |             3 |                 0 |                  66.67 |                   83.33 |",
            "+--------+---------------+-------------------+------------------------+-------------------------+",
        ]
    )
    banner = "=" * 100
    expected_head = f"\n{banner}\nFINAL RESULTS\n{banner}\n\n{table}\n"
    assert text.startswith(expected_head)
    assert "Unreadable files (upstream would stop here): 1" in text[len(expected_head) :]


def test_upstream_printout_in_colour(results: Path) -> None:
    text = format_upstream(upstream_summary(read_upstream_results(results)), color=True)
    # The red code does not widen the column.
    assert "|                 \x1b[91m1\x1b[0m |" in text


def test_files_outside_run_folders_are_ignored_like_upstream(results: Path) -> None:
    (results / "results_oracle__csm__t9.json").write_text(
        json.dumps(_result(_run(1, 1))), encoding="utf-8"
    )
    files = read_upstream_results(results)
    summary = upstream_summary(files)
    assert summary.outside_groups == (str(results / "results_oracle__csm__t9.json"),)
    assert summary.overall.total_files == 6


def test_runs_become_parity_records_numbered_by_repeat(results: Path) -> None:
    runs = runs_from_upstream(read_upstream_results(results))
    assert [(r.task_id, r.repeat) for r in runs] == [
        ("t1", 0),
        ("t1", 1),
        ("t2", 0),
        ("t2", 1),
        ("t3", 0),
        ("t3", 1),
    ]
    assert all(r.strict is None and r.parity is not None for r in runs)
    t3_first = runs[4].parity
    assert t3_first is not None
    assert (t3_first.completed, t3_first.failure_kind) == (False, "run_error")


def test_corrected_numbers(results: Path) -> None:
    files = read_upstream_results(results)
    summary = corrected_summary(files, expected_tasks=["t1", "t2", "t3", "t4"])
    assert summary.overall.strict is None
    stats = summary.overall.parity
    assert stats is not None
    # Scored runs: t1 [T, F], t2 [F, T], t3 [T] (its run_1 errored and is excluded).
    assert (stats.runs_scored, stats.runs_errored, stats.successes) == (5, 1, 3)
    assert stats.errors_by_kind == (("run_error", 1),)
    # run-weighted: 3 / 5 = 0.6
    assert stats.run_success_rate == pytest.approx(0.6)
    # task-weighted: (1/2 + 1/2 + 1/1) / 3 = 2/3
    assert stats.task_success_rate == pytest.approx(2 / 3)
    # macro over domains: csm (1/2 + 1/2) / 2 = 0.5, hr 1.0 -> (0.5 + 1.0) / 2 = 0.75
    assert stats.macro_success_rate == pytest.approx(0.75)
    # verifier pass, run-weighted over scored runs: (1 + 0.5 + 0.25 + 1 + 1) / 5 = 0.75
    assert stats.verifier_pass_rate == pytest.approx(0.75)
    # pass@1 = task-weighted = 2/3 over 3 tasks; pass@2 over t1, t2 only (t3 has one
    # scored run): each 1 - C(1,2)/C(2,2) = 1 - 0 = 1
    assert summary.ks == (1, 2)
    assert [(p.k, p.tasks) for p in stats.pass_at] == [(1, 3), (2, 2)]
    assert stats.pass_at[0].value == pytest.approx(2 / 3)
    assert stats.pass_at[1].value == pytest.approx(1.0)
    # The task that left no file is counted and named.
    assert summary.expected_tasks == 4
    assert summary.missing_tasks == (("oracle", "t4"),)
    assert summary.unexpected_tasks == ()
    assert [source for source, _ in summary.skipped] == [
        str(results / "run_2" / "results_oracle__csm__broken.json")
    ]
    csm, hr = summary.by_domain
    assert (csm.name, hr.name) == ("csm", "hr")
    assert csm.parity is not None
    assert hr.parity is not None
    # csm: 2 successes of 4 runs; hr: 1 of 1 scored run, 1 errored
    assert csm.parity.run_success_rate == pytest.approx(0.5)
    assert hr.parity.run_success_rate == 1.0
    assert hr.parity.runs_errored == 1
    assert [m.name for m in summary.by_mode] == ["oracle"]


def test_corrected_printout(results: Path) -> None:
    summary = corrected_summary(read_upstream_results(results), expected_tasks=["t1", "t4"], k=1)
    text = format_corrected(summary)
    assert "Policy: parity" in text
    assert "Policy: strict" not in text
    # overall row: 3 tasks, 5 scored, 1 errored, 60.00 / 66.67 / 75.00 / 75.00 / pass@1 66.67
    row = next(line for line in text.splitlines() if line.startswith("| all "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells == ["all", "3", "5", "1", "60.00", "66.67", "75.00", "75.00", "66.67"]
    assert "  oracle: t4" in text
    assert "Tasks not in the expected set:" in text
    assert "Errored runs by kind (parity): run_error: 1" in text


def test_reader_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(MetricsError, match="not a results folder"):
        read_upstream_results(tmp_path / "nope")


def test_statistics_missing_is_reported_not_raised(tmp_path: Path) -> None:
    _write(tmp_path, "run_1", "results_oracle__csm__x.json", {"runs": []})
    (file,) = read_upstream_results(tmp_path)
    assert isinstance(file, UpstreamResultFile)
    assert file.error == "no statistics object: upstream fails on it"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ([], "top level is not an object"),
        (
            {"runs": {}, "statistics": {}},
            "statistics.overall_success_rate is missing: upstream fails on it",
        ),
        ({"runs": {"a": 1}, "statistics": {}}, "runs is an object: upstream iterates it and fails"),
        ({"runs": [3], "statistics": {}}, "runs[0] is not an object: upstream fails on it"),
        (
            {
                "runs": [],
                "statistics": {"overall_success_rate": "1", "verifier_level_pass_rate": 0.0},
            },
            'statistics.overall_success_rate is not a number ("1"): upstream fails summing it',
        ),
    ],
)
def test_malformed_content_is_reported(tmp_path: Path, content: Any, reason: str) -> None:
    _write(tmp_path, "run_1", "results_oracle__csm__x.json", json.dumps(content))
    (file,) = read_upstream_results(tmp_path)
    assert file.error == reason
    assert upstream_summary([file]).unreadable == ((file.path, reason),)


def test_badly_named_file_counts_for_upstream_only(tmp_path: Path) -> None:
    _write(tmp_path, "run_1", "other.json", _result(_run(1, 1)))
    files = read_upstream_results(tmp_path)
    assert upstream_summary(files).groups[0].avg_success_rate == 1.0
    summary = corrected_summary(files)
    assert summary.overall.runs == 0
    assert summary.skipped == ((files[0].path, "file name does not say mode, domain and task id"),)
