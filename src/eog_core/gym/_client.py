"""The async client of one gym server: MCP tools plus the REST database endpoints."""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import attrs

from eog_core._redact import redact_url, redacted_url_repr
from eog_core.errors import (
    ClosedError,
    GymError,
    GymHTTPError,
    GymProtocolError,
    UsageError,
)
from eog_core.gym._headers import AuthConfig, HeaderMode
from eog_core.gym._http import new_request
from eog_core.gym._in_flight import InFlight
from eog_core.gym._liveness import probe_gym
from eog_core.gym._mcp import McpSession
from eog_core.gym._records import (
    DEFAULT_TIMEOUTS,
    Timeouts,
    ToolResult,
    new_database_id,
    seed_timeout,
)
from eog_core.gym._request_memo import RequestMemo
from eog_core.gym._sql_answer import sql_answer, sql_failure
from eog_core.gym._state import State, warn_unclosed
from eog_core.gym._tool_cache import every_page
from eog_core.gym._transport import (
    HttpRequest,
    HttpResponse,
    Pool,
    PooledTransport,
    Transport,
    lease_pool,
    release_pool,
)
from eog_core.tasks import ToolSpec
from eog_core.verify import SqlOutcome

__all__ = ["GymClient", "Timeouts", "ToolResult", "new_database_id", "seed_timeout"]

log = logging.getLogger("eog_core.gym")

_NO_CONTENT: list[Any] = []  # a result without "content" has none (never mutated)


def _normalize_url(url: object) -> str:
    return str(url).rstrip("/")


