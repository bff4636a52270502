"""Static findings (``task_findings``): the three kinds read from verifier SQL, each found
and not found, and the counts per kind ``validate`` gives on both data sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from eog_core.certify import REJECTED_BY_VERIFY, STATIC_KINDS, StaticFinding, task_findings
from eog_core.cli import main
from eog_core.local import demo_paths
from eog_core.tasks import Task, task_from_mapping
from tests.datasets import DataSet

SQL_KINDS = ("sql_invalid", "time_dependent", "may_truncate")

DDL = """
CREATE TABLE customer_case (case_id INTEGER PRIMARY KEY, account_id INTEGER, state TEXT);
CREATE TABLE case_sla (case_id INTEGER, sla_def_id INTEGER, stage TEXT,
                       PRIMARY KEY (case_id, sla_def_id));
CREATE TABLE account (code TEXT UNIQUE, name TEXT);
INSERT INTO account VALUES ('a;b', 'CREATE TABLE fake (x PRIMARY KEY);');
"""


def _task(*queries: str, judged: str | None = None) -> Task:
    demo = json.loads(demo_paths().task.read_text())
    verifiers: list[dict[str, Any]] = [
        {
            "verifier_type": "database_state",
            "name": f"v{index}",
            "gym_name": demo["gym_servers_config"][0]["mcp_server_name"],
            "validation_config": {"query": query, "expected_value": 1, "comparison_type": "equals"},
        }
        for index, query in enumerate(queries)
    ]
    if judged is not None:
        verifiers.append(
            {
                "verifier_type": "response_check",
                "name": "judged",
                "validation_config": {"sql_query": judged, "comparison_prompt": "same?"},
            }
        )
    return task_from_mapping(dict(demo, verifiers=verifiers))


def _kinds(query: str, *, ddl: str | None = None) -> set[str]:
    return {f.kind for f in task_findings(_task(query), ddl=ddl)} & set(SQL_KINDS)


# -- sql_invalid --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELEC state FROM customer_case",
        "SELECT state FROM customer_case WHERE case_id = = 1",
        "SELECT state FROM customer_case WHERE (case_id = 1",
        "SELECT 'unterminated FROM customer_case",
        "SELECT 1 # 2",
        "SELECT 1; SELECT FROM",
        "-- only a comment",
        "SELECT 'a lone surrogate \ud800'",  # JSON can carry one; no gym can encode it
    ],
)
def test_sql_sqlite_cannot_parse_is_invalid(query: str) -> None:
    assert "sql_invalid" in _kinds(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT state FROM no_such_table WHERE no_such_column = 1",  # parses; names unknown
        "SELECT no_such_function(1)",
        "SELECT 1 UNION SELECT 1, 2",  # parses; fails later
        "SELECT COUNT(*) FROM customer_case;",
    ],
)
def test_sql_that_parses_is_not_invalid(query: str) -> None:
    assert "sql_invalid" not in _kinds(query)


def test_a_write_that_parses_is_not_read_only_but_not_invalid() -> None:
    found = {f.kind for f in task_findings(_task("DELETE FROM customer_case WHERE case_id = 1"))}
    assert "query_not_read_only" in found and "sql_invalid" not in found
    assert "query_not_read_only" in REJECTED_BY_VERIFY and "sql_invalid" not in REJECTED_BY_VERIFY


def test_the_judges_query_is_read_too() -> None:
    found = task_findings(_task(judged="SELECT state FROM"))
    assert [(f.kind, f.verifier) for f in found if f.kind == "sql_invalid"] == [
        ("sql_invalid", "judged")
    ]
    assert found[0].path == "$.verifiers[0].validation_config.sql_query"


# -- time_dependent -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT COUNT(*) FROM customer_case WHERE opened > datetime('now', '-1 day')",
        "SELECT julianday('NOW') - julianday(opened) < 1 FROM customer_case WHERE case_id = 1",
        "SELECT COUNT(*) FROM customer_case WHERE opened < CURRENT_TIMESTAMP",
        "SELECT COUNT(*) FROM customer_case WHERE day = current_date",
        "SELECT COUNT(*) FROM customer_case WHERE opened < date()",
        "SELECT COUNT(*) FROM customer_case WHERE year = strftime('%Y')",
        "SELECT COUNT(*) FROM customer_case WHERE opened < unixepoch('now')",
    ],
)
def test_sql_reading_the_clock_is_time_dependent(query: str) -> None:
    assert "time_dependent" in _kinds(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT COUNT(*) FROM knowledge WHERE state = 'published'",  # 'now' inside a word
        "SELECT now_playing FROM customer_case WHERE case_id = 1",
        "SELECT COUNT(*) FROM customer_case WHERE state = 'now'",  # a string, not a time value
        "SELECT COUNT(*) FROM customer_case WHERE note = 'CURRENT_DATE'",
        'SELECT "current_timestamp" FROM customer_case WHERE case_id = 1',  # a column
        "SELECT c.current_date FROM customer_case c WHERE case_id = 1",  # a column too
        "SELECT COUNT(*) FROM customer_case -- WHERE opened < datetime('now')",
        "SELECT COUNT(*) FROM customer_case WHERE opened > datetime('2025-01-01', '-1 day')",
        "SELECT COUNT(*) FROM customer_case WHERE year = strftime('%Y', opened)",
    ],
)
def test_sql_not_reading_the_clock_is_not_time_dependent(query: str) -> None:
    assert "time_dependent" not in _kinds(query)


# -- may_truncate -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT state FROM customer_case",
        "SELECT state FROM customer_case WHERE state = 'open';",
        "SELECT state FROM customer_case WHERE case_id IN (SELECT case_id FROM x LIMIT 1)",
        "SELECT state FROM customer_case -- LIMIT 5",
        "SELECT 'LIMIT 5' FROM customer_case",
        "SELECT state, COUNT(*) FROM customer_case GROUP BY state",
        "SELECT COUNT(*) OVER () FROM customer_case",
        "SELECT max(a, b) FROM customer_case",
        "SELECT state FROM customer_case WHERE case_id = 1 OR case_id = 2",
        "SELECT state FROM customer_case WHERE case_id <= 5",
        "SELECT state FROM customer_case WHERE case_id = parent_id",
        "WITH c AS (SELECT * FROM customer_case LIMIT 1) SELECT state FROM c",
        "SELECT COUNT(*) FROM a UNION SELECT state FROM customer_case",
        "SELECT state FROM customer_case EXCEPT SELECT COUNT(*) FROM b",
        "VALUES " + ", ".join(["(1)"] * 101),
    ],
)
def test_a_list_without_limit_may_truncate(query: str) -> None:
    assert "may_truncate" in _kinds(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT state FROM customer_case LIMIT 500",
        "SELECT state FROM customer_case ORDER BY case_id LIMIT 10 OFFSET 2;",
        "SELECT COUNT(*) FROM customer_case WHERE state = 'open'",
        "SELECT COUNT(*) + 1, state FROM customer_case",
        "SELECT group_concat(state) FROM customer_case",
        "SELECT COUNT(*) FILTER (WHERE state = 'x') FROM customer_case",
        "SELECT 1",
        "SELECT (SELECT COUNT(*) FROM customer_case)",
        "SELECT state FROM customer_case WHERE case_id = 1233",
        "SELECT state FROM customer_case AS c WHERE 1233 = c.case_id AND c.state = 'x'",
        "SELECT state FROM customer_case WHERE sys_id = 'abc'",
        "SELECT state FROM customer_case WHERE number = 'CS001'",
        "SELECT state FROM customer_case WHERE (state = 'a' OR state = 'b') AND case_id = 7",
        "SELECT state FROM customer_case WHERE case_id = (SELECT MAX(case_id) FROM x)",
        "SELECT COUNT(*) FROM a UNION ALL SELECT COUNT(*) FROM b",
        "SELECT state FROM customer_case INTERSECT SELECT COUNT(*) FROM b",
        "WITH c AS (SELECT * FROM customer_case) SELECT COUNT(*) FROM c",
        "VALUES (1), (2)",
    ],
)
def test_a_single_row_shape_does_not_truncate(query: str) -> None:
    assert "may_truncate" not in _kinds(query)


def test_the_ddl_keys_overrule_the_column_names() -> None:
    by_name = "SELECT state FROM customer_case WHERE account_id = 8"
    assert "may_truncate" not in _kinds(by_name)  # *_id: taken for a key without DDL
    assert "may_truncate" in _kinds(by_name, ddl=DDL)  # the DDL's key is case_id
    assert "may_truncate" not in _kinds(
        "SELECT state FROM customer_case WHERE case_id = 8", ddl=DDL
    )
    half = "SELECT stage FROM case_sla s WHERE s.case_id = 1"
    assert "may_truncate" in _kinds(half, ddl=DDL)  # half of a composite key
    assert "may_truncate" not in _kinds(half + " AND s.sla_def_id = 6", ddl=DDL)
    unique = "SELECT name FROM account WHERE code = 'x'"
    assert "may_truncate" in _kinds(unique)
    assert "may_truncate" not in _kinds(unique, ddl=DDL)  # UNIQUE is a key
    assert "may_truncate" not in _kinds(  # a table the DDL does not know: the name rule
        "SELECT title FROM knowledge WHERE knowledge_id = 3", ddl=DDL
    )
    assert "may_truncate" in _kinds(  # the string in the INSERT created no table
        "SELECT x FROM fake WHERE x = 1", ddl=DDL
    )


def test_the_ddl_is_given_per_gym() -> None:
    task = _task("SELECT state FROM customer_case WHERE account_id = 8")
    gym = task.gym_servers[0].name
    assert "may_truncate" in {f.kind for f in task_findings(task, ddl={gym: DDL})}
    assert "may_truncate" not in {f.kind for f in task_findings(task, ddl={"other": DDL})}


@given(
    st.text(
        alphabet=st.sampled_from(list("SELECT FROM WHERE LIMIT UNION ()'\"`[];.,=-*/\n\\x0_né"))
    ),
)
def test_any_query_text_gives_findings_never_an_exception(query: str) -> None:
    found = task_findings(_task(query or "x"))
    assert {f.kind for f in found} <= STATIC_KINDS


# -- the engine as a library and through validate -------------------------------------------


def test_findings_name_verifier_path_and_become_certificate_findings() -> None:
    task = _task("SELECT state FROM customer_case", "SELECT datetime('now')")
    found = task_findings(task, source="t.json")
    assert [(f.kind, f.path, f.verifier, f.severity) for f in found] == [
        ("may_truncate", "$.verifiers[0].validation_config.query", "v0", "defect"),
        ("time_dependent", "$.verifiers[1].validation_config.query", "v1", "defect"),
    ]
    assert "verifier" not in found[0].to_dict()  # validate --json's record is unchanged
    recorded = found[1].certificate_finding()
    assert (recorded.kind, recorded.verifier) == ("time_dependent", "v1")
    assert recorded.detail.startswith("$.verifiers[1].validation_config.query: reads the clock")
    assert {f.kind for f in found} <= STATIC_KINDS and isinstance(found[0], StaticFinding)


def test_validate_reports_the_new_kinds_where_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = json.loads(demo_paths().task.read_text())
    demo["verifiers"][0]["validation_config"]["query"] = "SELECT FROM WHERE"
    (tmp_path / "t.json").write_text(json.dumps(demo))
    assert main(["validate", str(tmp_path / "t.json")]) == 0  # defects: exit 0 as before
    out = capsys.readouterr().out
    assert f"{tmp_path / 't.json'} $.verifiers[0].validation_config.query: sql_invalid" in out
    assert "$.verifiers[4].validation_config.query: time_dependent: reads the clock" in out
    assert main(["validate", str(tmp_path / "t.json"), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)["finding_counts"]
    assert counts["sql_invalid"] == 1 and counts["time_dependent"] == 1


def test_validate_reads_the_keys_of_the_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = json.loads(demo_paths().task.read_text())
    demo["verifiers"] = demo["verifiers"][:1]
    demo["verifiers"][0]["validation_config"]["query"] = (
        "SELECT name FROM contact WHERE account_id = 'acc_001'"
    )
    (tmp_path / "t.json").write_text(json.dumps(demo))
    seeds = str(demo_paths().directory)
    assert main(["validate", str(tmp_path / "t.json"), "--json"]) == 0
    assert "may_truncate" not in json.loads(capsys.readouterr().out)["finding_counts"]
    assert main(["validate", str(tmp_path / "t.json"), "--seed-root", seeds, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["finding_counts"] == {"may_truncate": 1}


# -- counts on the data sets ----------------------------------------------------------------


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def test_counts_per_kind_on_the_data(
    dataset: DataSet, snapshot_json: SnapshotAssertion, capsys: pytest.CaptureFixture[str]
) -> None:
    root = dataset.root
    argv = [
        "validate",
        str(root / "tasks"),
        str(root / "nemo-rows"),
        "--tools",
        str(root / "tools"),
    ]
    main([*argv, "--json"])
    counts = json.loads(capsys.readouterr().out)["finding_counts"]
    assert snapshot_json == {kind: counts.get(kind, 0) for kind in sorted(STATIC_KINDS)}
