"""The top-level names other harnesses import, and the error tree they branch on."""

from __future__ import annotations

import subprocess
import sys

import eog_core
from eog_core import errors

ISSUE_NAMES = {
    "load_task",
    "load_tasks",
    "Task",
    "SchemaError",
    "EogError",
    "PARITY",
    "STRICT",
    "extract_value",
    "compare_values",
    "verify_task",
    "TaskVerdict",
    "SqlOutcome",
    "SqliteSqlRunner",
    "GymClient",
    "TaskSession",
    "GymDirectory",
    "ToolResult",
}


def test_top_level_exports() -> None:
    assert set(eog_core.__all__) >= ISSUE_NAMES
    for name in eog_core.__all__:
        assert getattr(eog_core, name) is not None


def test_every_error_is_an_eog_error() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(cls, eog_core.EogError) for cls in classes)
    assert issubclass(errors.GymUnreachableError, errors.GymError)
    assert issubclass(errors.SeedFileError, errors.SeedError)
    error = errors.GymHTTPError(
        "HTTP 500: boom", status=500, detail="boom", gym="g", url="http://x"
    )
    assert (error.status, error.detail, error.gym) == (500, "boom", "g")


def test_pure_scoring_does_not_import_aiohttp() -> None:
    code = "import sys, eog_core; eog_core.load_task; assert 'aiohttp' not in sys.modules, 'aiohttp loaded'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_one_version_from_the_installed_metadata() -> None:
    """``__version__``, the MCP clientInfo and the local gym's serverInfo are the package's."""
    from importlib.metadata import version

    import eog_core
    from eog_core.gym._mcp_handshake import CLIENT_INFO
    from eog_core.local._server import SERVER_VERSION

    assert eog_core.__version__ == version("eog-core") == CLIENT_INFO["version"] == SERVER_VERSION


PACKAGES = [
    "eog_core",
    "eog_core.tasks",
    "eog_core.verify",
    "eog_core.gym",
    "eog_core.local",
    "eog_core.metrics",
    "eog_core.run",
    "eog_core.fleet",
    "eog_core.gateway",
    "eog_core.report",
    "eog_core.state",
    "eog_core.errors",
]


def test_every_package_all_is_sorted_unique_and_importable() -> None:
    """Each package's ``__all__`` names what it exports, once, sorted (httpx's habit)."""
    import importlib

    for name in PACKAGES:
        module = importlib.import_module(name)
        exported = list(module.__all__)
        assert len(exported) == len(set(exported)), f"{name}: a name twice"
        assert exported == sorted(
            exported, key=lambda n: (not n.isupper(), n)
        ) or exported == sorted(exported), f"{name}.__all__ is not sorted"
        for item in exported:
            assert hasattr(module, item), f"{name}.{item} is in __all__ but missing"


def test_every_public_error_is_defined_in_errors_and_exported_at_the_top() -> None:
    """errors.py promises every error: no package exports an EogError defined elsewhere."""
    import importlib

    for name in PACKAGES:
        module = importlib.import_module(name)
        for item in module.__all__:
            value = getattr(module, item)
            if isinstance(value, type) and issubclass(value, eog_core.EogError):
                assert value.__module__ == "eog_core.errors", (
                    f"{name}.{item} is defined in {value.__module__}"
                )
    assert set(errors.__all__) <= set(eog_core.__all__)
