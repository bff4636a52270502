"""The 0.1 methods of the task records, kept for one release with a ``DeprecationWarning``.

0.2 made :class:`Task` and :class:`AuthConfig` plain data (``_schema`` imports neither
the converter nor the writer, which import it). This module imports all three and
attaches the old spellings to the classes, so the methods work again without the
``_schema`` -> ``_convert`` import coming back (``tests/test_layering.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eog_core._plumbing import warn_deprecated
from eog_core.tasks._convert import structure_or_raise
from eog_core.tasks._formats import task_from_mapping
from eog_core.tasks._schema import AuthConfig, Task
from eog_core.tasks._write import to_upstream

__all__: list[str] = []


def _warn(old: str, new: str) -> None:
    warn_deprecated(old, f"use {new}", stacklevel=3)


def _task_from_upstream(
    cls: type[Task], obj: Mapping[str, Any], *, source: str | None = None
) -> Task:
    """Deprecated: :func:`eog_core.tasks.task_from_mapping`."""
    _warn("Task.from_upstream(obj)", "eog_core.tasks.task_from_mapping(obj)")
    return task_from_mapping(obj, source=source)


def _task_to_upstream(self: Task) -> dict[str, Any]:
    """Deprecated: :func:`eog_core.tasks.to_upstream`."""
    _warn("task.to_upstream()", "eog_core.tasks.to_upstream(task)")
    return to_upstream(self)


def _auth_from_upstream(
    cls: type[AuthConfig], config: Mapping[str, Any], *, source: str | None = None
) -> AuthConfig:
    """Deprecated: :func:`eog_core.tasks.structure_or_raise`."""
    _warn(
        "AuthConfig.from_upstream(config)",
        "eog_core.tasks.structure_or_raise(config, AuthConfig)",
    )
    return structure_or_raise(config, cls, source=source)


# setattr, not assignment: the classes are frozen attrs records whose type mypy knows; the
# old methods are attached for callers of 0.1, not part of the typed surface.
setattr(Task, "from_upstream", classmethod(_task_from_upstream))  # noqa: B010
setattr(Task, "to_upstream", _task_to_upstream)  # noqa: B010
setattr(AuthConfig, "from_upstream", classmethod(_auth_from_upstream))  # noqa: B010
