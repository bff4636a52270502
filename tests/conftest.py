"""Shared fixtures: where the real benchmark data lives."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

# Property tests: few examples by default (the suite runs under CPU contention),
# many under HYPOTHESIS_PROFILE=ci (``nox -s properties``). No deadlines: a slow
# example on a loaded machine is not a failure.
settings.register_profile(
    "dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

if TYPE_CHECKING:
    from tests.datasets import DataSet

REPO = Path(__file__).resolve().parent.parent
EOG_DATA = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))


def require_eog_data() -> Path:
    """The shared data folder; in CI its absence fails the test instead of skipping it."""
    if EOG_DATA.is_dir():
        return EOG_DATA
    message = (
        f"benchmark data not found at {EOG_DATA}: to run this test, set EOG_DATA_DIR to an "
        "eog-data folder (tasks/, nemo-rows/, tools/, fixtures/; docs/formats.md, section "
        "'The benchmark data folder', says where each part comes from) or place it at "
        "../shared/eog-data beside the clone"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def _data_layer_skips() -> bool:
    return not EOG_DATA.is_dir() and os.environ.get("CI", "").lower() != "true"


def pytest_configure(config: pytest.Config) -> None:
    """Without the data, its tests skip and their committed snapshots are not judged.

    syrupy fails a run on unused snapshots (newer versions spare those of skipped
    tests, older ones do not), and ``--snapshot-update`` would delete them: so
    without the data unused snapshots only warn, and updating is refused.
    """
    if not _data_layer_skips():
        return
    if getattr(config.option, "update_snapshots", False):
        raise pytest.UsageError(
            f"--snapshot-update without the benchmark data ({EOG_DATA}) would delete the committed "
            "snapshots of the data tests: set EOG_DATA_DIR to the eog-data folder first"
        )
    config.option.warn_unused_snapshots = True


def pytest_report_header(config: pytest.Config) -> str | None:
    if _data_layer_skips():
        return (
            f"benchmark data not found at {EOG_DATA}: its tests skip and their snapshots are not "
            "judged (set EOG_DATA_DIR to run them; CI=true makes the absence a failure)"
        )
    return None


@pytest.fixture(scope="session")
def eog_data() -> Path:
    return require_eog_data()


@pytest.fixture(params=["examples", "eog-data"])
def dataset(request: pytest.FixtureRequest) -> DataSet:
    """Our own example data, then the real data (which skips, or fails in CI, when absent)."""
    from tests.datasets import DATA_SETS

    data = DATA_SETS[request.param]
    _ = data.root  # skips or fails now, before the test starts
    return data


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests ``tests/lanes.py`` lists as ``slow`` (the fast lane leaves them out)."""
    from tests.lanes import SAMPLED, SLOW

    slow = pytest.mark.slow
    seen = dict.fromkeys(SAMPLED, 0)
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(slow)
            continue
        for prefix, every in SAMPLED.items():
            if item.nodeid.startswith(prefix):
                if seen[prefix] % every:
                    item.add_marker(slow)
                seen[prefix] += 1
