"""``EogResourcesServer``: the routes, the rollouts' lifecycle, the verify answer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from fastapi import FastAPI, HTTPException, Request, Response
from nemo_gym.base_resources_server import (
    ResourcesCloseSessionRequest,
    ResourcesCloseSessionResponse,
    ResourcesSeedSessionRequest,
    ResourcesSeedSessionResponse,
    SimpleResourcesServer,
)
from nemo_gym.failure_kinds import validate_failure_kind
from nemo_gym.server_utils import SESSION_ID_KEY, get_response_json, raise_for_status
from pydantic import PrivateAttr

from eog_core.errors import EogError, SchemaError, SeedError, UsageError
from eog_core.gym import GymDirectory, Janitor, TaskSession
from eog_core.integrations import nemo_gym_failure_kind
from eog_core.integrations.nemo_gym._metrics import aggregate_rollouts
from eog_core.integrations.nemo_gym._rollouts import LoopResources, Rollout
from eog_core.integrations.nemo_gym._schema import (
    EogResourcesServerConfig,
    EogSeedSessionRequest,
    EogSeedSessionResponse,
    EogVerifyRequest,
    EogVerifyResponse,
)
from eog_core.model_view import final_answer, tool_observation
from eog_core.run import verify_both
from eog_core.tasks import ToolSnapshot, load_task, load_tool_snapshots
from eog_core.verify import JudgeRequest, TaskVerdict

__all__ = ["EogResourcesServer"]

#: Tool-call error kinds that say the gym failed, not the model.
_INFRASTRUCTURE = frozenset(
    {"gym_unreachable", "gym_timeout", "gym_protocol", "gym_http", "gym_error"}
)
#: Finished session keys remembered (the newest): a closed key is not seeded again, and a
#: retried verify gets the first answer (a retry comes right after).
_FINISHED_KEPT = 4096


class EogResourcesServer(SimpleResourcesServer):
    """EnterpriseOps-Gym tasks as a NeMo Gym resources server."""

    #: NeMo Gym 0.7 starts a Ray cluster for a server unless it declares otherwise: this
    #: one runs no Ray work (its rollouts are HTTP calls to the gyms).
    ray_enabled: ClassVar[bool] = False

    config: EogResourcesServerConfig
    _rollouts: dict[str, Rollout] = PrivateAttr(default_factory=dict)
    _finished: dict[str, EogVerifyResponse | HTTPException | None] = PrivateAttr(
        default_factory=dict
    )
    """Closed keys (bounded, oldest forgotten first), with their verify answer if any."""
    _loops: dict[asyncio.AbstractEventLoop, LoopResources] = PrivateAttr(default_factory=dict)
    _snapshots: dict[str, ToolSnapshot] | None = PrivateAttr(default=None)

    def setup_webserver(self) -> FastAPI:
        if (self.config.num_workers or 1) > 1:
            # Each uvicorn worker is a process with its own sessions, and the kernel hands
            # a rollout's requests to any of them: tool calls would answer 400 at random.
            raise UsageError(
                f"EogResourcesServer keeps rollouts in its process: num_workers must be 1, "
                f"not {self.config.num_workers} (run more server instances instead)"
            )
        app = super().setup_webserver()
        # After the base routes, which Starlette matches first: /verify stays /verify.
        app.post("/{tool_name}")(self.call_tool)
        inner = app.router.lifespan_context

        @contextlib.asynccontextmanager
        async def lifespan(application: FastAPI) -> AsyncIterator[Any]:
            await self._resources()  # the pool is up before the first rollout arrives
            try:
                async with inner(application) as state:
                    yield state
            finally:
                await self.aclose()

        app.router.lifespan_context = lifespan
        return app

    async def aclose(self) -> None:
        """Shut down on the running loop: close its open rollouts (deleting their
        databases) and release its gym directory. The server's lifespan calls this."""
        loop = asyncio.get_running_loop()
        mine = [self._rollouts.pop(k) for k, r in list(self._rollouts.items()) if r.loop is loop]
        for rollout in mine:
            rollout.seeding.cancel()  # a seed in flight cleans up after itself
        await asyncio.gather(*(r.seeding for r in mine), return_exceptions=True)
        resources = self._loops.pop(loop, None)
        if resources is not None:
            await resources.aclose()

    # -- sessions -----------------------------------------------------------

    async def _resources(self) -> tuple[GymDirectory, Janitor, dict[str, ToolSnapshot] | None]:
        """This loop's directory (held from its first use) and janitor, and the snapshots."""
        loop = asyncio.get_running_loop()
        for other in [lp for lp in self._loops if lp.is_closed()]:
            del self._loops[other]  # its pool closed with it
        resources = self._loops.get(loop)
        if resources is None:  # stored before the first await: one per loop
            resources = self._loops[loop] = LoopResources(
                self.config.gym_url_pools, self.config.session_ttl_seconds
            )
            await resources.hold()
        if self._snapshots is None and self.config.tool_snapshots:
            self._snapshots = load_tool_snapshots(self.config.tool_snapshots)
        return resources.directory, resources.janitor, self._snapshots

    async def _janitor(self) -> Janitor:
        """The running loop's janitor (sessions run on the loop that made them)."""
        return (await self._resources())[1]

    async def _start(self, row: Mapping[str, Any]) -> TaskSession:
        try:
            task = load_task(dict(row))
        except SchemaError as exc:
            raise HTTPException(status_code=422, detail=f"not an EOG row: {exc}") from exc
        directory, janitor, snapshots = await self._resources()
        try:
            return await TaskSession.start(
                task,
                directory=directory,
                seed_root=self.config.seed_sql_root,
                tool_snapshots=snapshots,
                janitor=janitor,
                tool_errors="result",
            )
        except SeedError as exc:  # the episode fails and is retried; it never scores 0
            raise HTTPException(status_code=503, detail=f"seeding failed: {exc}") from exc

    async def _seeded(
        self, key: str, row: Mapping[str, Any], episode_id: str | None
    ) -> TaskSession:
        """Seed once per key: a repeated seed gets the same session, a closed key none."""
        self._forget_expired()
        if key in self._finished:
            raise HTTPException(status_code=409, detail=f"session {key!r} was closed")
        rollout = self._rollouts.get(key)
        if rollout is None:
            rollout = self._rollouts[key] = Rollout(
                asyncio.get_running_loop().create_task(self._start(row)), episode_id
            )
        elif episode_id is not None and rollout.episode_id not in (None, episode_id):
            raise HTTPException(status_code=409, detail=f"session {key!r} has another episode")
        try:
            return await rollout.session(await self._janitor())
        except HTTPException:
            self._rollouts.pop(key, None)
            raise

    async def seed_session(  # type: ignore[override]
        self,
        request: Request,
        body: ResourcesSeedSessionRequest | EogSeedSessionRequest,
    ) -> ResourcesSeedSessionResponse | EogSeedSessionResponse:
        if isinstance(body, ResourcesSeedSessionRequest):
            key = body.resources_session_id
            request.session[SESSION_ID_KEY] = key  # tool calls and verify find it by cookie
            await self._seeded(key, dict(body.task_data), str(body.episode_id))
            return ResourcesSeedSessionResponse(resources_session_id=key)
        key = request.session[SESSION_ID_KEY]
        session = await self._seeded(key, body.model_dump(), None)
        return EogSeedSessionResponse(databases=dict(session.database_ids))

    def _finish(self, key: str, answer: EogVerifyResponse | HTTPException | None = None) -> None:
        """Remember ``key`` as closed (and its verify answer, for a retried verify)."""
        if answer is not None or key not in self._finished:
            self._finished[key] = answer
        while len(self._finished) > _FINISHED_KEPT:  # the oldest first (insertion order)
            del self._finished[next(iter(self._finished))]

    def _forget_expired(self) -> None:
        """Drop the rollouts whose session the janitor closed (idle past the TTL)."""
        for key in [k for k, rollout in self._rollouts.items() if rollout.expired()]:
            del self._rollouts[key]
            self._finish(key)

    async def _close(self, key: str) -> None:
        self._finish(key)
        rollout = self._rollouts.pop(key, None)
        if rollout is None:
            return
        try:
            session = await rollout.session(await self._janitor())
        except HTTPException:
            return  # a failed seed left nothing behind
        await session.aclose()

    async def close_resources_session(
        self, body: ResourcesCloseSessionRequest
    ) -> ResourcesCloseSessionResponse:
        await self._close(body.resources_session_id)
        return ResourcesCloseSessionResponse(resources_session_id=body.resources_session_id)

    async def _session(self, request: Request) -> tuple[str, Rollout, TaskSession]:
        key = request.session.get(SESSION_ID_KEY)
        rollout = self._rollouts.get(key) if isinstance(key, str) else None
        if key is None or rollout is None:
            raise HTTPException(
                status_code=400, detail="no seeded session: call /seed_session first"
            )
        if rollout.expired():
            self._forget_expired()
            raise HTTPException(
                status_code=409,
                detail=(
                    f"session {key!r} was closed after {self.config.session_ttl_seconds:g} s idle "
                    "(session_ttl_seconds); its databases are deleted"
                ),
            )
        return key, rollout, await rollout.session(await self._janitor())

    # -- tools --------------------------------------------------------------

    async def call_tool(self, tool_name: str, request: Request) -> Response:
        """What upstream's model sees for one call: ``json.dumps`` of the MCP result."""
        _, _, session = await self._session(request)
        raw = (await request.body()).decode("utf-8", errors="replace")
        result = await session.call_tool(tool_name, raw)
        return Response(content=tool_observation(result), media_type="application/json")

    # -- verify -------------------------------------------------------------

    async def _judge(self, request: JudgeRequest) -> str:
        ref = self.config.judge_model_server
        if ref is None:
            raise EogError("no judge_model_server configured for response_check verifiers")
        body = {
            "input": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.user_prompt},
            ],
            "temperature": request.temperature,
        } | self.config.judge_responses_create_params
        answer = await self.server_client.post(
            server_name=ref.name, url_path="/v1/responses", json=body
        )
        await raise_for_status(answer)
        return final_answer(await get_response_json(answer))

    async def verify(self, request: Request, body: EogVerifyRequest) -> EogVerifyResponse:  # type: ignore[override]
        key = request.session.get(SESSION_ID_KEY)
        earlier = self._finished.get(key) if isinstance(key, str) else None
        if isinstance(earlier, HTTPException):  # a retried verify: the databases are gone,
            raise HTTPException(status_code=earlier.status_code, detail=earlier.detail)
        if earlier is not None:  # so it gets the first answer again
            return earlier
        key, _, session = await self._session(request)
        final = final_answer(body.response.model_dump(mode="json"))
        judge = self._judge if self.config.judge_model_server else None
        try:  # one set of verifier queries for both verdicts, as ``eog-core run`` sends
            strict, parity = await verify_both(session, final, judge)
        finally:
            await self._close(key)
        response = self._response(body, session, strict, parity)
        if response.mask_sample and self.config.on_infrastructure_failure == "fail":
            failed = HTTPException(
                status_code=503, detail=f"{response.failure_kind}: {response.failure_reason}"
            )
            self._finish(key, failed)
            raise failed
        self._finish(key, response)
        return response

    def _response(
        self, body: EogVerifyRequest, session: TaskSession, strict: TaskVerdict, parity: TaskVerdict
    ) -> EogVerifyResponse:
        chosen = strict if self.config.reward_policy == "strict" else parity
        faults = [r for r in session.trajectory if r.error_kind in _INFRASTRUCTURE]
        kind = chosen.failure_kind or (faults[0].error_kind if faults else None)
        reason = None
        if faults:
            reason = f"{len(faults)} tool call(s) failed on the gym; first: {faults[0].error}"
        elif chosen.failure_kind is not None:
            reason = next((r.error for r in chosen.results if r.error), chosen.failure_kind)
        reward = chosen.pass_rate if self.config.fractional_reward else chosen.reward
        return EogVerifyResponse(  # the body's fields as they are: no dump and re-validation
            **dict(body),
            reward=float(reward),
            mask_sample=bool(faults) or not chosen.evaluation_completed,
            failure_kind=validate_failure_kind(nemo_gym_failure_kind(kind)),
            failure_reason=reason,
            task_id=chosen.task_id,
            domain=chosen.domain,
            success=chosen.success,
            verifier_pass_rate=chosen.pass_rate,
            evaluation_completed=chosen.evaluation_completed,
            strict_success=strict.success,
            strict_pass_rate=strict.pass_rate,
            parity_success=parity.success,
            parity_pass_rate=parity.pass_rate,
            num_verifiers_defined=chosen.num_defined,
            num_verifiers_scored=chosen.num_scored,
            num_tool_calls=sum(not r.local for r in session.trajectory),
            num_tool_errors=sum(r.is_error for r in session.trajectory),
            verification_results=parity.verification_results(),
            strict_verdict=strict.to_row(),
            parity_verdict=parity.to_row(),
            tool_latencies_ms=[
                {"tool": r.name, "gym": r.gym, "latency_ms": round(r.latency_ms, 1)}
                for r in session.trajectory
                if not r.local
            ],
        )

    # -- metrics ------------------------------------------------------------

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> dict[str, Any]:
        """Success and verifier pass rates (overall and ``<domain>/...``) and pass@k."""
        return aggregate_rollouts(tasks)
