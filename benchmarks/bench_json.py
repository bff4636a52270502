"""The private standard-library names and orjson, each against the public fallback it replaces.

- ``json.encoder.c_make_encoder`` built once (``dumps_compact``) against
  ``JSONEncoder.encode`` (what the fallback, ``compact_encoder(None)``, is): a request body.
- ``JSONDecoder.scan_once`` called directly (``loads_bytes``) against ``json.loads``: a
  tool's answer.
- orjson (``dumps_compact_bytes``) against the standard library it must equal: the
  report's data for 2,000 rollouts.

``python benchmarks/bench_json.py`` prints the same pairs with ``timeit``, side by side.
"""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from eog_core._json import _read, _write, dumps_compact, dumps_compact_bytes, loads_bytes

BODY = {
    "jsonrpc": "2.0",
    "id": 12,
    "method": "tools/call",
    "params": {"name": "find_account", "arguments": {"name": "Harbor Lane", "limit": 5}},
}
ANSWER = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 12,
        "result": {
            "content": [{"type": "text", "text": json.dumps({"rows": [{"id": 1, "n": "a"}] * 8})}],
            "isError": False,
        },
    }
).encode()
REPORT = [
    {
        "task_id": f"task-{n}",
        "reward": 0.5,
        "verdicts": [
            {"name": f"v{k}", "success": k % 2 == 0, "actual": [k, "x"]} for k in range(6)
        ],
        "final_answer": "Renewed the contract and opened the case. " * 4,
        "latency_ms": 1234.5,
    }
    for n in range(2000)
]
_PUBLIC_COMPACT = _write.compact_encoder(None)


def _stdlib_bytes(value: Any) -> bytes:
    orjson, _write._orjson = _write._orjson, None
    try:
        return dumps_compact_bytes(value)
    finally:
        _write._orjson = orjson


def _scan_absent(raw: bytes) -> Any:
    scan, _read._SCAN = _read._SCAN, None
    try:
        return loads_bytes(raw)
    finally:
        _read._SCAN = scan


PAIRS: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "c_make_encoder": (lambda: dumps_compact(BODY), lambda: _PUBLIC_COMPACT(BODY)),
    "scan_once": (lambda: loads_bytes(ANSWER), lambda: _scan_absent(ANSWER)),
    "orjson": (lambda: dumps_compact_bytes(REPORT), lambda: _stdlib_bytes(REPORT)),
}


@pytest.mark.parametrize("name", list(PAIRS))
@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_json_fast_path_and_fallback(benchmark: BenchmarkFixture, name: str, path: str) -> None:
    benchmark.group = f"json-{name}"
    fast, fallback = PAIRS[name]
    assert fast() == fallback()
    benchmark(fast if path == "fast" else fallback)


if __name__ == "__main__":
    for name, (fast, fallback) in PAIRS.items():
        number = 20 if name == "orjson" else 20000
        best_fast = min(timeit.repeat(fast, number=number, repeat=5)) / number
        best_fallback = min(timeit.repeat(fallback, number=number, repeat=5)) / number
        print(
            f"{name}: {best_fast * 1e6:.2f} us vs {best_fallback * 1e6:.2f} us "
            f"({best_fallback / best_fast:.2f}x)"
        )
