"""The installed distribution's version: one source, the package metadata (as stamina does)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("eog-core")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
