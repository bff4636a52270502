"""The top-level names other harnesses import, and the error tree they branch on."""

from __future__ import annotations

import subprocess
import sys

import eog_core
from eog_core import errors

ISSUE_NAMES = {
    "load_task", "load_tasks", "Task", "SchemaError", "EogError", "PARITY", "STRICT", "extract_value",
    "compare_values", "verify_task", "TaskVerdict", "SqlOutcome", "SqliteSqlRunner",
    "GymClient", "TaskSession", "GymDirectory", "ToolResult",
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
    error = errors.GymHTTPError("HTTP 500: boom", status=500, detail="boom", gym="g", url="http://x")
    assert (error.status, error.detail, error.gym) == (500, "boom", "g")


def test_pure_scoring_does_not_import_aiohttp() -> None:
    code = "import sys, eog_core; eog_core.load_task; assert 'aiohttp' not in sys.modules, 'aiohttp loaded'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_one_version_from_the_installed_metadata() -> None:
    """``__version__``, the MCP clientInfo and the local gym's serverInfo are the package's."""
    from importlib.metadata import version

    import eog_core
    from eog_core.gym._mcp import CLIENT_INFO
    from eog_core.local._server import SERVER_VERSION

    assert eog_core.__version__ == version("eog-core") == CLIENT_INFO["version"] == SERVER_VERSION
