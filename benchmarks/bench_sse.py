"""The SSE parser on a 5 MB event fed in 4 KiB chunks: linear, not quadratic.

Quadratic re-scanning of the ~1,200 chunks would take tens of seconds; the
parser should stay within a small factor of one ``bytes.split`` over the payload.
"""

from __future__ import annotations

from pytest_benchmark.fixture import BenchmarkFixture

from eog_core.gym import SseParser

PAYLOAD = b"data: " + b"x" * 5_000_000 + b"\r\n\r\n"
CHUNKS = [PAYLOAD[i : i + 4096] for i in range(0, len(PAYLOAD), 4096)]


def parse_all() -> int:
    parser = SseParser()
    events = [event for chunk in CHUNKS for event in parser.feed(chunk)]
    parser.close()
    return sum(len(event.data) for event in events)


def test_sse_five_megabytes_in_small_chunks(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "sse-5MB"
    assert benchmark(parse_all) == 5_000_000


def test_sse_floor_one_split(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "sse-5MB"
    assert len(benchmark(lambda: b"".join(CHUNKS).split(b"\r\n"))) == 3
