"""Context and auth headers: upstream mapping, strict cleaning, secrets kept out of sight."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from eog_core.errors import EogError, SchemaError
from eog_core.gym import AuthConfig, GymClient, HeaderError, auth_headers, context_headers
from eog_core.tasks import structure_or_raise

SECRET = "tok-3f9a-very-secret"


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        pytest.param({"user_email": "a@b.c"}, {"x-user-email": "a@b.c"}, id="prefixed"),
        pytest.param({"User_Email": "a"}, {"x-user-email": "a"}, id="lowered"),
        pytest.param({"X-Tenant_Id": "t"}, {"X-Tenant_Id": "t"}, id="x-kept-as-is"),
        pytest.param({" user_email ": "a"}, {"x-user-email": "a"}, id="key-stripped"),
        pytest.param({"n": 3, "b": True}, {"x-n": "3", "x-b": "True"}, id="str-values"),
        pytest.param({}, {}, id="empty"),
    ],
)
@pytest.mark.parametrize("mode", ["upstream", "strict"])
def test_mapping_common_to_both_modes(
    mode: Any, context: dict[str, Any], expected: dict[str, str]
) -> None:
    assert expected == context_headers(context, mode=mode)


def test_upstream_mode_keeps_value_whitespace_and_empty_keys() -> None:
    assert context_headers({"user_email": " a@b.c ", "  ": "v"}, mode="upstream") == {
        "x-user-email": " a@b.c ",
        "x-": "v",
    }


def test_strict_mode_trims_values_and_drops_empty_keys() -> None:
    assert context_headers({"user_email": " a@b.c\t", "  ": "v"}, mode="strict") == {
        "x-user-email": "a@b.c"
    }


@pytest.mark.parametrize("mode", ["upstream", "strict"])
@pytest.mark.parametrize(
    "context",
    [{"user": "a\r\nx-evil: 1"}, {"us\ner": "a"}, {"user": "a\x00"}],
    ids=["crlf-value", "lf-key", "nul-value"],
)
def test_unsendable_headers_are_refused_with_a_named_error(
    mode: Any, context: dict[str, str]
) -> None:
    with pytest.raises(HeaderError) as caught:
        context_headers(context, mode=mode)
    assert isinstance(caught.value, EogError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.header.startswith("x-us")


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        pytest.param(
            AuthConfig(type="bearer", token=SECRET),
            {"Authorization": f"Bearer {SECRET}"},
            id="bearer",
        ),
        pytest.param(
            AuthConfig(type="bearer", token=SECRET, header_name="X-Auth"),
            {"X-Auth": f"Bearer {SECRET}"},
            id="bearer-custom-header",
        ),
        pytest.param(
            AuthConfig(type="api_key", token=SECRET, header_name="X-API-Key"),
            {"X-API-Key": SECRET},
            id="api-key",
        ),
        pytest.param(None, {}, id="none"),
    ],
)
def test_auth_headers(auth: AuthConfig | None, expected: dict[str, str]) -> None:
    assert expected == auth_headers(auth)


def test_auth_from_upstream() -> None:
    auth = structure_or_raise({"type": "api_key", "token": SECRET, "header_name": "K"}, AuthConfig)
    assert AuthConfig(type="api_key", token=SECRET, header_name="K") == auth
    assert (
        structure_or_raise({"type": "bearer", "token": SECRET}, AuthConfig).header_name
        == "Authorization"
    )
    with pytest.raises(SchemaError, match="expected one of") as info:
        structure_or_raise({"type": "oauth", "token": SECRET}, AuthConfig)
    assert info.value.path == "$.type"
    assert SECRET not in str(info.value)


def test_auth_token_with_newline_is_refused_without_showing_it() -> None:
    with pytest.raises(HeaderError) as caught:
        auth_headers(AuthConfig(type="bearer", token="abc\r\ndef"))
    assert "abc" not in str(caught.value)


async def test_secrets_never_appear_in_repr_str_or_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    auth = AuthConfig(type="bearer", token=SECRET)
    caplog.set_level(logging.DEBUG)
    # Port 9 (discard) on loopback is closed: every request fails and logs.
    async with GymClient("http://127.0.0.1:9", name="g", auth=auth) as client:
        assert SECRET not in repr(client)
        assert SECRET not in str(client)
        await client.health()
        await client.run_sql("SELECT 1", database_id="d")
    for text in (repr(auth), str(auth), caplog.text):
        assert SECRET not in text
    assert "***" in repr(auth)
