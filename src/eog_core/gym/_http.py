"""One HTTP exchange's records and pieces: the request and answer records, the JSON
body encoder, reading an answer (JSON, raw, an event stream, an error status) and
what a failed attempt means (typed error; whether it may have left; whether to
try again). :mod:`eog_core.gym._transport` sends with them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import attrs

from eog_core._json import dumps_compact, loads_bytes
from eog_core.errors import (
    GymError,
    GymHTTPError,
    GymProtocolError,
    GymTimeoutError,
    GymUnreachableError,
    RequestError,
)
from eog_core.gym._sse import SseParser

__all__ = [
    "JSON_TYPE",
    "TRANSIENT_STATUSES",
    "Failed",
    "HttpRequest",
    "HttpResponse",
    "classify_failure",
    "client_timeout",
    "decoded_body",
    "encode_json",
    "json_body",
    "media_type",
    "new_request",
    "new_response",
    "read",
    "read_event_stream",
    "status_failure",
]

TRANSIENT_STATUSES = frozenset({502, 503, 504})


_ENCODE = dumps_compact
JSON_TYPE = "application/json"


@attrs.define(kw_only=True)
class HttpRequest:
    """One HTTP request; ``json`` (if not None) is sent as the JSON body. Read-only by
    convention (one is built per request: a frozen class would cost twice as much),
    and so are its ``headers``: a transport must not change them in place (clients
    reuse one header set for all the requests of a task).

    ``timeout`` bounds each attempt; with ``deadline`` (event-loop time, as
    ``loop.time()``) it is the whole request's budget, retries included: no
    attempt runs past the deadline and none starts after it (then
    :class:`GymTimeoutError`). ``sse_until`` stops reading an event stream at the
    first decoded message for which it returns true; ``on_message`` is awaited
    with each decoded message of an event stream first (to answer the server's
    own requests); ``on_open`` is called once an event stream's headers arrived,
    before its first event (a stream held open for the server's messages). With
    ``raw_body`` a 2xx body is not decoded at all: the answer carries it in ``raw`` only.
    """

    method: str
    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    json: Any = attrs.field(default=None, repr=False)
    timeout: float = 60.0
    connect_timeout: float = 10.0
    idempotent: bool = True
    gym: str | None = None
    sse_until: Callable[[Any], bool] | None = None
    on_message: Callable[[Any], Awaitable[None]] | None = None
    on_open: Callable[[], None] | None = None
    raw_body: bool = False
    deadline: float | None = None


@attrs.define(kw_only=True)
class HttpResponse:
    """A 2xx answer: ``body`` is decoded JSON (text if not JSON, None if empty);
    ``messages`` holds the JSON messages of an event stream; ``raw`` the body
    bytes of a ``raw_body`` request. Read-only by convention, as :class:`HttpRequest`."""

    status: int
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Any = attrs.field(default=None, repr=False)
    messages: tuple[Any, ...] = attrs.field(default=(), repr=False)
    is_event_stream: bool = False
    raw: bytes = attrs.field(default=b"", repr=False)


_new = object.__new__


def new_request(
    method: str,
    url: str,
    headers: Mapping[str, str],
    json: Any,
    timeout: float,
    connect_timeout: float,
    idempotent: bool,
    gym: str | None,
    sse_until: Callable[[Any], bool] | None,
    on_message: Callable[[Any], Awaitable[None]] | None,
    raw_body: bool,
    deadline: float | None,
) -> HttpRequest:
    """``HttpRequest(...)`` (``on_open`` None) for our clients' per-request hot path: a class
    called with keywords costs three times the stores themselves (callgrind: 9,100
    instructions against 3,000). The record has no validators or converters, so the object
    is the same (``tests/gym/test_fast_records.py`` pins it, field by field)."""
    request = _new(HttpRequest)
    request.method = method
    request.url = url
    request.headers = headers
    request.json = json
    request.timeout = timeout
    request.connect_timeout = connect_timeout
    request.idempotent = idempotent
    request.gym = gym
    request.sse_until = sse_until
    request.on_message = on_message
    request.on_open = None
    request.raw_body = raw_body
    request.deadline = deadline
    return request


def new_response(status: int, headers: Mapping[str, str], body: Any, raw: bytes) -> HttpResponse:
    """``HttpResponse(status=..., headers=..., body=..., raw=...)`` of an answer that is not
    an event stream, built as :func:`new_request` is (pinned by the same test)."""
    response = _new(HttpResponse)
    response.status = status
    response.headers = headers
    response.body = body
    response.messages = ()
    response.is_event_stream = False
    response.raw = raw
    return response


class Failed(Exception):
    """Internal: one attempt failed; says whether the request may have left."""

    def __init__(self, error: GymError, *, sent: bool, transient: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.sent = sent
        self.transient = transient


def encode_json(value: Any) -> bytes:
    """A request body as compact JSON; :class:`RequestError` when it cannot be (nothing sent)."""
    try:
        return _ENCODE(value).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise RequestError(f"request body is not valid JSON: {exc}") from exc


def classify_failure(exc: BaseException, request: HttpRequest) -> Failed:
    """What one failed attempt means: whether it may have left, whether to try again."""
    gym, url = request.gym, request.url
    error: GymError
    if isinstance(exc, aiohttp.ClientConnectorError):
        error, sent, transient = (
            GymUnreachableError(f"cannot connect: {exc}", gym=gym, url=url),
            False,
            True,
        )
    elif isinstance(exc, aiohttp.ConnectionTimeoutError):
        error = GymTimeoutError(
            f"connect timed out after {request.connect_timeout}s", gym=gym, url=url
        )
        sent, transient = False, True
    elif isinstance(exc, TimeoutError):
        error = GymTimeoutError(f"no answer within {request.timeout}s", gym=gym, url=url)
        sent, transient = True, False
    elif isinstance(exc, aiohttp.InvalidURL):
        error, sent, transient = (
            GymUnreachableError(f"invalid URL: {exc}", gym=gym, url=url),
            False,
            False,
        )
    elif isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        if _write_refused(exc):
            error = GymUnreachableError(
                f"connection closed before sending: {exc}", gym=gym, url=url
            )
            sent, transient = False, True
        else:
            error = GymProtocolError(
                f"connection lost before the answer: {exc!r}", gym=gym, url=url
            )
            sent, transient = True, True
    elif isinstance(exc, aiohttp.ClientError):
        error, sent, transient = (
            GymProtocolError(f"HTTP failure: {exc!r}", gym=gym, url=url),
            True,
            False,
        )
    elif isinstance(exc, OSError):
        error = GymProtocolError(f"connection failure: {exc!r}", gym=gym, url=url)
        sent, transient = True, True
    else:  # ValueError: aiohttp refused the request's parts (URL credentials + auth header)
        raise RequestError(f"the request could not be built: {exc}") from exc
    failure = Failed(error, sent=sent, transient=transient)
    failure.__cause__ = exc
    return failure


def json_body(raw: bytes, request: HttpRequest) -> Any:
    """A JSON answer's body (None if empty); :class:`Failed` when it is not JSON."""
    if not raw or raw.isspace():  # as _decode_body, one call fewer on every JSON answer
        return None
    try:
        return loads_bytes(raw)
    except (ValueError, RecursionError) as exc:
        error = GymProtocolError(f"bad JSON in answer: {exc}", gym=request.gym, url=request.url)
        raise Failed(error, sent=True, transient=False) from exc


def _write_refused(exc: BaseException) -> bool:
    """aiohttp refused to write (part of) the request to a closing connection.

    The request never fully left, so no server can have acted on it: a stale
    pooled connection to a gym that went away.
    """
    seen: BaseException | None = exc
    for _ in range(3):
        if seen is None:
            return False
        if isinstance(seen, aiohttp.ClientConnectionResetError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@functools.lru_cache(maxsize=64)
def client_timeout(total: float, connect: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=total, sock_connect=connect)


async def read(response: aiohttp.ClientResponse, request: HttpRequest) -> HttpResponse:
    status = response.status
    if not 200 <= status < 300:
        raise status_failure(status, await response.read(), request)
    if request.raw_body:
        return new_response(status, response.headers, None, await response.read())
    content_type = media_type(response.headers.get("Content-Type"))
    if content_type == "text/event-stream":
        messages = await read_event_stream(response.content.iter_any(), request)
        return HttpResponse(
            status=status, headers=response.headers, messages=messages, is_event_stream=True
        )
    return new_response(
        status, response.headers, decoded_body(await response.read(), content_type, request), b""
    )


def status_failure(status: int, raw: bytes, request: HttpRequest) -> Failed:
    """A status outside 2xx as :class:`GymHTTPError` (transient for 502-504), with the
    server's explanation."""
    detail = _detail(raw)
    error = GymHTTPError(
        f"HTTP {status}: {detail}",
        status=status,
        detail=detail,
        raw=raw,
        gym=request.gym,
        url=request.url,
    )
    return Failed(error, sent=True, transient=status in TRANSIENT_STATUSES)


def decoded_body(raw: bytes, content_type: str, request: HttpRequest) -> Any:
    """A 2xx body that is not an event stream: JSON (strictly, when it says it is JSON), else text."""
    return json_body(raw, request) if "json" in content_type else _decode_body(raw, strict=False)


def media_type(header: str | None) -> str:
    """The lower-cased media type of a ``Content-Type`` header (aiohttp's default when absent).

    What ``ClientResponse.content_type`` gives for the media types a gym sends,
    without parsing the parameters on every answer.
    """
    if not header:
        return "application/octet-stream"
    return header.partition(";")[0].strip().lower()


async def read_event_stream(chunks: AsyncIterable[bytes], request: HttpRequest) -> tuple[Any, ...]:
    """The JSON messages of an event stream's body (``chunks``, split anywhere), with
    ``on_open``, ``on_message`` and ``sse_until`` as :class:`HttpRequest` says."""
    parser = SseParser()
    messages: list[Any] = []
    if request.on_open is not None:
        request.on_open()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            if event.event != "message":
                continue
            try:
                message = json.loads(event.data)
            except (ValueError, RecursionError) as exc:
                error = GymProtocolError(
                    f"bad JSON in event stream: {exc}", gym=request.gym, url=request.url
                )
                raise Failed(error, sent=True, transient=False) from exc
            messages.append(message)
            if request.on_message is not None:
                await request.on_message(message)
            if request.sse_until is not None and request.sse_until(message):
                return tuple(messages)
    parser.close()
    return tuple(messages)


def _decode_body(raw: bytes, *, strict: bool) -> Any:
    if not raw or raw.isspace():  # no copy of a large body just to look at it
        return None
    try:
        return loads_bytes(raw)
    except (ValueError, RecursionError):
        if strict:
            raise
        return raw.decode("utf-8", errors="replace")


def _detail(raw: bytes) -> str:
    """The server's explanation: JSON ``detail``, ``message`` or ``error.message``, else text."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(body, dict):
        for key in ("detail", "message"):
            if body.get(key) is not None:
                value = body[key]
                return value if isinstance(value, str) else json.dumps(value)
        error = body.get("error")
        if isinstance(error, dict) and error.get("message") is not None:
            return str(error["message"])
    return text
