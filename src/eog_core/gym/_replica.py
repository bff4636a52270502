"""A gym directory's table: the replicas of each gym, read from code, a file or the
environment (``GymDirectory``'s constructors), and the lease a session holds."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from eog_core._redact import redacted_url_repr
from eog_core.errors import SchemaError
from eog_core.tasks import DEFAULT_GYMS

__all__ = ["ENV_PREFIX", "Lease", "Replica", "read_table", "table_from_env", "urls_of"]

ENV_PREFIX = "EOG_GYM_"


@attrs.define(kw_only=True)
class Replica:
    """One server of a gym and its bookkeeping."""

    gym: str
    url: str = attrs.field(repr=redacted_url_repr)
    active: int = 0
    lifecycles: int = 0
    down_since: float | None = None
    retired: bool = False
    seeding: int = 0
    """Seeds running on this replica now (at most the directory's ``max_concurrent_seeds``)."""
    seeds_waiting: int = 0
    """Seeds waiting for one of those slots."""


@attrs.frozen(kw_only=True)
class Lease:
    """A replica handed to one task session; give it back with :meth:`GymDirectory.release`."""

    gym: str
    url: str = attrs.field(repr=redacted_url_repr)


def urls_of(value: object, gym: object) -> list[str]:
    """A directory entry's replica URLs: one URL, a comma-separated list or a list."""
    if not isinstance(gym, str) or not gym:
        raise SchemaError(f"gym names must be non-empty strings, got {gym!r}")
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise SchemaError(f"expected a URL or a list of URLs, got {value!r}", path=f"$.{gym}")
    urls: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item.strip().startswith(("http://", "https://")):
            raise SchemaError(f"expected an http(s) URL, got {item!r}", path=f"$.{gym}[{index}]")
        urls.append(item.strip().rstrip("/"))
    if not urls:
        raise SchemaError("no URL given", path=f"$.{gym}")
    return urls


def read_table(source: Path) -> dict[str, Any]:
    """``{"gym": "url" | ["url", ...]}`` from a JSON or TOML file (TOML: a ``[gyms]`` table)."""
    try:
        text = source.read_text(encoding="utf-8")
        data = tomllib.loads(text) if source.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot read gym directory: {exc}", source=str(source)) from exc
    if isinstance(data, dict) and isinstance(data.get("gyms"), dict):
        data = data["gyms"]
    if not isinstance(data, dict):
        raise SchemaError("expected an object of gym name -> URL(s)", source=str(source))
    return data


def table_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``EOG_GYM_<NAME>=url[,url...]`` variables (name upper-cased, ``-`` as ``_``)."""
    known = {gym.upper().replace("-", "_"): gym for gym in DEFAULT_GYMS}
    table: dict[str, str] = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX) and value.strip():
            token = key[len(ENV_PREFIX) :]
            table[known.get(token, token.lower().replace("_", "-"))] = value
    return table
