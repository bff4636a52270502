"""eog_core._http1 against h11: whatever h11 refuses as a request, our server-side reader
refuses too (llhttp is laxer than h11 in places: those rules live in our layer).

Generated heads and bodies (near-valid framings with one or more hostile twists each) and
a hand corpus of known smuggling and desync framings. The default profile runs a few
hundred examples; ``HYPOTHESIS_PROFILE=ci`` many more.
"""

from __future__ import annotations

import h11
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eog_core._http1 import FramingError, Limits, RequestReader, ResponseReader

pytestmark = pytest.mark.property

LIMITS = Limits()


def h11_refuses(data: bytes) -> bool:
    """Whether h11 refuses the first request in ``data`` (fed whole, then the end)."""
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=LIMITS.max_head)
    return _refused(connection, data)


def _refused(connection: h11.Connection, data: bytes) -> bool:
    """Whether ``connection`` refuses the first message it receives in ``data`` (then the end)."""
    connection.receive_data(data)
    try:
        while True:
            event = connection.next_event()
            if isinstance(event, h11.EndOfMessage):
                return False
            if event is h11.NEED_DATA:
                connection.receive_data(b"")  # the peer closed: incomplete is refused now
            if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return False
    except h11.RemoteProtocolError:
        return True


def we_refuse(data: bytes) -> bool:
    """Whether our reader refuses the first request in ``data``, or cannot read it whole."""
    reader = RequestReader(LIMITS)
    try:
        reader.feed(data)
    except FramingError:
        return reader.pop() is None
    return reader.pop() is None


def check(data: bytes) -> None:
    if h11_refuses(data):
        assert we_refuse(data), data


# -- generated ---------------------------------------------------------------------------------


def _mostly(valid: bytes, *twists: bytes) -> st.SearchStrategy[bytes]:
    """``valid`` most of the time, else one of the ``twists`` (an example has a few)."""
    return st.sampled_from([valid] * (6 * len(twists)) + list(twists))


