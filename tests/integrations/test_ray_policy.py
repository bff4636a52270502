"""The Ray adapter's worker takes the policy names every other entry point takes, and no others."""

from __future__ import annotations

import pytest

from eog_core.errors import UsageError
from eog_core.integrations.ray import EogWorker


@pytest.mark.parametrize("name", ["PARITY", "Parity", "parityy", "", "both"])
def test_an_unknown_policy_name_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="policy must be 'strict' or 'parity'"):
        EogWorker({"gym-a": "http://127.0.0.1:9"}, policy=name)


@pytest.mark.parametrize("name", ["strict", "parity"])
def test_the_known_names_build_a_worker(name: str) -> None:
    assert EogWorker({"gym-a": "http://127.0.0.1:9"}, policy=name).name
