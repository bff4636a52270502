"""The adapter suites run in their own nox virtualenvs, never in the default suite."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Warnings stay errors for eog_core and the tests; the frameworks' own dependencies
    # warn about each other's deprecations (tenacity under inspect-ai), which is not ours.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning")
    config.addinivalue_line("filterwarnings", "error::DeprecationWarning:eog_core")
    config.addinivalue_line("filterwarnings", "error::DeprecationWarning:tests_integrations")
    # NeMo Gym's reward profiler warns when a confidence interval collapses (two rollouts).
    config.addinivalue_line("filterwarnings", "ignore:Standard error is 0:UserWarning")
    # inspect-ai leaves an anyio memory stream of its own unclosed at the end of eval().
    config.addinivalue_line(
        "filterwarnings",
        "ignore:Exception ignored in.*MemoryObjectReceiveStream:pytest.PytestUnraisableExceptionWarning",
    )
