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
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=1000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

if TYPE_CHECKING:
    from tests.datasets import DataSet

REPO = Path(__file__).resolve().parent.parent
EOG_DATA = Path(os.environ.get("EOG_DATA_DIR", REPO.parent / "shared" / "eog-data"))


def require_eog_data() -> Path:
    """The shared data folder; in CI its absence fails the test instead of skipping it."""
    if EOG_DATA.is_dir():
        return EOG_DATA
    message = (f"benchmark data not found at {EOG_DATA}: to run this test, set EOG_DATA_DIR to an "
               "eog-data folder (tasks/, nemo-rows/, tools/, fixtures/; docs/formats.md, section "
               "'The benchmark data folder', says where each part comes from) or place it at "
               "../shared/eog-data beside the clone")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


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
