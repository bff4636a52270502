"""A run of six tasks with known verdicts, their task files and a certificate of each status.

Made from the two real run folders of ``run_folders`` (the demo task, k = 3): the correct
run's three strict and parity successes, or the do-nothing run's three failures, under
six task ids. Shared by ``tests/report`` and ``tests/cli``.

| task id        | records  | certificate                                   | trust (with --tasks) |
|----------------|----------|-----------------------------------------------|----------------------|
| `t_certified`  | correct  | certified                                     | certified            |
| `t_clean`      | nothing  | clean                                         | clean                |
| `t_flagged`    | correct  | flagged: passes_without_action, may_truncate  | flagged              |
| `t_none`       | nothing  | none                                          | unchecked            |
| `t_stale`      | correct  | certified, of other task bytes                | unchecked (stale)    |
| `t_incomplete` | correct  | incomplete                                    | unchecked            |
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

from eog_core.certify import Certificate, CertificateFinding, write_certificate
from eog_core.local import demo_paths
from tests.report.run_folders import read_records, write_run

SOURCES = {
    "t_certified": "correct",
    "t_clean": "nothing",
    "t_flagged": "correct",
    "t_none": "nothing",
    "t_stale": "correct",
    "t_incomplete": "correct",
}
STATUSES = {
    "t_certified": "certified",
    "t_clean": "clean",
    "t_flagged": "flagged",
    "t_stale": "certified",
    "t_incomplete": "incomplete",
}
FINDINGS = (
    CertificateFinding(kind="passes_without_action", detail="passes untouched", mode="parity"),
    CertificateFinding(kind="may_truncate", detail="no LIMIT", verifier="v1"),
)


def trust_run(folders: dict[str, Path], root: Path) -> tuple[Path, Path, Path]:
    """``(run folder, task folder, certificates folder)`` under ``root``."""
    records = []
    for task_id, source in SOURCES.items():
        for record in read_records(folders[source]):
            records.append(copy.deepcopy(record) | {"task_id": task_id})
    run = write_run(root / "six", records)
    tasks = root / "tasks"
    tasks.mkdir()
    demo = json.loads(demo_paths().task.read_bytes())
    digests = {}
    for task_id in SOURCES:
        data = json.dumps(demo | {"task_id": task_id}, indent=2).encode()
        (tasks / f"{task_id}.json").write_bytes(data)
        digests[task_id] = hashlib.sha256(data).hexdigest()
    certificates = root / "certificates"
    for task_id, status in STATUSES.items():
        digest = "0" * 64 if task_id == "t_stale" else digests[task_id]
        write_certificate(
            Certificate(
                task_id=task_id,
                task_file=str(tasks / f"{task_id}.json"),
                task_sha256=digest,
                status=status,  # type: ignore[arg-type]
                findings=FINDINGS if status == "flagged" else (),
            ),
            certificates,
        )
    return run, tasks, certificates
