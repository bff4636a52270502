"""JSON-RPC as MCP's answers carry it: which message answers a request, its result
or typed error, whether an HTTP error says the session is gone, and the replies
to the requests a server sends this client.

Free of session state: :mod:`eog_core.gym._mcp` (the session's state machine)
and the standalone stream (:mod:`eog_core.gym._mcp_stream`) use it alike.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from eog_core.errors import GymError, GymHTTPError, GymProtocolError, JsonRpcError
from eog_core.gym._http import HttpResponse

__all__ = [
    "AnswerTo",
    "ServerRequests",
    "pick_answer",
    "refused_unread",
    "reply_to",
    "result_of",
    "session_gone",
]

log = logging.getLogger("eog_core.gym")

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


class AnswerTo:
    """True for the JSON-RPC response (result or error) to request ``request_id``
    (a plain class: one is made per request)."""

    __slots__ = ("request_id",)

    def __init__(self, request_id: int) -> None:
        self.request_id = request_id

    def __call__(self, message: Any) -> bool:
        return (
            isinstance(message, dict)
            and message.get("id") == self.request_id
            and ("result" in message or "error" in message)
        )


def pick_answer(
    response: HttpResponse, request_id: int, gym: str | None, url: str
) -> dict[str, Any]:
    """The response to ``request_id`` among the messages of an answer (an event stream,
    a JSON batch or one JSON object); :class:`GymProtocolError` when none is."""
    is_answer = AnswerTo(request_id)
    candidates: tuple[Any, ...]
    if response.is_event_stream:
        candidates = response.messages
    elif isinstance(response.body, list):
        candidates = tuple(response.body)
    else:
        candidates = (response.body,)
    for message in candidates:
        if is_answer(message):
            answer: dict[str, Any] = message
            return answer
    where = "event stream ended" if response.is_event_stream else "answer arrived"
    raise GymProtocolError(
        f"{where} without a JSON-RPC response to request {request_id}", gym=gym, url=url
    )


def result_of(message: dict[str, Any], gym: str | None, url: str) -> Any:
    """A response's ``result``; its ``error`` raised as :class:`JsonRpcError`."""
    error = message.get("error")
    if error is None:
        return message.get("result")
    if not isinstance(error, dict):
        raise GymProtocolError(f"malformed JSON-RPC error: {error!r}", gym=gym, url=url)
    code = error.get("code")
    raise JsonRpcError(
        str(error.get("message", "")),
        code=code if isinstance(code, int) else INTERNAL_ERROR,
        data=error.get("data"),
        gym=gym,
        url=url,
    )


def session_gone(error: GymHTTPError) -> bool:
    """The server no longer knows the session a request was sent in (404, or an old
    server's 400 "No valid session ID"): initialize again before the next request.

    Only a 404 says the request was not processed (:func:`refused_unread`); a 400
    naming a session may come after a tool ran.
    """
    if error.status == 404:
        return True
    return error.status == 400 and "session" in error.detail.lower()


def refused_unread(error: GymHTTPError) -> bool:
    """The answer says the request was never processed, so even ``tools/call`` may be
    sent again in a new session: the spec's 404 to a request carrying a session id
    the server has terminated (it MUST answer so, and has no session to run it in).
    A 400, whatever its message, is a bad request that may have been acted on."""
    return error.status == 404


def reply_to(message: Any) -> dict[str, Any] | None:
    """This client's reply to a request the server sent (None for anything else).

    ``ping`` gets an empty result; anything else JSON-RPC ``-32601``: this client
    declares no sampling, elicitation or roots capability.
    """
    if not (
        isinstance(message, dict)
        and isinstance(message.get("method"), str)
        and "id" in message
        and "result" not in message
        and "error" not in message
    ):
        return None
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    method = message["method"]
    if method == "ping":
        reply["result"] = {}
    else:
        reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
    return reply


@attrs.frozen
class ServerRequests:
    """Answers the requests a server sends on a stream, by ``post`` (a POST in the
    session, as the spec says). Without an answer a server waiting on one
    (FastMCP's ``ctx.elicit``, ``send_ping``) would hang the call."""

    post: Callable[[dict[str, Any]], Awaitable[object]]
    gym: str | None

    async def __call__(self, message: Any) -> None:
        reply = reply_to(message)
        if reply is None:
            return
        method = message["method"]
        if "error" in reply:
            log.info("gym %s asked this client for %s: answered -32601", self.gym, method)
        try:
            await self.post(reply)
        except GymError as exc:
            log.info("gym %s: answering its %s request failed: %s", self.gym, method, exc)
