"""The URLs and headers of one gym client's requests, each built once and reused.

A task's calls repeat the same database and context, and every request the same
credentials: building their headers once per task, not once per call, is most of
a tool call's client-side cost after the JSON itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from eog_core._sqlguard import READ_ONLY_HEADER
from eog_core.gym._headers import (
    AuthConfig,
    HeaderMode,
    auth_headers,
    checked_header,
    shared_context_headers,
)

__all__ = ["RequestMemo"]

_NO_CONTEXT: Mapping[str, Any] = {}


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class RequestMemo:
    """A client's request URLs (per path) and headers (the last call's, the credential's and
    the last verifier query's). Never mutate what it returns: later requests share it."""

    base_url: str
    _urls: dict[str, str] = attrs.field(factory=dict, init=False)
    _call: tuple[dict[str, str] | None, str | None, dict[str, str]] | None = attrs.field(
        default=None, init=False
    )
    _auth: tuple[AuthConfig | None, Mapping[str, str]] | None = attrs.field(
        default=None, init=False
    )
    _sql: tuple[dict[str, str], Mapping[str, str], bool, CIMultiDictProxy[str]] | None = (
        attrs.field(default=None, init=False)
    )

    def url(self, path: str) -> str:
        url = self._urls.get(path)
        if url is None:
            url = (
                path
                if path.startswith(("http://", "https://"))
                else (f"{self.base_url}/{path.lstrip('/')}")
            )
            self._urls[path] = url
        return url

    def auth_headers(self, auth: AuthConfig | None) -> Mapping[str, str]:
        """The credential header, computed once per ``auth``."""
        memo = self._auth
        if memo is None or memo[0] is not auth:
            memo = self._auth = (auth, MappingProxyType(auth_headers(auth)))
        return memo[1]

    def call_headers(
        self, database_id: str | None, context: Mapping[str, Any] | None, mode: HeaderMode
    ) -> dict[str, str]:
        """The headers of one call: the database and the context (shared by a task's calls)."""
        memo = self._call
        if memo is not None and memo[1] == database_id and memo[0] == (context or _NO_CONTEXT):
            return memo[2]  # a task's calls repeat the same context and database
        headers = dict(shared_context_headers(context, mode=mode))
        if database_id is not None:
            headers["x-database-id"] = checked_header("x-database-id", database_id)
        # Kept for the next call only when every key and value is text: a context equal
        # to a copy of it then means the same headers (1, 1.0 and True are equal but
        # read differently; a dict changed in place no longer equals the copy).
        plain = all(type(k) is str and type(v) is str for k, v in (context or {}).items())
        self._call = (dict(context or {}) if plain else None, database_id, headers)
        return headers

    def sql_headers(
        self,
        database_id: str | None,
        context: Mapping[str, Any] | None,
        mode: HeaderMode,
        auth: AuthConfig | None,
        read_only: bool,
    ) -> Mapping[str, str]:
        """A verifier query's headers (credential, database, context, read-only flag)."""
        call, credential = self.call_headers(database_id, context, mode), self.auth_headers(auth)
        memo = self._sql
        if memo is not None and memo[0] is call and memo[1] is credential and memo[2] == read_only:
            return memo[3]
        headers = {**credential, **call}
        if read_only:
            headers[READ_ONLY_HEADER] = "1"
        whole = CIMultiDictProxy(CIMultiDict(headers))
        self._sql = (call, credential, read_only, whole)
        return whole
