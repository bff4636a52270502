"""The ``stack`` fixture: one NeMo Gym stack for the whole run (see ``stack.py``): NeMo
Gym's HTTP client is process-wide and stays on the event loop of the first stack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests_integrations.nemo_gym.stack import Stack, running_stack


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    with running_stack() as running:
        yield running