_odd = st.sampled_from([b" ", b"\t", b"\r", b"\n", b"\x00", b"\x7f", b"\x80", b"\xff", b":", b'"'])
_methods = _mostly(b"GET", b"POST", b"HEAD", b"get", b"G T", b"GET\t", b"", b"PO\x00ST")
_targets = _mostly(
    b"/", b"/rollouts", b"*", b"http://127.0.0.1/x", b"/a b", b"/a\x00", b"", b"/\x7f", b"/%zz"
)
_spaces = _mostly(b" ", b"  ", b"\t", b"", b" \t")
_versions = _mostly(b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.2", b"http/1.1", b"HTTP/11")
_eols = _mostly(b"\r\n", b"\n", b"\r", b"\r\r\n", b" \r\n", b"\t\r\n")
_names = st.one_of(
    _mostly(b"X-A", b"Host", b"Content-Length", b"Transfer-Encoding", b"X A", b"X-A ", b" X-A"),
    st.binary(min_size=1, max_size=6),
)
_colons = _mostly(b": ", b":", b" :", b"", b"::", b":\t")
_values = st.one_of(
    st.sampled_from([b"1", b"chunked", b"127.0.0.1", b"0", b"-1", b"2, 2", b"+2", b"0x2", b""]),
    st.binary(max_size=12),
    st.text(max_size=8).map(lambda text: text.encode()),
)


@st.composite
def _heads(draw: st.DrawFn) -> bytes:
    space = draw(_spaces)
    line = draw(_methods) + space + draw(_targets) + draw(_spaces) + draw(_versions)
    fields = [b"Host: 127.0.0.1"] * int(draw(_mostly(b"1", b"0", b"2")))
    for _ in range(draw(st.integers(0, 3))):
        fields.append(draw(_names) + draw(_colons) + draw(_values))
    if draw(st.integers(0, 5)) == 0:
        fields.insert(draw(st.integers(0, len(fields))), draw(_odd) + b"folded")
    if draw(st.integers(0, 3)) == 0:
        fields.append(b"Content-Length: " + draw(_mostly(b"3", b"03", b"3 ", b"", b"3, 3", b"-3")))
    head = line + draw(_eols) + b"".join(field + draw(_eols) for field in fields) + draw(_eols)
    return draw(_mostly(b"", b"\r\n", b"\n", b" ")) + head + b"abc"


_chunk_sizes = _mostly(b"3", b" 3", b"3 ", b"03", b"0x3", b"+3", b"-3", b"g", b"", b"3\t", b"A")
_extensions = _mostly(b"", b";x", b";x=y", b';x="y"', b";x\n", b";\x00", b"; x", b";", b";x=\x7f")
_trailers = _mostly(b"", b"X-T: 1\r\n", b"not a field\r\n", b"X T: 1\r\n", b" X: 1\r\n", b"X:\n")


@st.composite
def _chunked(draw: st.DrawFn) -> bytes:
    coding = draw(_mostly(b"chunked", b"Chunked", b" chunked", b"chunked ", b"chunked, chunked"))
    head = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: " + coding + b"\r\n\r\n"
    body = b""
    for _ in range(draw(st.integers(1, 3))):
        body += draw(_chunk_sizes) + draw(_extensions) + draw(_eols) + b"abc" + draw(_eols)
    last = draw(_mostly(b"0", b"00", b" 0", b"0 "))
    return head + body + last + draw(_extensions) + draw(_eols) + draw(_trailers) + draw(_eols)


@settings(max_examples=max(300, settings.default.max_examples))
@given(_heads())
@example(b"GET / HTTP/1.1\r\n\r\n")
def test_a_head_h11_refuses_we_refuse(data: bytes) -> None:
    check(data)


@settings(max_examples=max(300, settings.default.max_examples))
@given(_chunked())
def test_a_chunked_body_h11_refuses_we_refuse(data: bytes) -> None:
    check(data)


@settings(max_examples=max(300, settings.default.max_examples))
@given(st.binary(max_size=64).map(lambda tail: b"GET / HTTP/1.1\r\nHost: a\r\n" + tail))
def test_bytes_after_a_head_h11_refuses_we_refuse(data: bytes) -> None:
    check(data)


# -- by hand -----------------------------------------------------------------------------------

_HOST = b"Host: 127.0.0.1\r\n"
_CHUNKED = b"POST / HTTP/1.1\r\n" + _HOST + b"Transfer-Encoding: chunked\r\n\r\n"

CORPUS = [
    b"GET / HTTP/1.1\r\n\r\n",  # no Host
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",  # two
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n",  # two, even in HTTP/1.0
    b"POST / HTTP/1.1\r\n" + _HOST + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nab",
    b"POST / HTTP/1.1\r\n" + _HOST + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST / HTTP/1.1\r\n" + _HOST + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n",
    b"POST / HTTP/1.1\r\n" + _HOST + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\n" + _HOST + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\n" + _HOST + b"Transfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\n" + _HOST + b"Content-Length: 1_0\r\n\r\n" + b"x" * 10,
    b"POST / HTTP/1.1\r\n" + _HOST + b"Content-Length:\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + _HOST + b" X: folded\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + _HOST + b"X: a\r\n folded\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + _HOST + b"X: a\rb\r\n\r\n",
    b"GET / HTTP/1.1\n" + _HOST + b"\n",
    b"GET / HTTP/1.1\r\n" + _HOST + b"\n",
    b"GET  / HTTP/1.1\r\n" + _HOST + b"\r\n",
    b"GET / HTTP/1.1 \r\n" + _HOST + b"\r\n",
    b"GET /\x00 HTTP/1.1\r\n" + _HOST + b"\r\n",
    b"GET / HTTP/1.1\r\n" + _HOST + b"X-\x00: 1\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + _HOST + b": empty name\r\n\r\n",
    _CHUNKED + b"3;x\nabc\r\n0\r\n\r\n",  # a bare LF in a chunk extension
    _CHUNKED + b" 3\r\nabc\r\n0\r\n\r\n",  # a space before the size
    _CHUNKED + b"3\r\nabc\r\n0\r\nnot a field\r\n\r\n",  # a trailer that is not a field
    _CHUNKED + b"3\r\nabc\n0\r\n\r\n",
    _CHUNKED + b"3\r\nabcd\r\n0\r\n\r\n",
    _CHUNKED + b"fffffffffffffffffffff\r\n",
    _CHUNKED + b"-1\r\n",
    _CHUNKED + b"3\r\nabc\r\n0\r\nX: a\r\n folded\r\n\r\n",
]


@pytest.mark.parametrize("data", CORPUS)
def test_the_hand_corpus(data: bytes) -> None:
    check(data)
    assert we_refuse(data) or not h11_refuses(data)


# -- answers (the gym client's reader) ---------------------------------------------------------


def h11_refuses_answer(data: bytes) -> bool:
    """Whether h11, as the client of one POST, refuses the first final answer in ``data``
    (fed whole, then the end)."""
    connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=LIMITS.max_head)
    connection.send(h11.Request(method="POST", target="/", headers=[("Host", "a")]))
    connection.send(h11.EndOfMessage())
    return _refused(connection, data)


