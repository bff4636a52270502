"""Property tests of the SSE parser: any chunking gives the same events; no input raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eog_core.gym import SseEvent, SseParser

pytestmark = pytest.mark.property

# Field values hold no line break (a break would end the line); anything else goes.
line_text = st.text(st.characters(exclude_characters="\r\n", codec="utf-8"), max_size=20)
line_end = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def sse_block(draw: st.DrawFn) -> tuple[str, SseEvent | None, str | None]:
    """One event block: its text, the event it dispatches (None: none), and its last id."""
    lines: list[str] = []
    data: list[str] = []
    kind = ""
    event_id: str | None = None
    for _ in range(draw(st.integers(0, 4))):
        field = draw(st.sampled_from(["data", "event", "id", "comment", "other"]))
        value = draw(line_text)
        space = draw(st.sampled_from(["", " "]))
        if field == "comment":
            lines.append(":" + value)
            continue
        lines.append(f"{field}:{space}{value}")
        if not space:  # the parser drops one leading space of the value, as the SSE spec says
            value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            kind = value
        elif field == "id" and "\0" not in value:
            event_id = value
    text = "".join(line + draw(line_end) for line in lines)
    ending = draw(line_end)
    if text.endswith("\r") and ending == "\n":
        ending = "\r"  # "\r" + "\n" is one CRLF, not a line end and an empty line
    text += ending
    joined = "\n".join(data)
    event = SseEvent(data=joined, event=kind or "message", id=event_id) if joined else None
    return text, event, event_id


@st.composite
def sse_stream(draw: st.DrawFn) -> tuple[bytes, list[SseEvent]]:
    text, expected, last_id = "", [], None
    for block, event, event_id in draw(st.lists(sse_block(), max_size=6)):
        # "\r" then "\n" across a block boundary would read as one CRLF: keep them apart.
        if text.endswith("\r") and block.startswith("\n"):
            continue
        text += block
        if event_id is not None:
            last_id = event_id
        if event is not None:
            expected.append(SseEvent(data=event.data, event=event.event, id=last_id))
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + text).encode(), expected


def parse(chunks: list[bytes]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.close())
    return events


def split(payload: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(payload)) for cut in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(payload[start:point])
        start = point
    pieces.append(payload[start:])
    return pieces


@settings(max_examples=max(300, settings.default.max_examples))
@given(stream=sse_stream(), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_gives_the_modelled_events(
    stream: tuple[bytes, list[SseEvent]], cuts: list[int]
) -> None:
    payload, expected = stream
    assert parse([payload]) == expected
    assert parse(split(payload, cuts)) == expected


@settings(max_examples=max(300, settings.default.max_examples))
@given(payload=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=12))
def test_arbitrary_bytes_never_raise_and_chunking_does_not_matter(
    payload: bytes, cuts: list[int]
) -> None:
    whole = parse([payload])
    assert parse(split(payload, cuts)) == whole
    assert parse([bytes([b]) for b in payload]) == whole
    assert all(isinstance(event, SseEvent) and event.data for event in whole)
