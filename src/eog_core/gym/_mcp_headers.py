"""The headers of an MCP session's requests: the session id and protocol-version
headers the spec asks for, and the merged header sets of the fast path, built once
per caller's headers object (building them is a good part of a request's client CPU).

Free of session state: :mod:`eog_core.gym._mcp` owns one :class:`MergedHeaders`
per session and resets it when the session changes.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from eog_core._mcp_protocol import VERSION_HEADER_FROM

__all__ = ["ACCEPT", "MergedHeaders", "session_headers"]

ACCEPT = "application/json, text/event-stream"
_MERGED_MAX = 1024  # cached header sets per session (a few per task in flight)
_NO_HEADERS: Mapping[str, str] = {}


def session_headers(session_id: str | None, version: str | None) -> dict[str, str]:
    """``mcp-session-id`` when there is a session, ``MCP-Protocol-Version`` from the
    version that introduced it on."""
    headers: dict[str, str] = {}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    if version is not None and version >= VERSION_HEADER_FROM:
        headers["MCP-Protocol-Version"] = version
    return headers


@attrs.define(eq=False)
class MergedHeaders:
    """A request's whole headers: the credentials, the caller's and ``fixed``
    (``Accept`` and the session's headers), cached by the caller's headers object."""

    fixed: dict[str, str] = attrs.field(factory=dict)
    _merged: dict[int, tuple[Mapping[str, str], CIMultiDictProxy[str]]] = attrs.field(
        factory=dict, init=False, repr=False
    )

    def reset(self, session_id: str | None, version: str | None) -> None:
        """The headers of session ``session_id`` from now on; the cache is emptied."""
        self.fixed = {"Accept": ACCEPT, **session_headers(session_id, version)}
        self._merged.clear()

    def merge(self, base: Mapping[str, str], headers: Mapping[str, str]) -> CIMultiDictProxy[str]:
        """``headers`` with ``base`` and the fixed headers, as aiohttp sends them. A caller
        sending the same headers object again (a task's calls) gets the same read-only
        result; never mutate a headers object after passing it."""
        if not headers:
            headers = _NO_HEADERS  # one entry for every caller without headers
        merged = self._merged.get(id(headers))
        if merged is not None and merged[0] is headers:  # the entry keeps its key alive
            return merged[1]
        whole = CIMultiDictProxy(CIMultiDict({**base, **headers, **self.fixed}))
        if len(self._merged) >= _MERGED_MAX:
            self._merged.clear()
        self._merged[id(headers)] = (headers, whole)
        return whole