@attrs.define(on_setattr=attrs.setters.NO_OP)  # set per request: no hooks on assignment
class GymClient:
    """Talks to one gym: ``async with GymClient("http://localhost:8001") as gym: ...``.

    Per-call headers (``x-database-id``, context, auth) go on each request,
    never on the connection; connections come from the shared pool. With
    ``share_mcp=True`` the client uses the one MCP session that every
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
    timeouts: Timeouts = attrs.field(default=DEFAULT_TIMEOUTS, kw_only=True)
    protocol_version: str = attrs.field(default="2025-06-18", kw_only=True)
    header_mode: HeaderMode = attrs.field(default="strict", kw_only=True)
    share_mcp: bool = attrs.field(default=False, kw_only=True)
    _shared_session: bool | None = attrs.field(default=None, kw_only=True, repr=False, eq=False)
    """The old name of ``share_mcp`` (deprecated: "session" names a TaskSession)."""
    server_stream: bool = attrs.field(default=False, kw_only=True)
    _transport: Transport = attrs.field(init=False, repr=False)
    _mcp: McpSession | None = attrs.field(default=None, init=False, repr=False)
    _pool: Pool | None = attrs.field(default=None, init=False, repr=False)
    _state: State = attrs.field(default=State.UNOPENED, init=False, repr=False)
    _in_flight: InFlight = attrs.field(factory=InFlight, init=False, repr=False)
    _memo: RequestMemo = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"gym base_url must be an http(s) URL, got {redact_url(self.base_url)!r}"
            )
        self._memo = RequestMemo(self.base_url)
        if self._shared_session is not None:
            warnings.warn(
                "GymClient(shared_session=...) is deprecated: write share_mcp=...",
                DeprecationWarning,
                stacklevel=3,
            )
            self.share_mcp, self._shared_session = self._shared_session, None
        self._transport = self.transport if self.transport is not None else PooledTransport()
        if not self.share_mcp:
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
        return self._state is State.CLOSED

    @property
    def mcp_session_id(self) -> str | None:
        """The current MCP session id (None before the handshake)."""
        return None if self._mcp is None else self._mcp.session_id

    @property
    def negotiated_version(self) -> str | None:
        """The protocol version the server chose (None before the handshake)."""
        return None if self._mcp is None else self._mcp.negotiated_version

    async def aclose(self) -> None:
        """End the client's own MCP session (best effort) or leave the shared one; release the
        connection pool. Idempotent."""
        if self._state is State.CLOSED:
            return
        self._state = State.CLOSED
        if self._in_flight:
            await self._in_flight.stop(self.timeouts.admin)
        mcp, pool = self._mcp, self._pool
        self._pool = None
        try:
            if self.share_mcp:
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
        if not self.share_mcp:
            return await self._fetch_tools()
        return list(await self._session().tool_cache.listing(self._fetch_tools, refresh))

    async def list_tool_specs(self, *, refresh: bool = False) -> tuple[ToolSpec, ...]:
        """:meth:`list_tools` read as :class:`ToolSpec` records of this client's gym, cached
        alike: with a shared session, the same tuple until the tools are listed again (a
        task session reads them once per replica, not once per task)."""
        self._check_open()
        if not self.share_mcp:
            return tuple(
                ToolSpec.from_mcp(tool, gym=self.name) for tool in await self._fetch_tools()
            )
        cache = self._session().tool_cache
        return cache.specs(await cache.listing(self._fetch_tools, refresh), self.name)

    async def _fetch_tools(self) -> list[dict[str, Any]]:
        return await every_page(self._rpc, self._protocol_error)

    def _new_session(self, transport: Transport) -> McpSession:
        return McpSession(
            transport=transport,
            url=self._memo.url(self.mcp_endpoint),
            gym=self.name,
            protocol_version=self.protocol_version,
            connect_timeout=self.timeouts.connect,
            base_headers=self._memo.auth_headers(self.auth),
            close_timeout=self.timeouts.admin,
            listen=self.server_stream,
        )

    def _session(self) -> McpSession:
        """This client's MCP session; a shared one is looked up (or made) in the loop's pool."""
        mcp, pool = self._mcp, self._pool
        if mcp is not None and (
            not self.share_mcp
            or (  # Pool.usable, without a call per request
                pool is not None
                and not pool.closed
                and pool.loop is not None
                and pool.loop() is asyncio.get_running_loop()
            )
        ):
            return mcp
        # First use, or a new event loop: the old loop's pool (and the shared
        # session it held) closed with that loop.
        pool = self._pool = lease_pool()
        base = self._memo.auth_headers(self.auth)
        key = (
            "mcp",
            self._memo.url(self.mcp_endpoint),
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
                self.transport if self.transport is not None else PooledTransport.on_pool(pool)
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
        headers = self._memo.call_headers(database_id, context, self.header_mode)
        params = {"name": name, "arguments": dict(arguments or {})}
        result = await self._rpc("tools/call", params, headers, idempotent=False)
        if not isinstance(result.get("content", _NO_CONTENT), list) or not isinstance(
            result.get("isError", False), bool
        ):
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
        headers = self._memo.sql_headers(
            database_id, context, self.header_mode, self.auth, read_only
        )
        request = self._rest(
            "POST",
            "/api/sql-runner",
            {"query": query, "database_id": database_id},
            headers=headers,
            timeout=self.timeouts.sql,
            raw_body=True,
        )
        try:
            response = await self._send(request)
        except GymError as exc:
            return sql_failure(exc)
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
        # A 2xx status is the answer: the body is not read.
        request = self._rest(
            "POST", "/api/seed-database", body, timeout=timeout, idempotent=False, raw_body=True
        )
        await self._send(request)
        return database_id

    async def delete_database(self, database_id: str, *, missing_ok: bool = True) -> bool:
        """Drop a database; False when the gym does not support deletion (404/405).

        With ``missing_ok=False`` a 404 raises :class:`GymHTTPError`: a database
        whose seed may still be loading is not gone because it is not there yet.
        """
        request = self._rest(
            "DELETE", "/api/delete-database", {"database_id": database_id}, raw_body=True
        )  # a 2xx status is the answer: the body is not read
        try:
            await self._send(request)
        except GymHTTPError as exc:
            if exc.status == 405 or (exc.status == 404 and missing_ok):
                return False
            raise
        return True

    async def health(self) -> bool | dict[str, Any]:
        """The ``/health`` JSON body when it is an object, True for any other 2xx, else False."""
        request = self._rest("GET", "/health", None)
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
        return await probe_gym(
            self.name,
            lambda: self._transport.send(self._rest("GET", "/health", None)),
            lambda: self._rpc("ping", {}, {}, idempotent=True),
        )

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
        self._check_open()
        task = self._in_flight.enter()
        try:
            result = await self._session().request(
                method,
                params,
                headers=headers,
                time_limit=self.timeouts.rpc,
                idempotent=idempotent,
            )
        except asyncio.CancelledError:
            self._raise_if_stopped(task, method)
            raise
        finally:
            self._in_flight.leave(task)
        if type(result) is not dict:
            raise self._protocol_error(f"{method} answered a non-object result")
        return result

    def _rest(
        self,
        method: str,
        path: str,
        body: Any,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        idempotent: bool = True,
        raw_body: bool = False,
    ) -> HttpRequest:
        """A REST request, with the credential header and the admin timeout unless given."""
        self._check_open()
        return new_request(
            method,
            self._memo.url(path),
            self._memo.auth_headers(self.auth) if headers is None else headers,
            body,
            self.timeouts.admin if timeout is None else timeout,
            self.timeouts.connect,
            idempotent,
            self.name,
            None,
            None,
            raw_body,
            None,
        )

    async def _send(self, request: HttpRequest) -> HttpResponse:
        self._check_open()
        task = self._in_flight.enter()
        try:
            return await self._transport.send(request)
        except asyncio.CancelledError:
            self._raise_if_stopped(task, f"{request.method} {request.url}")
            raise
        finally:
            self._in_flight.leave(task)

    def _raise_if_stopped(self, task: asyncio.Task[Any] | None, what: str) -> None:
        """In a cancelled request: :class:`ClosedError` when closing the client cancelled it."""
        self._in_flight.raise_if_stopped(
            task, f"gym client {self.name or self.base_url} was closed during {what}"
        )

    def _check_open(self) -> None:
        """Refuse a closed client; a request (or ``async with``) opens an unopened one."""
        state = self._state
        if state is not State.OPEN:
            if state is State.CLOSED:
                raise ClosedError(f"gym client {self.name or redact_url(self.base_url)} is closed")
            self._state = State.OPEN

    def __del__(self) -> None:
        if getattr(self, "_state", None) is State.OPEN:  # not half-built, used, not closed
            warn_unclosed(
                self,
                f"GymClient {self.name or redact_url(self.base_url)}",
                "use `async with GymClient(...)` or `await client.aclose()`",
            )

    def _protocol_error(self, message: str) -> GymProtocolError:
        return GymProtocolError(message, gym=self.name, url=self._memo.url(self.mcp_endpoint))
