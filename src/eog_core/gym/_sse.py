"""An incremental Server-Sent-Events parser (the WHATWG framing, bytes in, events out).

Feed it chunks split anywhere, even inside a CRLF or a multi-byte UTF-8
character. Work is linear in the input: a partial line is kept as a list of
pieces and joined once, so a 5 MB ``data:`` line costs one pass.
"""

from __future__ import annotations

import codecs
import re

import attrs

__all__ = ["SseEvent", "SseParser"]

_LINE_END = re.compile(r"\r\n|\r|\n")


@attrs.frozen(kw_only=True)
class SseEvent:
    """One dispatched event: ``data`` lines joined with newlines."""

    data: str
    event: str = "message"
    id: str | None = None


@attrs.define
class SseParser:
    """Turns a byte stream into :class:`SseEvent` objects as lines complete.

    Events whose data is empty are not dispatched (priming events, keep-alives).
    ``last_event_id`` survives dispatches, as the standard says.
    """

    _decoder: codecs.IncrementalDecoder = attrs.field(
        factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"), init=False
    )
    _partial: list[str] = attrs.field(factory=list, init=False)
    _skip_lf: bool = attrs.field(default=False, init=False)
    _started: bool = attrs.field(default=False, init=False)
    _data: list[str] = attrs.field(factory=list, init=False)
    _event_type: str = attrs.field(default="", init=False)
    last_event_id: str | None = attrs.field(default=None, init=False)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse one chunk; return the events it completed, in order."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        events: list[SseEvent] = []
        start = 0
        for match in _LINE_END.finditer(text):
            piece = text[start : match.start()]
            if self._partial:
                self._partial.append(piece)
                piece = "".join(self._partial)
                self._partial.clear()
            event = self._process_line(piece)
            if event is not None:
                events.append(event)
            start = match.end()
        if start < len(text):
            self._partial.append(text[start:])
        elif text.endswith("\r"):
            # The LF of a CRLF may arrive in the next chunk.
            self._skip_lf = True
        return events

    def close(self) -> list[SseEvent]:
        """End of stream: an unterminated event is discarded, as the standard says."""
        self._decoder.decode(b"", final=True)
        self._partial.clear()
        self._data.clear()
        self._event_type = ""
        return []

    def _process_line(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event_type = value
        elif field == "id" and "\0" not in value:
            self.last_event_id = value
        return None

    def _dispatch(self) -> SseEvent | None:
        data = "\n".join(self._data)
        event_type = self._event_type or "message"
        self._data.clear()
        self._event_type = ""
        if not data:
            return None
        return SseEvent(data=data, event=event_type, id=self.last_event_id)
