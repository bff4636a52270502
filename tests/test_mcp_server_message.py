"""``parse_message`` builds its RpcMessage without the frozen class's ``__init__``: the same
record as the constructor's, field for field."""

from __future__ import annotations

import attrs
import pytest

from eog_core._mcp_server import RpcMessage, parse_message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}',
            RpcMessage("tools/call", {"name": "x"}, 7, True),
        ),
        (b'{"jsonrpc": "2.0", "method": "ping"}', RpcMessage("ping", {}, None, False)),
        (b'{"jsonrpc": "2.0", "id": "a", "method": "m"}', RpcMessage("m", {}, "a", True)),
    ],
)
def test_a_parsed_message_is_the_record_its_constructor_makes(
    body: bytes, expected: RpcMessage
) -> None:
    message = parse_message(body)
    assert expected == message
    assert isinstance(message, RpcMessage)
    assert attrs.asdict(message) == attrs.asdict(expected)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.method = "other"  # type: ignore[misc]


def test_the_fields_set_by_hand_are_all_the_record_has() -> None:
    assert [field.name for field in attrs.fields(RpcMessage)] == [
        "method",
        "params",
        "request_id",
        "is_request",
    ]
