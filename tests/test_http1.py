"""eog_core._http1: requests and answers read whole, and every limit of Limits enforced."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eog_core._http1 import FramingError, Limits, RequestReader, ResponseReader, host_allowed

HEAD = b"POST /mcp/k?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8700\r\n"
CHUNKED = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"


def _requests(data: bytes, limits: Limits | None = None, *, drip: bool = False) -> list:
    reader = RequestReader(limits or Limits())
    for piece in [data[i : i + 1] for i in range(len(data))] if drip else [data]:
        reader.feed(piece)
    found = []
    while (message := reader.pop()) is not None:
        found.append(message)
    return found


def _feed_many(reader: RequestReader, piece: bytes, times: int) -> None:
    for _ in range(times):
        reader.feed(piece)


def _refused_drip(data: bytes, drip: bool) -> FramingError:
    with pytest.raises(FramingError) as caught:
        _requests(data, drip=drip)
    return caught.value


def _refused(data: bytes, limits: Limits | None = None) -> FramingError:
    with pytest.raises(FramingError) as caught:
        _requests(data, limits)
    return caught.value


@pytest.mark.parametrize("drip", [False, True])
def test_pipelined_requests_come_out_whole_in_order(drip: bool) -> None:
    data = (
        HEAD + b"Content-Length: 2\r\n\r\n{}" + CHUNKED + b"3\r\nabc\r\n0\r\n\r\n"
        b"GET / HTTP/1.0\r\n\r\n"
    )
    first, second, third = _requests(data, drip=drip)
    assert (first.method, first.target, first.body, first.keep_alive) == (
        "POST",
        "/mcp/k?x=1",
        b"{}",
        True,
    )
    assert first.header("host") == "127.0.0.1:8700"
    assert (second.body, second.chunked) == (b"abc", True)
    assert (third.version, third.keep_alive) == ("1.0", False)


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (CHUNKED + b"3;x\nabc\r\n0\r\n\r\n", 400),  # a bare LF in a chunk extension
        (CHUNKED + b" 3\r\nabc\r\n0\r\n\r\n", 400),  # a space before the chunk size
        (CHUNKED + b"3\r\nabc\r\n0\r\nnot a field\r\n\r\n", 400),  # a trailer line
        (CHUNKED + b"3;" + b"e" * 5000 + b"\r\nabc\r\n0\r\n\r\n", 400),  # a long extension
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),  # two
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", 501),
        (HEAD + b"Content-Length: 99000000\r\n\r\n", 413),  # over max_skipped_body
        (HEAD + b"X: y\r\n" * 101 + b"\r\n", 431),
        (HEAD + b"X: " + b"y" * 70000 + b"\r\n\r\n", 431),
    ],
)
def test_what_is_refused(data: bytes, status: int) -> None:
    assert _refused(data).status == status


def test_chunk_extensions_do_not_get_around_the_body_limit() -> None:
    limits = Limits(max_request_body=1000, max_chunk_line=1024)
    reader = RequestReader(limits)
    reader.feed(CHUNKED)
    with pytest.raises(FramingError) as caught:  # one byte of data, 1000 of extension, each
        _feed_many(reader, b"1;" + b"e" * 1000 + b"\r\nx\r\n", 10_000)
    assert (caught.value.status, caught.value.limit) == (413, "max_request_body")
    assert "with its framing" in caught.value.message  # the wire size, not the data, tripped
    assert reader.body_size < 1000


def test_a_chunk_over_the_body_limit_is_refused_before_its_data() -> None:
    reader = RequestReader(Limits(max_request_body=1000))
    with pytest.raises(FramingError) as caught:
        reader.feed(CHUNKED + b"%x\r\n" % (1 << 40) + b"x" * 10)
    assert (caught.value.status, caught.value.limit) == (413, "max_request_body")
    assert reader.body_size == 0


@pytest.mark.parametrize("size", [1024, 1025])
def test_a_chunk_line_is_bounded_exactly_however_it_arrives(size: int) -> None:
    line = b"3;" + b"e" * (size - 4) + b"\r\n"  # `size` bytes, its CRLF included
    assert len(line) == size
    data = CHUNKED + line + b"abc\r\n0\r\n\r\n"
    for drip in (False, True):
        if size <= 1024:
            [request] = _requests(data, drip=drip)
            assert request.body == b"abc"
        else:
            assert _refused_drip(data, drip).limit == "max_chunk_line"


def test_a_dripped_head_is_bounded() -> None:
    reader = RequestReader(Limits(max_head=4096))
    reader.feed(HEAD)
    with pytest.raises(FramingError) as caught:
        _feed_many(reader, b"X", 5000)
    assert caught.value.limit == "max_head"
    with pytest.raises(FramingError):  # for good
        reader.feed(b"\r\n")


def test_on_head_sees_the_head_before_the_body_and_may_drop_it() -> None:
    seen = []
    reader = RequestReader(Limits(), on_head=lambda m: seen.append(m.method) or True)
    reader.feed(HEAD + b"Content-Length: 4\r\n\r\n")
    assert seen == ["POST"] and reader.pop() is None and reader.mid_message
    reader.feed(b"abcd")
    message = reader.pop()
    assert message is not None and message.body == b""


def test_answers_read_by_the_client() -> None:
    reader = ResponseReader(Limits(max_response_body=10))
    reader.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n")
    reader.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n")
    reader.feed(b"HTTP/1.0 200 OK\r\n\r\nuntil")
    reader.eof()
    answers = [reader.pop() for _ in range(4)]
    assert [(a.status, a.body) for a in answers if a] == [
        (200, b"ok"),
        (204, b""),
        (200, b"ab"),
        (200, b"until"),
    ]
    with pytest.raises(FramingError) as caught:
        ResponseReader(Limits(max_response_body=10)).feed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"
        )
    assert caught.value.limit == "max_response_body"


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8700", True),
        ("localhost:8700", True),
        ("[::1]:8700", True),
        ("LOCALHOST:8700", True),
        ("localhost:8701", True),
        ("localhost", True),
        ("127.0.0.2", True),
        ("[::1]", True),
        ("evil.example:8700", False),
        ("localhost.evil.example", False),
        ("[::1", False),
        ("", False),
        (None, True),  # HTTP/1.0 without Host: no browser sends that
    ],
)
def test_the_host_rule(host: str | None, allowed: bool) -> None:
    assert host_allowed(host, allow_remote=False) is allowed
    assert host_allowed(host, allow_remote=True)


def test_a_body_over_the_limit_but_skippable_is_read_and_dropped() -> None:
    data = (
        HEAD + b"Content-Length: 2000\r\n\r\n" + b"x" * 2000 + b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    )
    big, after = _requests(data, Limits(max_request_body=1000))
    assert (big.too_large, big.body, after.target) == (True, b"", "/")


@pytest.mark.parametrize("drip", [False, True])
def test_bytes_after_a_closing_request_are_ignored(drip: bool) -> None:
    data = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /x HTTP/1.1\r\n\r\n"
    (only,) = _requests(data, drip=drip)
    assert (only.target, only.keep_alive) == ("/", False)


def test_an_upgrade_is_read_as_a_request_that_ends_the_connection() -> None:
    data = b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nxx"
    (only,) = _requests(data)
    assert only.keep_alive is False


def test_a_chunked_body_then_a_pipelined_request_in_one_piece() -> None:
    data = CHUNKED + b"3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n" + HEAD + b"Content-Length: 1\r\n\r\nz"
    for limits in (Limits(), Limits(max_chunk_line=4)):
        first, second = _requests(data, limits)
        assert (first.body, second.body, first.header("x-t")) == (b"abc", b"z", None)


class _Counting:
    """The real llhttp parser, with what it is fed counted."""

    def __init__(self, parser: object) -> None:
        self.parser, self.calls, self.fed = parser, 0, 0

    def feed_data(self, data: bytes) -> None:
        self.calls += 1
        self.fed += len(data)
        self.parser.feed_data(data)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.parser, name)


def test_a_dripped_head_is_fed_to_llhttp_once_in_whole_lines() -> None:
    """A head dripped a byte at a time was scanned again per byte (64 KiB: seconds); llhttp's
    caller joins a line's pieces by copying, so it is fed whole lines, each byte once."""
    lines = [b"X-%d: %s\r\n" % (n, b"v" * 500) for n in range(60)]
    data = HEAD + b"".join(lines) + b"\r\n"
    reader = RequestReader(Limits())
    counting = _Counting(reader.parser)
    reader.parser = counting
    for at in range(len(data)):
        reader.feed(data[at : at + 1])
    message = reader.pop()
    assert message is not None and len(message.headers) == 61
    assert counting.fed == len(data)
    assert counting.calls <= len(lines) + 3


