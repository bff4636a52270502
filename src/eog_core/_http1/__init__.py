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
        request.keep_alive, request.too_large, request.header("host")
    reader.mid_message, reader.head_only  # a request has started; its head is read, not its body
    reader.ready_bytes                # the wire size of what is read and not popped
    # a client, per connection:
    reader = ResponseReader(limits)
    reader.feed(data); reader.eof()   # eof(): the peer closed (a close-delimited body ends)
    answer = reader.pop()             # .status, .version, .headers, .body, .keep_alive
    host_allowed(request.header("host"), allow_remote=False)  # the loopback Host rule

``Message.headers`` maps lower-cased names to values, both latin-1 text, a repeated name's
values joined with ``", "`` (trailers are checked and dropped). ``FramingError.status`` is the answer a server
gives (400 syntax, 413 body, 431 head or header count, 501 transfer coding, 505 version),
``.limit`` the ``Limits`` field exceeded (None for a syntax error); after it the reader
refuses everything and the connection must close. A request whose ``Content-Length`` is
over the body limit (up to ``max_skipped_body``) is not an error: it comes out with
``too_large`` set and no body, so a server can answer 413 and keep the connection.
Timeouts (``head_deadline``, ``idle_timeout``, ``linger``), the connection cap
(``max_connections``) and read-ahead (``max_buffered``) are the caller's to apply: the
readers do no I/O.

Where llhttp is laxer than h11, this layer refuses what h11 refuses
(``tests/test_http1_h11.py`` checks it over generated framings): a request with two ``Host``
lines or, in HTTP/1.1, none; a status line's reason with a control character; an empty line before the request line, doubled spaces in it, a
chunk line over ``max_chunk_line``, chunk framing that grows the wire size past twice the
body limit. llhttp is fed whole lines of a head (httptools joins a line's pieces by
copying), so a head dripped a byte at a time costs linear time.
"""

from eog_core._http1._limits import FramingError, Limits, host_allowed, is_loopback
from eog_core._http1._parse import Message, RequestReader
from eog_core._http1._response import ResponseReader

__all__ = [
    "FramingError",
    "Limits",
    "Message",
    "RequestReader",
    "ResponseReader",
    "host_allowed",
    "is_loopback",
]
