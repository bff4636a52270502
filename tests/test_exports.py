"""What each package exports (httpx's exported-members test), and one meaning per public name."""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

import pytest

PACKAGES = ["eog_core", "eog_core.cli", "eog_core.errors", "eog_core.fleet", "eog_core.gateway",
            "eog_core.gym", "eog_core.integrations", "eog_core.local", "eog_core.metrics",
            "eog_core.report", "eog_core.run", "eog_core.tasks", "eog_core.verify"]

#: Defined twice today; the protocol-version work of #20 (gym/_mcp.py) makes it one constant.
PENDING_CLASHES = frozenset({"SUPPORTED_PROTOCOL_VERSIONS"})


def _package(name: str) -> ModuleType:
    return importlib.import_module(name)


def test_no_public_name_means_two_things() -> None:
    """A name two packages export is one object (a re-export), never two."""
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for package in PACKAGES:
        module = _package(package)
        for name in module.__all__:
            value = getattr(module, name)
            if name in seen and seen[name][1] is not value and name not in PENDING_CLASHES:
                clashes.append(f"{name}: {seen[name][0]} and {package}")
            seen.setdefault(name, (package, value))
    assert not clashes


def test_the_old_name_of_run_comparison_is_deprecated() -> None:
    from eog_core import metrics, verify

    with pytest.warns(DeprecationWarning, match="use RunComparison"):
        old = metrics.Comparison
    assert old is metrics.RunComparison
    assert verify.Comparison is not metrics.RunComparison
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'Comparisons'"):
            _ = metrics.Comparisons
