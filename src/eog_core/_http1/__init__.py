"""HTTP/1.1 framing on llhttp (httptools), shared by the gym client and the gateway's server.

llhttp is the parser Node.js and uvicorn use; it is strict where lenient parsers let request
smuggling through, and about twice as fast as the hand-written parsers it replaced
(docs/performance.md). Everything llhttp does not bound is bounded here, from one
:class:`Limits` record.

API (everything here is the whole of it)::

    limits = Limits(max_request_body=1 << 20)     # attrs, frozen; every field has a default
    # a server, per connection:
    reader = RequestReader(limits, on_head=refuse)  # refuse(message) -> True: drop its body
    reader.feed(data)                 # raises FramingError(status, message, limit=...)
    while (request := reader.pop()) is not None:
        request.method, request.target, request.version, request.headers, request.body
        request.keep_alive, request.header("host"), request.header_map()
    reader.mid_message                # a request has started and is not whole
    # a client, per connection:
    reader = ResponseReader(limits)
    reader.feed(data); reader.eof()   # eof(): the peer closed (a close-delimited body ends)
    answer = reader.pop()             # .status, .version, .headers, .body, .keep_alive
    host_allowed(request.header("host"), port, allow_remote=False)  # the loopback Host rule

``Message.headers`` are ``(name, value)`` pairs, names lower-cased, both latin-1 text, in
order. ``FramingError.status`` is the answer a server gives (400 syntax, 408 deadline, 413
body, 431 head or header count, 501 transfer coding, 505 version), ``.limit`` the ``Limits``
field exceeded (None for a syntax error); after it the reader refuses everything and the
connection must close. Timeouts (``head_deadline``, ``idle_timeout``) and the connection cap
(``max_connections``) are the caller's to apply: the readers do no I/O.
"""

from eog_core._http1._limits import LOOPBACK_NAMES, FramingError, Limits, host_allowed
from eog_core._http1._parse import Message, RequestReader, ResponseReader

__all__ = [
    "LOOPBACK_NAMES",
    "FramingError",
    "Limits",
    "Message",
    "RequestReader",
    "ResponseReader",
    "host_allowed",
]
