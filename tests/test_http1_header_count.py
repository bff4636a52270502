"""``max_headers`` counts every header line of a head, repeated names and trailers included
(the reader keeps the usual new name on a fast path): 431 exactly past the count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eog_core._http1 import FramingError, Limits, RequestReader, ResponseReader

pytestmark = pytest.mark.property

_NAMES = st.lists(st.sampled_from(["a", "b", "c", "d", "host"]), max_size=12)


def _refused(reader: RequestReader | ResponseReader, data: bytes) -> bool:
    try:
        reader.feed(data)
    except FramingError:
        failed = reader.failed
        return failed is not None and (failed.status, failed.limit) == (431, "max_headers")
    return False


@given(_NAMES, _NAMES, st.integers(min_value=1, max_value=12))
def test_a_request_s_lines_are_counted_repeats_and_trailers_included(
    names: list[str], trailers: list[str], most: int
) -> None:
    lines = ["Host: x", *(f"X-{name}: {n}" for n, name in enumerate(names))]
    head = "POST / HTTP/1.1\r\n" + "".join(f"{line}\r\n" for line in lines)
    chunked = head + "Transfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n"
    data = chunked + "".join(f"X-{name}: t\r\n" for name in trailers) + "\r\n"
    reader = RequestReader(Limits(max_headers=most))
    assert _refused(reader, data.encode()) == (len(lines) + 1 + len(trailers) > most)


@given(_NAMES, st.integers(min_value=1, max_value=12))
def test_an_answer_s_lines_are_counted(names: list[str], most: int) -> None:
    lines = [f"X-{name}: {n}" for n, name in enumerate(names)] + ["Content-Length: 0"]
    data = "HTTP/1.1 200 OK\r\n" + "".join(f"{line}\r\n" for line in lines) + "\r\n"
    reader = ResponseReader(Limits(max_headers=most))
    assert _refused(reader, data.encode()) == (len(lines) > most)


def test_repeated_names_are_joined_in_order() -> None:
    reader = RequestReader(Limits())
    reader.feed(b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\nX-B: 3\r\nX-A: 4\r\n\r\n")
    message = reader.pop()
    assert message is not None
    assert message.headers == {"host": "x", "x-a": "1, 2, 4", "x-b": "3"}
