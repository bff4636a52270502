"""What each package exports (httpx's exported-members test), and one meaning per public name."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from types import ModuleType
from typing import Any

import pytest

import eog_core

PACKAGES = [
    "eog_core",
    "eog_core.cli",
    "eog_core.errors",
    "eog_core.fleet",
    "eog_core.gateway",
    "eog_core.gym",
    "eog_core.integrations",
    "eog_core.local",
    "eog_core.metrics",
    "eog_core.report",
    "eog_core.run",
    "eog_core.tasks",
    "eog_core.verify",
]


def _package(name: str) -> ModuleType:
    return importlib.import_module(name)


def _all_modules() -> list[ModuleType]:
    """Every module of ``eog_core`` that imports here (an adapter whose framework is not
    installed does not; its own nox session imports it)."""
    found = []
    for info in pkgutil.walk_packages(eog_core.__path__, "eog_core."):
        if info.name == "eog_core.__main__":  # runs the command line
            continue
        try:
            found.append(importlib.import_module(info.name))
        except ImportError as exc:
            if (exc.name or "").startswith("eog_core"):
                raise
    return found


def _exported_objects() -> set[int]:
    """The objects some module of ours lists in its ``__all__`` (constants included)."""
    return {
        id(getattr(module, name))
        for module in _all_modules()
        for name in getattr(module, "__all__", ())
        if hasattr(module, name)
    }


def _ours(value: Any, exported: set[int]) -> bool:
    """Defined in eog_core: a class or function of one of its modules, or a value one of
    its modules exports; never a module, nor a name of another library."""
    if isinstance(value, ModuleType):
        return False
    if hasattr(value, "__qualname__") and str(getattr(value, "__module__", "")).startswith(
        "eog_core"
    ):
        return True
    return id(value) in exported


def test_every_module_declares_a_sorted_all_of_names_it_has() -> None:
    for module in _all_modules():
        exported = getattr(module, "__all__", None)
        assert exported is not None, f"{module.__name__} has no __all__"
        assert len(exported) == len(set(exported)), f"{module.__name__}: a name twice"
        assert exported in (
            sorted(exported),
            sorted(exported, key=lambda n: (not n.isupper(), n)),
        ), f"{module.__name__}.__all__ is not sorted"
        missing = [name for name in exported if not hasattr(module, name)]
        assert not missing, f"{module.__name__}.__all__ names what it lacks: {missing}"


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_exactly_the_public_names_of_ours_in_the_package(package: str) -> None:
    """httpx's exported-members test: every public name of ours a package holds is in its
    ``__all__`` (an import used only inside ``__init__`` is private or moves out), and
    every name in ``__all__`` is ours, defined or re-exported on purpose."""
    module, exported = _package(package), _exported_objects()
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and _ours(value, exported)
    }
    assert sorted(public - set(module.__all__)) == [], "public but not in __all__"
    foreign = [name for name in module.__all__ if not _ours(getattr(module, name), exported)]
    assert foreign == [], "in __all__ but not defined in eog_core"


def test_the_exported_members_check_can_fail() -> None:
    """A stray import into a package's namespace is caught; a module or another library's
    name is not taken for ours."""
    exported = _exported_objects()
    assert (
        not _ours(sys, exported)
        and not _ours(Any, exported)
        and not _ours(importlib.import_module, exported)
    )
    assert _ours(eog_core.Task, exported) and _ours(eog_core.PARITY, exported)
    from eog_core.tasks import DEFAULT_GYMS

    assert _ours(DEFAULT_GYMS, exported)


def test_no_public_name_means_two_things() -> None:
    """A name two packages export is one object (a re-export), never two."""
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for package in PACKAGES:
        module = _package(package)
        for name in module.__all__:
            value = getattr(module, name)
            if name in seen and seen[name][1] is not value:
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