# -- however the bytes are cut, the same messages ----------------------------------------------


@st.composite
def _pipeline(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, bytes]]]:
    """Valid requests back to back (GET, a Content-Length body, chunked with extensions and
    trailers), and what each should read as."""
    data, expected = b"", []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["get", "length", "chunked"]))
        body = b"b" * draw(st.integers(0, 2500))
        if kind == "get":
            data += b"GET /g HTTP/1.1\r\nHost: a\r\n\r\n"
            expected.append(("GET /g", b""))
        elif kind == "length":
            data += b"POST /l HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % len(body) + body
            expected.append(("POST /l", body))
        else:
            data += b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            sizes = draw(st.lists(st.integers(1, 1200), max_size=3))
            body = b""
            for size in sizes:
                extension = draw(st.sampled_from([b"", b";x=1", b";" + b"e" * 200]))
                data += b"%x%s\r\n" % (size, extension) + b"c" * size + b"\r\n"
                body += b"c" * size
            data += b"0\r\n" + draw(st.sampled_from([b"", b"X-T: 1\r\n"])) + b"\r\n"
            expected.append(("POST /c", body))
    return data, expected


@settings(max_examples=max(200, settings.default.max_examples), deadline=None)
@given(_pipeline(), st.lists(st.integers(0, 20_000), max_size=8))
def test_a_pipeline_reads_the_same_however_it_is_cut(
    pipeline: tuple[bytes, list[tuple[str, bytes]]], cuts: list[int]
) -> None:
    """Found by review: a request pipelined behind a chunked body, its head and the start of
    its body in the same read, threw the reader into an endless loop."""
    data, expected = pipeline
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    reader = RequestReader(Limits())
    for piece in pieces:
        reader.feed(piece)
    found = []
    while (message := reader.pop()) is not None:
        found.append((f"{message.method} {message.target}", message.body))
    assert found == expected


def test_a_request_pipelined_behind_a_chunked_body_in_the_same_read() -> None:
    reader = RequestReader(Limits())
    reader.feed(
        b"POST /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        b"POST /c HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n" + b"y" * 10
    )
    reader.feed(b"y" * 90)  # looped for ever before the fix
    first, second = reader.pop(), reader.pop()
    assert first is not None and second is not None
    assert (first.target, second.target, second.body) == ("/k", "/c", b"y" * 100)


@pytest.mark.parametrize(
    "after",
    [b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"],
    ids=["doubled-space", "empty-line-first"],
)
def test_a_request_behind_a_chunked_body_meets_the_head_rules(after: bytes) -> None:
    """What h11 refuses in a first request, refused behind a chunked body in the same read."""
    data = CHUNKED + b"0\r\n\r\n" + after
    reader = RequestReader(Limits())
    with pytest.raises(FramingError):
        reader.feed(data)
    first = reader.pop()
    assert first is not None and reader.pop() is None
