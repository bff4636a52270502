"""The official MCP SDK client talks to LocalGym in both answer modes."""

from __future__ import annotations

import aiohttp
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from eog_core.local import LATEST_PROTOCOL_VERSION, LocalGym, ResponseMode, read_demo_seed


async def test_official_sdk_client(
    http: aiohttp.ClientSession, response_mode: ResponseMode
) -> None:
    async with LocalGym.demo(response_mode=response_mode) as gym:
        body = {"database_id": "db_sdk", "sql_content": read_demo_seed()}
        async with http.post(f"{gym.url}/api/seed-database", json=body) as response:
            assert response.status == 200
        headers = {"x-database-id": "db_sdk", "x-user-email": "sdk@ourdesk.example"}
        async with (
            httpx.AsyncClient(headers=headers) as http_client,
            streamable_http_client(gym.mcp_url, http_client=http_client) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            assert initialized.protocolVersion == LATEST_PROTOCOL_VERSION
            assert initialized.serverInfo.name == "demo-csm-server"
            tools = await session.list_tools()
            assert "create_case" in {tool.name for tool in tools.tools}
            result = await session.call_tool("find_account", {"name": "Tidewater"})
            assert result.isError is False
            assert result.structuredContent is not None
            assert result.structuredContent["accounts"][0]["sys_id"] == "acc_004"
            result = await session.call_tool("update_case", {"case_id": "nope", "state": "new"})
            assert result.isError is True
        assert gym.tool_executions == {"find_account": 1, "update_case": 1}
        assert gym.session_ids() == []  # the SDK ends its session with DELETE on exit
