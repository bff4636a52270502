"""A client's reader of HTTP/1.1 answers on llhttp (:class:`ResponseReader`), on the
readers' shared core (:mod:`eog_core._http1._parse`)."""

from __future__ import annotations

import httptools

from eog_core._http1._limits import FramingError, Limits
from eog_core._http1._parse import Message, _Reader

__all__ = ["ResponseReader"]

_REASON_BYTES = bytes([9, *range(0x20, 0x7F), *range(0x80, 0x100)])
"""What a status line's reason may hold (HTAB, SP, VCHAR, obs-text: RFC 9112)."""


class ResponseReader(_Reader):
    """A client's reader of answers (keep-alive: one reader per connection, answers in
    order). Call :meth:`eof` when the peer closes (an answer delimited by the close is whole
    then). Set ``head_request`` before the answer to a HEAD request is read: its head is the
    whole answer, whatever length it announces (llhttp cannot be told so: the reader starts
    a fresh parser after it). 1xx, 204 and 304 answers have no body by their status."""

    _request = False

    def __init__(self, limits: Limits) -> None:
        super().__init__(limits)
        self.parser = httptools.HttpResponseParser(self)
        self.reason = b""
        self.head_request = False
        self.cut = False  # the answer whose head is read answers HEAD: it ends with its head

    def _bodiless(self, current: Message) -> bool:
        if not self.cut:
            return False
        self.cut = False
        self.on_message_complete()
        self.parser = httptools.HttpResponseParser(self)
        return True

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def _head(self, current: Message) -> None:
        reason, self.reason = self.reason, b""
        if reason.translate(None, _REASON_BYTES):  # llhttp takes a NUL or DEL there
            raise FramingError(400, "bad request: a malformed status line (its reason)")
        current.status = status = self.parser.get_status_code()
        self.cut = self.head_request and status >= 200
        if self.cut:
            self.head_request = False

    def eof(self) -> None:
        """The peer closed: an answer without length or chunking is whole now; any other
        unfinished answer raises FramingError (cut short)."""
        current = self.current
        if current is None:
            return
        if self.head_done and not current.chunked and current.content_length is None:
            self.on_message_complete()
            return
        raise FramingError(400, "the answer was cut short")
