"""``eog_core.metrics``' reading of certificates: each task's trust, and the sha256 of a task as
``certify`` records it (so a certificate of the same bytes is never called stale)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eog_core.certify import Certificate, CertificateFinding, load_sources
from eog_core.local import demo_paths
from eog_core.metrics import TaskTrust, task_digests, task_trust


def _certificate(
    task_id: str, status: str, sha: str = "", kinds: tuple[str, ...] = ()
) -> Certificate:
    return Certificate(
        task_id=task_id,
        task_file="",
        task_sha256=sha,
        status=status,  # type: ignore[arg-type]
        findings=tuple(CertificateFinding(kind=k, detail="") for k in kinds),
    )


def test_each_status_and_why_a_task_is_unchecked() -> None:
    certificates = {
        "a": _certificate("a", "certified", "aa"),
        "b": _certificate("b", "clean"),
        "c": _certificate("c", "flagged", kinds=("sql_invalid", "may_truncate", "sql_invalid")),
        "d": _certificate("d", "incomplete"),
        "e": _certificate("e", "certified", "old"),
        "f": _certificate("f", "clean", ""),  # no sha256 recorded: cannot be told stale
    }
    digests = {"a": "aa", "e": "new", "f": "ff"}
    trust = task_trust(["a", "b", "c", "d", "e", "f", "g", "a"], certificates, digests)
    assert list(trust) == ["a", "b", "c", "d", "e", "f", "g"]
    assert trust["c"] == TaskTrust(
        task_id="c", status="flagged", kinds=("may_truncate", "sql_invalid"), certificate="flagged"
    )
    assert {t: v.label for t, v in trust.items()} == {
        "a": "certified",
        "b": "clean",
        "c": "flagged: may_truncate, sql_invalid",
        "d": "unchecked (incomplete)",
        "e": "unchecked (stale)",
        "f": "clean",
        "g": "unchecked",
    }
    assert trust["e"].stale and trust["e"].certificate == "certified"
    assert trust["g"].certificate is None
    assert task_trust(["e"], certificates)["e"].status == "certified"  # no digests: not stale


@pytest.fixture
def seed_root() -> Path:
    return demo_paths().directory


def test_digests_are_those_certify_records(tmp_path: Path, seed_root: Path) -> None:
    demo = demo_paths().task
    rows = tmp_path / "rows.jsonl"
    task = json.loads(demo.read_bytes())
    rows.write_bytes(
        b"".join(
            json.dumps(task | {"task_id": name}).encode() + end
            for name, end in (("r1", b"\r\n"), ("r2", b"\n"))
        )
        + b"\n"
    )
    recorded = {
        source.task.task_id: source.sha256
        for source in load_sources([demo, rows], seed_root=seed_root)
    }
    assert {**task_digests(demo), **task_digests(rows)} == recorded
    assert len(set(recorded.values())) == 3
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "one.json").write_bytes(demo.read_bytes())
    assert task_digests(folder) == task_digests(demo)
