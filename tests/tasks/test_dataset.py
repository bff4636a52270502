"""The dataset as downloaded: Parquet rows with the public dataset's columns (written
here from the 13 real task files), selected by domain and mode; and the seeded,
domain-stratified ``--limit`` sample."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest

from eog_core import Task, load_task
from eog_core.cli import main
from eog_core.errors import SchemaError, UsageError
from eog_core.local import demo_paths
from eog_core.tasks import load_tasks, mode_from_path, sample_stratified, select_tasks
from tests.conftest import require_eog_data
from tests.datasets import EXAMPLES, REAL_SET, upstream_files

JSON_COLUMNS = ("gym_servers_config", "verifiers")  # strings in the dataset's rows


def dataset_row(path: Path) -> dict[str, Any]:
    """One upstream task file as the dataset's row: task_id, domain, its keys, two as JSON."""
    task = json.loads(path.read_text(encoding="utf-8"))
    row: dict[str, Any] = {"task_id": path.stem, "domain": path.parent.name}
    for key, value in task.items():
        row[key] = json.dumps(value) if key in JSON_COLUMNS else value
    return row


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture
def downloaded(tmp_path: Path) -> Path:
    """The Hub's layout: a folder per config (mode), a file per split (domain)."""
    pytest.importorskip("pyarrow")
    files = upstream_files(require_eog_data())
    assert len(files) == REAL_SET.upstream_files
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for file in files:
        by_domain.setdefault(file.parent.name, []).append(dataset_row(file))
    for mode in ("oracle", "plus_5_tools"):
        for domain, rows in by_domain.items():
            write_parquet(tmp_path / "hub" / mode / f"{domain}-00000-of-00001.parquet", rows)
    return tmp_path / "hub"


def test_parquet_rows_read_as_the_task_files_and_keep_mode_and_domain(downloaded: Path) -> None:
    tasks = load_tasks(downloaded)
    assert len(tasks) == 2 * REAL_SET.upstream_files
    assert Counter((t.mode, t.domain) for t in tasks) == {
        ("oracle", "csm"): 12,
        ("oracle", "itsm"): 1,
        ("plus_5_tools", "csm"): 12,
        ("plus_5_tools", "itsm"): 1,
    }
    originals = {p.stem: load_task(p) for p in upstream_files(require_eog_data())}
    for task in tasks:
        original = originals[task.task_id or ""]
        assert task.verifiers == original.verifiers
        assert task.gym_servers == original.gym_servers
        assert task.user_prompt == original.user_prompt
        assert task.selected_tools == original.selected_tools
    assert sum(len(t.verifiers) for t in tasks) == 2 * REAL_SET.upstream_verifiers


def test_selection_by_domain_and_mode(downloaded: Path) -> None:
    tasks = load_tasks(downloaded)
    [itsm] = select_tasks(tasks, domains={"itsm"}, modes={"oracle"})
    assert (itsm.domain, itsm.mode) == ("itsm", "oracle")
    assert itsm.task_id == upstream_files(require_eog_data())[-1].stem
    assert len(select_tasks(tasks, modes={"plus_5_tools"})) == REAL_SET.upstream_files
    assert select_tasks(tasks, domains={"hr"}) == []
    with pytest.raises(UsageError, match="unknown mode"):
        select_tasks(tasks, modes={"plus_7_tools"})


def test_validate_and_convert_read_parquet_with_domain_mode_and_limit(
    downloaded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["validate", str(downloaded), "--domain", "csm", "--mode", "plus_5_tools", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] == 12 and report["invalid"] == 0, report["errors"]
    assert report["by_domain_mode"] == [{"domain": "csm", "mode": "plus_5_tools", "tasks": 12}]
    assert code in (0, 1)  # 1 when a finding says verify would reject a real task
    main(
        [
            "validate",
            str(downloaded),
            "--mode",
            "oracle",
            "--limit",
            "6",
            "--shuffle-seed",
            "3",
            "--json",
        ]
    )
    sample = json.loads(capsys.readouterr().out)["by_domain_mode"]
    assert sample == [{"domain": "csm", "mode": "oracle", "tasks": 6}]  # 12:1 -> 5.5:0.5 -> 6:0
    out = tmp_path / "rows.jsonl"
    assert (
        main(
            [
                "convert",
                str(downloaded),
                "--tools",
                str(require_eog_data() / "tools"),
                "--domain",
                "itsm",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["verifier_metadata"]["mode"] for r in rows) == ["oracle", "plus_5_tools"]


def test_a_file_that_is_not_parquet_is_one_schema_error(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    bad = tmp_path / "oracle" / "csm-00000-of-00001.parquet"
    bad.parent.mkdir()
    bad.write_text("{}")
    with pytest.raises(SchemaError, match="cannot read Parquet file") as caught:
        load_tasks(bad)
    assert caught.value.source == str(bad)


def test_rows_without_mode_or_domain_take_them_from_the_hub_file_name(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    source = sorted((EXAMPLES / "tasks").rglob("*.json"))[0]
    row = {key: value for key, value in dataset_row(source).items() if key != "domain"}
    from_gyms = load_task(source).domain  # a plain file's domain comes from its gym names
    assert from_gyms == "csm"
    for name, expected in (
        ("hr-00000-of-00001.parquet", ("hr", None)),
        ("plus_10_tools-itsm-00000.parquet", ("itsm", "plus_10_tools")),
        ("train-00000-of-00001.parquet", (from_gyms, None)),
    ):
        [task] = load_tasks(write_parquet(tmp_path / "data" / name, [row]))
        assert (task.domain, task.mode) == expected, name


def test_the_mode_comes_from_the_innermost_folder_or_file_name() -> None:
    assert mode_from_path("hub/plus_10_tools/csm-00000-of-00001.parquet") == "plus_10_tools"
    assert mode_from_path("data/oracle/plus_15_tools") == "plus_15_tools"
    assert mode_from_path("plus_5_tools-csm.parquet") == "plus_5_tools"
    assert mode_from_path("tasks/csm/task.json") is None


def tasks_of(counts: dict[str, int]) -> list[Task]:
    demo = load_task(demo_paths().task)
    return [
        attrs.evolve(demo, task_id=f"{domain}-{n}", domain=domain)
        for domain, count in counts.items()
        for n in range(count)
    ]


def test_the_limit_sample_is_stratified_seeded_and_in_file_order() -> None:
    tasks = tasks_of({"csm": 60, "itsm": 30, "hr": 10})
    sample = sample_stratified(tasks, 10, seed=7)
    assert Counter(t.domain for t in sample) == {"csm": 6, "itsm": 3, "hr": 1}
    assert sample == sample_stratified(tasks, 10, seed=7)
    assert sample != sample_stratified(tasks, 10, seed=8)
    assert [tasks.index(t) for t in sample] == sorted(tasks.index(t) for t in sample)
    assert sample != tasks[:10]  # never the head of the file
    assert sample_stratified(tasks, 500, seed=1) == tasks
    assert sample_stratified(tasks, 0, seed=1) == []


def test_rounding_goes_to_the_largest_remainders() -> None:
    tasks = tasks_of({"a": 5, "b": 3, "c": 2})
    # shares 1.5, 0.9, 0.6: floors 1, 0, 0; the two left go to b (.9) and c (.6)
    assert Counter(t.domain for t in sample_stratified(tasks, 3, seed=0)) == {
        "a": 1,
        "b": 1,
        "c": 1,
    }
    assert len(sample_stratified(tasks, 7, seed=0)) == 7
