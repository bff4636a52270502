"""Small helpers several packages share that are not part of the public surface
(docs/api.md, "Stability"): a transcript timestamp, a percentage as the tables print
it, the deprecation of a module attribute, and writing a file whole or not at all.

They were public names of ``eog_core.run`` (``iso_time``) and ``eog_core.metrics``
(``percent``) in 0.2; those spellings still work for one release with a
``DeprecationWarning`` (:func:`deprecated_attribute`).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "deprecated_attribute", "iso_time", "percent", "warn_deprecated"]


def iso_time(epoch: float) -> str:
    """A UTC timestamp with milliseconds, as the transcript records times."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="milliseconds")


def percent(fraction: float | None) -> str:
    """A fraction as a percentage with two decimals (``0.5 -> "50.00"``); ``-`` for none."""
    return "-" if fraction is None else f"{fraction * 100.0:.2f}"


def warn_deprecated(old: str, instead: str, *, stacklevel: int = 2) -> None:
    """The one wording of a deprecation: ``old`` goes in the next release, ``instead``
    says what to write (``stacklevel`` counts from the caller of this function)."""
    warnings.warn(
        f"{old} is deprecated and goes in the next release: {instead}",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def deprecated_attribute(
    module: str, names: Mapping[str, tuple[Callable[[], Any], str]]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each deprecated ``name`` (not in ``__all__``) with a
    ``DeprecationWarning`` naming its replacement: ``names[name]`` is (a function giving
    the object, the new spelling)."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value, instead = names[name]
        warn_deprecated(f"{module}.{name}", instead)
        return value()

    return __getattr__


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a ``.partial-*`` file beside it, renamed into place
    (a kill leaves at most that file, which the next run's reader removes or ignores)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