def we_refuse_answer(data: bytes) -> bool:
    """Whether our client's reader refuses the first final answer in ``data`` (then the end)."""
    reader = ResponseReader(LIMITS)
    try:
        reader.feed(data)
        reader.eof()
    except FramingError:
        pass
    while (answer := reader.pop()) is not None:
        if answer.status >= 200:
            return False
    return True


def check_answer(data: bytes) -> None:
    if h11_refuses_answer(data):
        assert we_refuse_answer(data), data


_statuses = _mostly(b"200", b"404", b"20", b"2000", b"2x0", b"", b"-200")
_reasons = _mostly(b" OK", b"", b" ", b" O\x00K", b" \x7f", b"  OK")


@st.composite
def _answer_heads(draw: st.DrawFn) -> bytes:
    line = draw(_versions) + draw(_spaces) + draw(_statuses) + draw(_reasons)
    fields: list[bytes] = []
    for _ in range(draw(st.integers(0, 3))):
        fields.append(draw(_names) + draw(_colons) + draw(_values))
    if draw(st.integers(0, 5)) == 0:
        fields.insert(draw(st.integers(0, len(fields))), draw(_odd) + b"folded")
    if draw(st.integers(0, 2)) == 0:
        fields.append(b"Content-Length: " + draw(_mostly(b"3", b"03", b"3 ", b"", b"3, 3", b"-3")))
    return (
        line
        + draw(_eols)
        + b"".join(field + draw(_eols) for field in fields)
        + draw(_eols)
        + b"abc"
    )


@st.composite
def _chunked_answers(draw: st.DrawFn) -> bytes:
    coding = draw(_mostly(b"chunked", b"Chunked", b" chunked", b"chunked ", b"chunked, chunked"))
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: " + coding + b"\r\n\r\n"
    body = b""
    for _ in range(draw(st.integers(1, 3))):
        body += draw(_chunk_sizes) + draw(_extensions) + draw(_eols) + b"abc" + draw(_eols)
    last = draw(_mostly(b"0", b"00", b" 0", b"0 "))
    return head + body + last + draw(_extensions) + draw(_eols) + draw(_trailers) + draw(_eols)


@settings(max_examples=max(300, settings.default.max_examples))
@given(_answer_heads())
@example(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc")
@example(b"HTTP/1.1 200 O\x00K\r\nContent-Length: 3\r\n\r\nabc")  # llhttp takes it
def test_an_answer_head_h11_refuses_we_refuse(data: bytes) -> None:
    check_answer(data)


@settings(max_examples=max(300, settings.default.max_examples))
@given(_chunked_answers())
@example(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\nabc\r\n0\r\n\r\n")
@example(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n")
@example(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nno field\r\n\r\n")
def test_a_chunked_answer_h11_refuses_we_refuse(data: bytes) -> None:
    check_answer(data)
