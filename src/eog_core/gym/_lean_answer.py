"""Reading an answer off a :class:`~eog_core.gym._lean_connection.Connection`: the
framing is the wire layer's (:mod:`eog_core._http1`, llhttp, bounded by its
:class:`~eog_core._http1.Limits`); here are what a gym client adds: interim answers
skipped, no upgrade and no compression taken, the body whole or as it arrives (event
streams), and whether the connection may carry another request.
"""

from __future__ import annotations

from typing import Any

from eog_core._http1 import Limits, Message
from eog_core.gym._http import (
    HttpRequest,
    HttpResponse,
    decoded_body,
    json_body,
    media_type,
    new_response,
    read_event_stream,
    status_failure,
)
from eog_core.gym._lean_connection import Connection, Lost, Malformed

__all__ = ["MAX_BODY", "Headers", "read_answer"]

MAX_BODY = Limits().max_response_body
"""The default bound on an answer's body (:attr:`eog_core._http1.Limits.max_response_body`,
256 MiB)."""


class Headers(dict[str, str]):
    """An answer's headers: names lower-cased, looked up in any case (as aiohttp's)."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


class Body:
    """The body of ``answer`` (its head read) as an async iterator of what arrives."""

    __slots__ = ("answer", "conn", "done")

    def __init__(self, conn: Connection, answer: Message) -> None:
        self.conn, self.answer, self.done = conn, answer, False

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        conn, reader = self.conn, self.conn.reader
        while not self.done:
            piece = reader.take_body()
            if piece:
                return piece
            if reader.ready and reader.ready[0] is self.answer:
                self.done = True
                reader.pop()
                if self.answer.body:
                    return self.answer.body
                break
            await conn.more()
        raise StopAsyncIteration


async def _head(conn: Connection) -> Message:
    """The final answer's head (interim 1xx answers skipped); its body may be to come."""
    reader = conn.reader
    while True:
        answer = reader.ready[0] if reader.ready else reader.head_only
        if answer is None:
            await conn.more()
            continue
        if answer.status == 101:
            raise Malformed("101 Switching Protocols, though no upgrade was asked for")
        if answer.status >= 200:
            return answer
        if reader.ready:  # 100 Continue, 103 Early Hints: whole with their head
            reader.pop()
        else:
            await conn.more()


async def _whole(conn: Connection, answer: Message) -> bytes:
    reader = conn.reader
    while not reader.ready:
        await conn.more()
    reader.pop()
    return answer.body


async def read_answer(conn: Connection, request: HttpRequest) -> tuple[HttpResponse, bool]:
    """The answer on ``conn`` and whether the connection may carry another request."""
    reader = conn.reader
    reader.head_request = request.method == "HEAD"
    try:
        answer = await _head(conn)
    except Lost:
        if conn.failure is not None:  # the last bytes before the end broke the framing
            raise conn.failure from None
        raise
    headers = Headers(answer.headers)
    encoding = answer.headers.get("content-encoding")
    if encoding is not None and encoding.strip().lower() != "identity":
        raise Malformed(
            f"a compressed answer (Content-Encoding: {encoding[:40]}), though none was asked for"
        )
    status = answer.status
    if 200 <= status < 300 and not request.raw_body:
        content_type = media_type(answer.headers.get("content-type"))
        if content_type == "text/event-stream":
            body = Body(conn, answer)
            messages = await read_event_stream(body, request)
            response = HttpResponse(
                status=status, headers=headers, messages=messages, is_event_stream=True
            )
            return response, body.done and _reusable(conn, answer)  # stopped early: unread
        if reader.ready:  # whole already (most answers): no coroutine to wait for it
            reader.pop()
            raw = answer.body
        else:
            raw = await _whole(conn, answer)
        body = (  # (decoded_body, one call fewer for JSON)
            json_body(raw, request)
            if "json" in content_type
            else decoded_body(raw, content_type, request)
        )
        return new_response(status, headers, body, b""), _reusable(conn, answer)
    raw = await _whole(conn, answer)
    if 200 <= status < 300:
        return new_response(status, headers, None, raw), _reusable(conn, answer)
    raise status_failure(status, raw, request)  # the connection is closed: errors are rare


def _reusable(conn: Connection, answer: Message) -> bool:
    """Kept alive (llhttp's reading: version, ``Connection``, a body not ended by the close)
    and nothing more arrived than was asked for."""
    reader = conn.reader
    return answer.keep_alive and not reader.ready and not reader.mid_message
