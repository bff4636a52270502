"""``new_database_id``: plain ``secrets`` (one ``token_bytes`` per id) against the 4 KiB
buffer, lock and fork hook it replaced, and against ``secrets.choice`` per character.

A task makes one id per gym, and its client-side lifecycle costs about 2-3 ms of CPU
(docs/performance.md), so a difference under a microsecond does not show per task.
"""

from __future__ import annotations

import secrets
import string
import threading
import time

from pytest_benchmark.fixture import BenchmarkFixture

from eog_core.gym import new_database_id

ALPHABET = string.ascii_lowercase + string.digits
_BUFFER: list[str] = []
_LOCK = threading.Lock()


def buffered_id() -> str:
    """The replaced design: characters from 4 KiB reads, under a lock (fork hook omitted:
    it runs only in a forked child)."""
    with _LOCK:
        while len(_BUFFER) < 9:
            _BUFFER.extend(ALPHABET[b % 36] for b in secrets.token_bytes(4096) if b < 252)
        chars = _BUFFER[-9:]
        del _BUFFER[-9:]
    return f"db_{int(time.time() * 1000)}_{''.join(chars)}"


def choice_id() -> str:
    return f"db_{int(time.time() * 1000)}_{''.join(secrets.choice(ALPHABET) for _ in range(9))}"


def ids_of(make: object) -> int:
    assert callable(make)
    return len({make()[-9:] for _ in range(1000)})


def test_database_id_plain_secrets(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "database-id-x1000"
    assert benchmark(ids_of, new_database_id) == 1000


def test_database_id_buffered(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "database-id-x1000"
    assert benchmark(ids_of, buffered_id) == 1000


def test_database_id_secrets_choice(benchmark: BenchmarkFixture) -> None:
    benchmark.group = "database-id-x1000"
    assert benchmark(ids_of, choice_id) == 1000
