"""The async client of one gym server: MCP tools plus the REST database endpoints."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any

import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from eog_core._redact import redact_url, redacted_url_repr
from eog_core._sqlguard import READ_ONLY_HEADER
from eog_core.errors import (
    ClosedError,
    GymError,
    GymHTTPError,
    GymProtocolError,
    JsonRpcError,
    UsageError,
)
from eog_core.gym._headers import (
    AuthConfig,
    HeaderMode,
    auth_headers,
    checked_header,
    shared_context_headers,
)
from eog_core.gym._mcp import McpSession
from eog_core.gym._records import Timeouts, ToolResult, new_database_id, seed_timeout
from eog_core.gym._sql_answer import sql_answer, sql_error_text
from eog_core.gym._transport import (
    AiohttpTransport,
    HttpRequest,
    HttpResponse,
    Pool,
    Transport,
    lease_pool,
    release_pool,
)
from eog_core.tasks import ToolSpec
from eog_core.verify._outcome import ErrorKind, SqlOutcome

__all__ = ["GymClient", "Timeouts", "ToolResult", "new_database_id", "seed_timeout"]

log = logging.getLogger("eog_core.gym")

_MAX_TOOL_PAGES = 1000
_NO_CONTENT: list[Any] = []  # a result without "content" has none (never mutated)
_NO_CONTEXT: Mapping[str, Any] = {}
# SQL runner statuses that are no verdict on the query: a busy or unavailable gym
# (or its gateway), or a database / endpoint that is not there (404).
_UNAVAILABLE = frozenset({404, 408, 429, 502, 503, 504})
_REFUSED = frozenset({401, 403})  # our credentials: a configuration failure


def _normalize_url(url: object) -> str:
    return str(url).rstrip("/")


@attrs.define(on_setattr=attrs.setters.NO_OP)  # set per request: no hooks on assignment
class GymClient:
    """Talks to one gym: ``async with GymClient("http://localhost:8001") as gym: ...``.

    Per-call headers (``x-database-id``, context, auth) go on each request,
    never on the connection; connections come from the shared pool. With
    ``shared_session=True`` the client uses the one MCP session that every
    sharing client of this replica (same URL, credentials and protocol version)
    on this event loop uses, and its cached tool list; closing the client leaves
    that session open, and the connection pool ends it (``DELETE``) when it
    closes. Otherwise the client has its own session, ended when it closes.
    With ``server_stream=True`` the session also opens MCP's standalone ``GET``
    stream and answers the server's requests sent there (off by default: without
    it a tool whose server pings on that stream hangs until ``Timeouts.rpc``).
    """

    base_url: str = attrs.field(converter=_normalize_url, repr=redacted_url_repr)
    name: str | None = attrs.field(default=None, kw_only=True)
    mcp_endpoint: str = attrs.field(default="/mcp", kw_only=True)
    auth: AuthConfig | None = attrs.field(default=None, kw_only=True)
    transport: Transport | None = attrs.field(default=None, kw_only=True)
    timeouts: Timeouts = attrs.field(factory=Timeouts, kw_only=True)
    protocol_version: str = attrs.field(default="2025-06-18", kw_only=True)
    header_mode: HeaderMode = attrs.field(default="strict", kw_only=True)
    shared_session: bool = attrs.field(default=False, kw_only=True)
    server_stream: bool = attrs.field(default=False, kw_only=True)
    _transport: Transport = attrs.field(init=False, repr=False)
    _mcp: McpSession | None = attrs.field(default=None, init=False, repr=False)
    _pool: Pool | None = attrs.field(default=None, init=False, repr=False)
    _closed: bool = attrs.field(default=False, init=False, repr=False)
    _calls: dict[asyncio.Task[Any], int] = attrs.field(factory=dict, init=False, repr=False)
    """Tasks with requests in flight, and how many each."""
    _stopped: set[asyncio.Task[Any]] = attrs.field(factory=set, init=False, repr=False)
    """Tasks that closing cancelled: their request ends with :class:`ClosedError`."""
    _leaving: dict[asyncio.Task[Any], asyncio.Future[None]] = attrs.field(
        factory=dict, init=False, repr=False)
    """For each stopped task, a future set once its requests have left (closing waits)."""
    _headers_memo: tuple[dict[str, str] | None, str | None, dict[str, str]] | None = (
        attrs.field(default=None, init=False, repr=False))
    _urls: dict[str, str] = attrs.field(factory=dict, init=False, repr=False)
    _auth_memo: tuple[AuthConfig | None, Mapping[str, str]] | None = attrs.field(
        default=None, init=False, repr=False)
    _sql_memo: tuple[dict[str, str], Mapping[str, str], bool, CIMultiDictProxy[str]] | None = (
        attrs.field(default=None, init=False, repr=False))

    def __attrs_post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise UsageError(f"gym base_url must be an http(s) URL, got {redact_url(self.base_url)!r}")
        self._transport = self.transport if self.transport is not None else AiohttpTransport()
        if not self.shared_session:
            self._mcp = self._new_session(self._transport)

    async def __aenter__(self) -> GymClient:
        self._check_open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def session_id(self) -> str | None:
        """The current MCP session id (None before the handshake)."""
        return None if self._mcp is None else self._mcp.session_id

    @property
    def negotiated_version(self) -> str | None:
        """The protocol version the server chose (None before the handshake)."""
        return None if self._mcp is None else self._mcp.negotiated_version

    async def aclose(self) -> None:
        """End the client's own MCP session (best effort) or leave the shared one; release the
        connection pool. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._calls:
            await self._stop_calls()
        mcp, pool = self._mcp, self._pool
        self._pool = None
        try:
            if self.shared_session:
                self._mcp = None  # the pool ends the shared session when it closes
                if pool is not None:
                    await release_pool(pool)
            elif mcp is not None:
                await mcp.close(time_limit=self.timeouts.admin)
        finally:
            if self.transport is None:  # we made it, so we close it
                await self._transport.aclose()

    async def list_tools(self, *, refresh: bool = False) -> list[dict[str, Any]]:
        """Every tool the server offers, following ``nextCursor`` pages.

        With a shared MCP session the answer is cached with it: one listing per
        replica for every sharing client, until ``refresh=True`` lists again (or
        the session is re-initialized). Treat the returned tool objects as
        read-only. A client with its own session lists every time.
        """
        self._check_open()
        if not self.shared_session:
            return await self._fetch_tools()
        return list(await self._shared_tools(refresh))

    async def list_tool_specs(self, *, refresh: bool = False) -> list[ToolSpec]:
        """:meth:`list_tools` read as :class:`ToolSpec` records of this client's gym, cached
        alike (a task session reads them once per replica, not once per task)."""
        return list(await self.cached_tool_specs(refresh=refresh))

    async def cached_tool_specs(self, *, refresh: bool = False) -> Sequence[ToolSpec]:
        """:meth:`list_tool_specs` without the copy: with a shared session, the cached
        list itself (the same object until the tools are listed again; never mutate it)."""
        self._check_open()
        if not self.shared_session:
            return [ToolSpec.from_mcp(tool, gym=self.name) for tool in await self._fetch_tools()]
        source = await self._shared_tools(refresh)
        mcp = self._session()
        key = ("tool_specs", self.name)
        cached = mcp.derived.get(key)
        if cached is None or cached[0] is not source:  # the list it was read from is kept alive
            cached = mcp.derived[key] = (source, [ToolSpec.from_mcp(t, gym=self.name) for t in source])
        specs: list[ToolSpec] = cached[1]
        return specs

    async def _shared_tools(self, refresh: bool) -> list[dict[str, Any]]:
        """The shared session's cached tool list (listed once, or again on ``refresh``)."""
        mcp = self._session()
        if not refresh and mcp.tools is not None:
            return mcp.tools
        async with mcp.tools_lock:
            if refresh or mcp.tools is None:
                mcp.tools = await self._fetch_tools()
            return mcp.tools

    async def _fetch_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_TOOL_PAGES):
            params = {} if cursor is None else {"cursor": cursor}
            result = await self._rpc("tools/list", params, {}, idempotent=True)
            page = result.get("tools")
            if not isinstance(page, list):
                raise self._protocol_error("tools/list answered without a tools list")
            tools.extend(tool for tool in page if isinstance(tool, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
            if not isinstance(cursor, str):
                raise self._protocol_error(f"tools/list answered a non-string cursor {cursor!r}")
            if cursor in seen:
                raise self._protocol_error(f"tools/list repeated cursor {cursor!r}")
            seen.add(cursor)
        raise self._protocol_error(f"tools/list gave more than {_MAX_TOOL_PAGES} pages")

    def _new_session(self, transport: Transport) -> McpSession:
        return McpSession(
            transport=transport,
            url=self._url(self.mcp_endpoint),
            gym=self.name,
            protocol_version=self.protocol_version,
            connect_timeout=self.timeouts.connect,
            base_headers=self._auth_headers(),
            close_timeout=self.timeouts.admin,
            listen=self.server_stream,
        )

    def _session(self) -> McpSession:
        """This client's MCP session; a shared one is looked up (or made) in the loop's pool."""
        mcp = self._mcp
        if mcp is not None and (not self.shared_session or
                                (self._pool is not None and self._pool.usable())):
            return mcp
        # First use, or a new event loop: the old loop's pool (and the shared
        # session it held) closed with that loop.
        pool = self._pool = lease_pool()
        base = self._auth_headers()
        key = (
            "mcp",
            self._url(self.mcp_endpoint),
            self.name,
            self.protocol_version,
            tuple(sorted(base.items())),
            self.timeouts.connect,
            None if self.transport is None else id(self.transport),
            self.server_stream,
        )
        found = pool.shared.get(key)
        if isinstance(found, McpSession):
            mcp = found
        else:
            mcp = self._new_session(
                self.transport if self.transport is not None else AiohttpTransport.on_pool(pool)
            )
            pool.shared[key] = mcp
        self._mcp = mcp
        return mcp

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        database_id: str | None,
        context: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Call one tool against ``database_id``; never re-sent once it may have run."""
        headers = self._call_headers(database_id, context)
        params = {"name": name, "arguments": dict(arguments or {})}
        result = await self._rpc("tools/call", params, headers, idempotent=False)
        if not isinstance(result.get("content", _NO_CONTENT), list) or not isinstance(
                result.get("isError", False), bool):
            raise self._protocol_error("tools/call answered a result without a content list")
        return ToolResult.from_result(result)

    async def run_sql(
        self,
        query: str,
        *,
        database_id: str | None,
        context: Mapping[str, Any] | None = None,
        read_only: bool = False,
    ) -> SqlOutcome:
        """Run a verifier query via ``/api/sql-runner``; failures come back as outcomes.

        ``read_only`` asks the gym to refuse writes (the ``x-eog-read-only``
        header: LocalGym enforces it, other gyms ignore it).
        """
        request = self._rest(
            "POST",
            "/api/sql-runner",
            {"query": query, "database_id": database_id},
            headers=self._sql_headers(database_id, context, read_only),
            timeout=self.timeouts.sql,
            idempotent=True,
            raw_body=True,
        )
        try:
            response = await self._send(request)
        except GymHTTPError as exc:
            kind: ErrorKind = "database"
            if exc.status in _UNAVAILABLE:
                kind = "transport"
            elif exc.status in _REFUSED:
                kind = "config"
            return SqlOutcome.failed(sql_error_text(exc.status, exc.raw), kind=kind,
                                     status=exc.status)
        except GymError as exc:
            return SqlOutcome.failed(str(exc), kind="transport")
        return sql_answer(response.raw)

    async def seed_database(
        self,
        sql: str,
        *,
        database_id: str | None = None,
        name: str = "eog_core seed",
        description: str = "Seeded by eog_core",
    ) -> str:
        """Create a database from a SQL dump; return its id (generated when not given)."""
        database_id = database_id or new_database_id()
        body = {
            "database_id": database_id,
            "name": name,
            "description": description,
            "sql_content": sql,
        }
        timeout = self.timeouts.seed if self.timeouts.seed is not None else seed_timeout(sql)
        request = self._rest(
            "POST",
            "/api/seed-database",
            body,
            headers=self._auth_headers(),
            timeout=timeout,
            idempotent=False,
            raw_body=True,  # a 2xx status is the answer: the body is not read
        )
        await self._send(request)
        return database_id

    async def delete_database(self, database_id: str, *, missing_ok: bool = True) -> bool:
        """Drop a database; False when the gym does not support deletion (404/405).

        With ``missing_ok=False`` a 404 raises :class:`GymHTTPError`: a database
        whose seed may still be loading is not gone because it is not there yet.
        """
        request = self._rest(
            "DELETE",
            "/api/delete-database",
            {"database_id": database_id},
            headers=self._auth_headers(),
            timeout=self.timeouts.admin,
            idempotent=True,
            raw_body=True,  # a 2xx status is the answer: the body is not read
        )
        try:
            await self._send(request)
        except GymHTTPError as exc:
            if exc.status == 405 or (exc.status == 404 and missing_ok):
                return False
            raise
        return True

    async def health(self) -> bool | dict[str, Any]:
        """The ``/health`` JSON body when it is an object, True for any other 2xx, else False."""
        request = self._rest(
            "GET", "/health", None, headers=self._auth_headers(), timeout=self.timeouts.admin
        )
        try:
            response = await self._send(request)
        except GymError as exc:
            log.info("gym %s: health check failed: %s", self.name, exc)
            return False
        return response.body if isinstance(response.body, dict) else True

    async def probe(self) -> bool:
        """Is the gym answering? ``/health`` first; a gym without it (404/405) is asked
        over MCP (the handshake and a ``ping``): any JSON-RPC answer, even an error,
        or an HTTP refusal such as 401 means it is up. Never raises a gym error."""
        request = self._rest(
            "GET", "/health", None, headers=self._auth_headers(), timeout=self.timeouts.admin
        )
        try:
            await self._transport.send(request)
            return True
        except GymHTTPError as exc:
            if exc.status not in (404, 405):
                log.info("gym %s: health check answered HTTP %s", self.name, exc.status)
                return False
        except GymError as exc:
            log.info("gym %s: health check failed: %s", self.name, exc)
            return False
        try:
            await self._rpc("ping", {}, {}, idempotent=True)
        except JsonRpcError:
            return True  # it answered, if only to say it has no ping
        except GymHTTPError as exc:
            alive = exc.status < 500 and exc.status != 404
            if not alive:
                log.info("gym %s: no /health, and MCP answered HTTP %s", self.name, exc.status)
            return alive
        except GymError as exc:
            log.info("gym %s: no /health, and MCP failed: %s", self.name, exc)
            return False
        return True

    async def _rpc(
        self,
        method: str,
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        *,
        idempotent: bool,
    ) -> dict[str, Any]:
        """One JSON-RPC call, bounded as a whole by ``Timeouts.rpc``: waiting for a
        pooled connection, the handshake (or joining one), a re-initialization."""
        task = self._track()
        try:
            result = await self._session().request(
                method, params, headers=headers, time_limit=self.timeouts.rpc,
                idempotent=idempotent,
            )
        except asyncio.CancelledError:
            self._raise_if_stopped(task, method)
            raise
        finally:
            self._untrack(task)
        if type(result) is not dict:
            raise self._protocol_error(f"{method} answered a non-object result")
        return result

    def _rest(
        self,
        method: str,
        path: str,
        body: Any,
        *,
        headers: Mapping[str, str],
        timeout: float,
        idempotent: bool = True,
        raw_body: bool = False,
    ) -> HttpRequest:
        self._check_open()
        return HttpRequest(
            method=method,
            url=self._url(path),
            headers=headers,
            json=body,
            timeout=timeout,
            connect_timeout=self.timeouts.connect,
            idempotent=idempotent,
            gym=self.name,
            raw_body=raw_body,
        )

    def _call_headers(
        self, database_id: str | None, context: Mapping[str, Any] | None
    ) -> dict[str, str]:
        """The headers of one call (never mutate them: a task's calls share them)."""
        memo = self._headers_memo
        if memo is not None and memo[1] == database_id and memo[0] == (context or _NO_CONTEXT):
            return memo[2]  # a task's calls repeat the same context and database
        headers = dict(shared_context_headers(context, mode=self.header_mode))
        if database_id is not None:
            headers["x-database-id"] = checked_header("x-database-id", database_id)
        # Kept for the next call only when every key and value is text: a context equal
        # to a copy of it then means the same headers (1, 1.0 and True are equal but
        # read differently; a dict changed in place no longer equals the copy).
        plain = all(type(k) is str and type(v) is str for k, v in (context or {}).items())
        self._headers_memo = (dict(context or {}) if plain else None, database_id, headers)
        return headers

    def _sql_headers(self, database_id: str | None, context: Mapping[str, Any] | None,
                     read_only: bool) -> Mapping[str, str]:
        """A verifier query's headers, built once for a task's queries (read-only)."""
        call, auth = self._call_headers(database_id, context), self._auth_headers()
        memo = self._sql_memo
        if memo is not None and memo[0] is call and memo[1] is auth and memo[2] == read_only:
            return memo[3]
        headers = {**auth, **call}
        if read_only:
            headers[READ_ONLY_HEADER] = "1"
        whole = CIMultiDictProxy(CIMultiDict(headers))
        self._sql_memo = (call, auth, read_only, whole)
        return whole

    def _auth_headers(self) -> Mapping[str, str]:
        """The credential header (never mutate it: it is computed once per ``auth``)."""
        memo = self._auth_memo
        if memo is None or memo[0] is not self.auth:
            memo = self._auth_memo = (self.auth, MappingProxyType(auth_headers(self.auth)))
        return memo[1]

    def _url(self, path: str) -> str:
        url = self._urls.get(path)
        if url is None:
            url = path if path.startswith(("http://", "https://")) else (
                f"{self.base_url}/{path.lstrip('/')}")
            self._urls[path] = url
        return url

    async def _send(self, request: HttpRequest) -> HttpResponse:
        task = self._track()
        try:
            return await self._transport.send(request)
        except asyncio.CancelledError:
            self._raise_if_stopped(task, f"{request.method} {request.url}")
            raise
        finally:
            self._untrack(task)

    def _track(self) -> asyncio.Task[Any] | None:
        """Count one request of the current task in flight: closing the client ends it."""
        self._check_open()
        task = asyncio.current_task()
        if task is not None:
            calls = self._calls
            calls[task] = calls.get(task, 0) + 1
        return task

    def _untrack(self, task: asyncio.Task[Any] | None) -> None:
        if task is None:
            return
        calls = self._calls
        left = calls.pop(task, 1) - 1
        if left > 0:
            calls[task] = left
        elif self._leaving:
            gone = self._leaving.pop(task, None)
            if gone is not None and not gone.done():
                gone.set_result(None)

    def _raise_if_stopped(self, task: asyncio.Task[Any] | None, what: str) -> None:
        """In a cancelled request: :class:`ClosedError` when the cancellation was the
        client closing (and nobody else cancelled the task too)."""
        if task is None or task not in self._stopped:
            return
        self._stopped.discard(task)
        if task.uncancel() > 0:
            return  # cancelled by its caller too
        raise ClosedError(
            f"gym client {self.name or self.base_url} was closed during {what}") from None

    async def _stop_calls(self) -> None:
        """End every request in flight (with ClosedError) and wait until they have left."""
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()
        stopping = []
        for task in list(self._calls):
            if task is current:
                continue
            self._stopped.add(task)
            task.cancel()
            stopping.append(self._leaving.setdefault(task, loop.create_future()))
        if stopping:
            await asyncio.wait(stopping, timeout=self.timeouts.admin)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"gym client {self.name or redact_url(self.base_url)} is closed")

    def _protocol_error(self, message: str) -> GymProtocolError:
        return GymProtocolError(message, gym=self.name, url=self._url(self.mcp_endpoint))
