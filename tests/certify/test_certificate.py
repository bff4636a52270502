"""The certificate file: written whole, read back equal, anything else refused naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eog_core.certify import (
    CERTIFICATE_SCHEMA,
    Certificate,
    CertificateFinding,
    certificate_filename,
    certificate_status,
    read_certificates,
    write_certificate,
)
from eog_core.errors import SchemaError


def _certificate(task_id: str = "a/b c") -> Certificate:
    return Certificate(
        task_id=task_id,
        task_file="tasks/a.json",
        task_sha256="00" * 32,
        status="flagged",
        findings=(
            CertificateFinding(kind="oracle_fails", detail="strict failed", mode="strict"),
            CertificateFinding(kind="verifier_insensitive", detail="x", verifier="v1"),
        ),
        checks={"static": {"kinds": []}, "oracle": None, "counterexamples": []},
        seed_files={"gym": {"path": "seed.sql", "sha256": "11" * 32}},
        created="2026-12-04T09:00:00Z",
    )


def test_written_certificate_reads_back_equal(tmp_path: Path) -> None:
    certificate = _certificate()
    path = write_certificate(certificate, tmp_path)
    assert path.name == "a_b_c.certificate.json"
    assert json.loads(path.read_text())["schema"] == CERTIFICATE_SCHEMA
    assert {"a/b c": certificate} == read_certificates(tmp_path)
    assert [path] == list(tmp_path.iterdir())  # no partial file left


def test_filename_keeps_safe_characters() -> None:
    assert certificate_filename("Task-1.x_y") == "Task-1.x_y.certificate.json"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a JSON certificate"),
        ('{"schema": "eog-certificate/2", "task_id": "t", "status": "clean"}', "schema is"),
        ('{"schema": "eog-certificate/1", "task_id": "t", "status": "fine"}', "status must be"),
        ('{"schema": "eog-certificate/1", "status": "clean"}', "task_id must be"),
    ],
)
def test_bad_certificate_is_refused_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "t.certificate.json").write_text(text)
    with pytest.raises(SchemaError, match=message) as caught:
        read_certificates(tmp_path)
    assert "t.certificate.json" in str(caught.value)


def test_status() -> None:
    finding = CertificateFinding(kind="k", detail="d")
    assert certificate_status([finding], oracle_passed=True, incomplete=True) == "incomplete"
    assert certificate_status([finding], oracle_passed=True, incomplete=False) == "flagged"
    assert certificate_status([], oracle_passed=True, incomplete=False) == "certified"
    assert certificate_status([], oracle_passed=None, incomplete=False) == "clean"
