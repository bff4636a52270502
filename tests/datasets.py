"""The two data sets the data tests run on: our own examples (always) and the real data.

``examples/`` in the repository is a small synthetic data set in every format
we read; the real benchmark data (``../shared/eog-data`` or ``EOG_DATA_DIR``)
is the extra layer, skipped without the folder (failed with ``CI=true``).
Each data set states the counts the tests expect of it.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from tests.conftest import REPO, require_eog_data

EXAMPLES = REPO / "examples"


@attrs.frozen(kw_only=True)
class DataSet:
    name: str
    upstream_files: int
    upstream_verifiers: int
    domains: frozenset[str]
    nemo_tasks: int  # rows and rollouts together
    rollout_file: str
    rollouts: int
    hybrid_file: str
    csm_rows_file: str
    itsm_rows_file: str
    tools_total: int
    valid_in_validate: int
    verifiers_in_validate: int

    @property
    def root(self) -> Path:
        return EXAMPLES if self.name == "examples" else require_eog_data()


EXAMPLE_SET = DataSet(
    name="examples",
    upstream_files=3,
    upstream_verifiers=9,
    domains=frozenset({"csm", "itsm"}),
    nemo_tasks=6,
    rollout_file="example_rollouts.jsonl",
    rollouts=2,
    hybrid_file="hybrid_example.jsonl",
    csm_rows_file="csm_rows.jsonl",
    itsm_rows_file="itsm_rows.jsonl",
    tools_total=21,
    valid_in_validate=9,
    verifiers_in_validate=28,
)
REAL_SET = DataSet(
    name="eog-data",
    upstream_files=13,
    upstream_verifiers=102,
    domains=frozenset({"csm", "itsm"}),
    nemo_tasks=19,
    rollout_file="example_rollouts.jsonl",
    rollouts=5,
    hybrid_file="hybrid_synthetic.jsonl",
    csm_rows_file="csm_revised.jsonl",
    itsm_rows_file="itsm_revised.jsonl",
    tools_total=512,
    valid_in_validate=32,
    verifiers_in_validate=240,
)
DATA_SETS = {data.name: data for data in (EXAMPLE_SET, REAL_SET)}


def upstream_files(root: Path) -> list[Path]:
    return sorted((root / "tasks").rglob("*.json"))
