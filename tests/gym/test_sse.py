"""The incremental SSE parser, fed whole and in every kind of split."""

from __future__ import annotations

import pytest

from eog_core.gym import SseEvent, SseParser


def parse(chunks: list[bytes]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.close())
    return events


def every_two_way_split(payload: bytes) -> list[list[bytes]]:
    return [[payload[:cut], payload[cut:]] for cut in range(len(payload) + 1)]


STREAM = (
    ": ping\r\n"
    "event: message\r\n"
    "id: 7\r\n"
    'data: {"a":\r\n'
    "data:  1}\r\n"
    "\r\n"
    "data: é€😀\n"
    "\n"
    "data:tight\r"
    "\r"
).encode()

EXPECTED = [
    SseEvent(data='{"a":\n 1}', event="message", id="7"),
    SseEvent(data="é€😀", id="7"),
    SseEvent(data="tight", id="7"),
]


def test_whole_stream() -> None:
    assert parse([STREAM]) == EXPECTED


@pytest.mark.parametrize("chunks", every_two_way_split(STREAM))
def test_two_way_splits(chunks: list[bytes]) -> None:
    assert parse(chunks) == EXPECTED


def test_byte_by_byte() -> None:
    assert parse([bytes([b]) for b in STREAM]) == EXPECTED


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(b"data: a\n\n", ["a"], id="lf"),
        pytest.param(b"data: a\r\n\r\n", ["a"], id="crlf"),
        pytest.param(b"data: a\r\r", ["a"], id="cr"),
        pytest.param(b"data: a\r\n\n", ["a"], id="mixed"),
        pytest.param(b"data: a\ndata: b\n\n", ["a\nb"], id="joined"),
        pytest.param(b"data:  two spaces\n\n", [" two spaces"], id="one-space-stripped"),
        pytest.param(b"data\n\n", [], id="field-without-colon-is-empty"),
        pytest.param(b"data:\n\n", [], id="empty-data-not-dispatched"),
        pytest.param(b": comment\n\n", [], id="comment-only"),
        pytest.param(b"event: x\n\n", [], id="no-data"),
        pytest.param(b"data: a\n", [], id="unterminated-event-dropped"),
        pytest.param(b"\xef\xbb\xbfdata: bom\n\n", ["bom"], id="bom"),
        pytest.param(b"retry: 10\nfoo: bar\ndata: a\n\n", ["a"], id="unknown-fields"),
        pytest.param(b"data: a\n\ndata: b\n\n", ["a", "b"], id="two-events"),
    ],
)
def test_framing(payload: bytes, expected: list[str]) -> None:
    assert expected == [event.data for event in parse([payload])]


def test_event_type_resets_after_dispatch_and_id_persists() -> None:
    events = parse([b"event: note\nid: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n"])
    assert [(e.event, e.id) for e in events] == [("note", "1"), ("message", "1"), ("message", "2")]


def test_id_with_nul_is_ignored() -> None:
    assert [e.id for e in parse([b"id: a\x00b\ndata: x\n\n"])] == [None]


def test_invalid_utf8_is_replaced() -> None:
    assert [e.data for e in parse([b"data: a\xffb\n\n"])] == ["a\ufffdb"]


def test_five_megabyte_line_in_small_chunks() -> None:
    # Its speed (no quadratic re-scanning) is measured in benchmarks/bench_sse.py.
    payload = b"data: " + b"x" * 5_000_000 + b"\r\n\r\n"
    chunks = [payload[i : i + 4096] for i in range(0, len(payload), 4096)]
    events = parse(chunks)
    assert [len(e.data) for e in events] == [5_000_000]
