"""The control API's routes: JSON in, JSON out, one clear error object per refusal.

Errors answer ``{"error": {"code": ..., "message": ...}}``: 400 a malformed body,
401 no or a wrong token, 404 an unknown route or rollout, 409 no work to hand
out or a rollout that is not active, 410 a rollout that already ended, 413 a body
over the limit, 503 seeding failed (the reason is logged, never answered: it
can name gym URLs).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from eog_core._json import JsonInputError, loads_untrusted
from eog_core.errors import EogError, UsageError
from eog_core.gateway._http import Answer, Request, json_answer
from eog_core.gateway._plan import RunPlan, WorkRefused
from eog_core.gateway._rollout import GatewayRollout
from eog_core.run import classify_failure

if TYPE_CHECKING:
    from eog_core.gateway._mcp import McpHandler

__all__ = ["ControlApi", "json_error"]

log = logging.getLogger("eog_core.gateway")


def json_error(
    status: int, code: str, message: str, *, headers: dict[str, str] | None = None
) -> Answer:
    return json_answer({"error": {"code": code, "message": message}}, status, headers=headers)


def no_route(status: int, request: Request) -> Answer:
    """404 (no such path) or 405 (not that method on it)."""
    return json_error(
        status,
        "not_found" if status == 404 else "http_error",
        f"no such route: {request.method} {request.path[:100]}",
    )


_MCP_METHODS = frozenset({"POST", "DELETE", "GET", "HEAD"})


class Rollouts(Protocol):
    """What the control API asks of the gateway (``Gateway`` is one; this module sits
    below it and does not import it)."""

    @property
    def plan(self) -> RunPlan: ...
    def rollouts(self) -> list[GatewayRollout]: ...
    def ended(self, most: int = 100) -> list[dict[str, Any]]: ...
    def find(self, rollout_id: str) -> GatewayRollout | str | None: ...
    def find_by_key(self, mcp_key: str) -> GatewayRollout | str | None: ...
    async def open_rollout(
        self, task_id: str | None = None, repeat: int | None = None
    ) -> GatewayRollout: ...
    async def finish(self, rollout: GatewayRollout, final_answer: str) -> dict[str, Any]: ...
    async def abandon(self, rollout: GatewayRollout, reason: str) -> dict[str, Any]: ...


class _BadBody(Exception):
    pass


def _json_object(request: Request) -> dict[str, Any]:
    body = request.body
    if not body.strip():
        return {}
    try:
        value = loads_untrusted(body)
    except JsonInputError as exc:
        raise _BadBody(f"the body is not JSON we accept: {exc.reason}") from None
    if not isinstance(value, dict):
        raise _BadBody("the body must be a JSON object")
    return value


class ControlApi:
    """The gateway's routes; each looks up its rollout and answers refusals with one clear error."""

    def __init__(self, gateway: Rollouts, mcp: McpHandler) -> None:
        self.gateway = gateway
        self.mcp = mcp

    def route(self, request: Request) -> Awaitable[Answer]:
        """Answer ``request`` by its path and method: the routes of the module's docstring
        only; anything else is a 404 (no such path) or a 405 (no such method on it).

        One table lookup per request, no router, no middleware chain: the MCP endpoint is
        the hot route (every tool call of every agent), its POST handed straight to the MCP
        handler (no coroutine of ours around it)."""
        parts = request.path.split("/")
        if len(parts) == 3 and parts[1] == "mcp" and parts[2] and request.method == "POST":
            found = self._rollout(self.gateway.find_by_key(parts[2]))
            if not isinstance(found, Answer):
                return self.mcp.post(request, found, request.body)
        return self._route(request, parts)

    async def _route(self, request: Request, parts: list[str]) -> Answer:
        method = request.method
        if len(parts) == 3 and parts[1] == "mcp" and parts[2]:
            if method not in _MCP_METHODS:
                return no_route(405, request)
            found = self._rollout(self.gateway.find_by_key(parts[2]))
            if isinstance(found, Answer):
                return found
            if method == "DELETE":
                return self.mcp.delete(request, found)
            return json_error(
                405,
                "method_not_allowed",
                "this endpoint opens no server-to-client stream; POST requests",
                headers={"Allow": "POST, DELETE"},
            )
        if len(parts) == 2 and parts[1] == "rollouts":
            if method == "POST":
                return await self.create(request)
            if method in ("GET", "HEAD"):
                return await self.list(request)
        elif len(parts) in (3, 4) and parts[1] == "rollouts" and parts[2]:
            wanted = "DELETE" if len(parts) == 3 else "POST"
            if len(parts) == 4 and parts[3] != "finish":
                return no_route(404, request)
            if method == wanted:
                found = self._rollout(self.gateway.find(parts[2]))
                if isinstance(found, Answer):
                    return found
                return await (
                    self.delete(found) if len(parts) == 3 else self.finish(request, found)
                )
        else:
            return no_route(404, request)
        return no_route(405, request)  # a route of the table, not with that method

    @staticmethod
    def _rollout(found: GatewayRollout | str | None) -> GatewayRollout | Answer:
        """The active rollout a path names (by its id, or its MCP URL's key), or the refusal."""
        if found is None:
            return json_error(404, "unknown_rollout", "no rollout of that id on this gateway")
        if isinstance(found, str):
            return json_error(
                410,
                f"rollout_{found}",
                f"that rollout is {found}; start another with POST /rollouts",
            )
        if found.state != "active":
            return json_error(409, f"rollout_{found.state}", f"that rollout is {found.state}")
        return found

    async def create(self, request: Request) -> Answer:
        try:
            body = _json_object(request)
        except _BadBody as exc:
            return json_error(400, "bad_request", str(exc))
        task_id, repeat = body.get("task_id"), body.get("repeat")
        unknown = sorted(set(body) - {"task_id", "repeat"})
        if unknown:
            return json_error(400, "bad_request", f"unknown field(s): {', '.join(unknown)[:200]}")
        if task_id is not None and not isinstance(task_id, str):
            return json_error(400, "bad_request", "task_id must be a string")
        if repeat is not None and (type(repeat) is not int or repeat < 0):
            return json_error(400, "bad_request", "repeat must be a whole number >= 0")
        try:
            rollout = await self.gateway.open_rollout(task_id, repeat)
        except WorkRefused as exc:
            return json_error(exc.status, exc.code, str(exc))
        except EogError as exc:
            kind, _ = classify_failure(exc)
            log.warning("starting a rollout failed: %s: %s", type(exc).__name__, exc)
            return json_error(
                503,
                kind,
                f"the task's databases could not be seeded ({kind}); the gateway's log says why",
            )
        task = rollout.task
        mcp_url = f"{request.origin()}/mcp/{rollout.mcp_key}"
        return json_answer(
            {
                "rollout_id": rollout.rollout_id,
                "task_id": task.task_id,
                "repeat": rollout.repeat,
                "mcp_url": mcp_url,
                "system_prompt": task.system_prompt or "",
                "user_prompt": task.user_prompt or "",
            },
            201,
        )

    async def list(self, request: Request) -> Answer:
        plan = self.gateway.plan
        return json_answer(
            {
                "rollouts": [r.describe() for r in self.gateway.rollouts()],
                "ended": self.gateway.ended(),
                "planned": plan.total,
                "evaluated": len(plan.evaluated),
                "pending": plan.pending(),
            }
        )

    async def finish(self, request: Request, found: GatewayRollout) -> Answer:
        try:
            body = _json_object(request)
        except _BadBody as exc:
            return json_error(400, "bad_request", str(exc))
        answer = body.get("final_answer", "")
        if not isinstance(answer, str):
            return json_error(400, "bad_request", "final_answer must be a string")
        try:
            record = await self.gateway.finish(found, answer)
        except UsageError as exc:  # finished by another request meanwhile
            return json_error(409, "rollout_not_active", str(exc))
        return json_answer(record)

    async def delete(self, found: GatewayRollout) -> Answer:
        try:
            record = await self.gateway.abandon(found, "abandoned by the agent (DELETE)")
        except UsageError as exc:
            return json_error(409, "rollout_not_active", str(exc))
        return json_answer(record)
