"""What the inspect-ai and Stirrup adapters share (#20): one session start, one tool-call
answer; against the real local gym, without either framework."""

from __future__ import annotations

from eog_core import load_task
from eog_core.gym import GymDirectory
from eog_core.integrations._sessions import SessionOptions, answer_tool_call
from eog_core.local import LocalGym, demo_paths, load_demo_trajectory

PATHS = demo_paths()


async def test_answers_tell_a_result_a_refusal_a_gym_failure_and_no_session_apart() -> None:
    async with LocalGym.demo() as gym, GymDirectory({gym.name: gym.url}) as directory:
        options = SessionOptions(directory=directory, seed_root=PATHS.directory)
        session = await options.start(load_task(PATHS.task))
        try:
            step = load_demo_trajectory()[0]
            ok = await answer_tool_call(lambda: session, step["name"], step["arguments"])
            assert (ok.is_error, ok.gym_error) == (False, None) and ok.observation.startswith("{")

            refused = await answer_tool_call(lambda: session, "no_such_tool", {})
            assert refused.is_error and refused.gym_error is None

            gym.drop_next(after_tool_call=True)
            dropped = await answer_tool_call(lambda: session, step["name"], step["arguments"])
            assert dropped.is_error and dropped.gym_error is not None
            assert session.trajectory[-1].error_kind == "gym_protocol"
        finally:
            await session.aclose()
        closed = await answer_tool_call(lambda: session, step["name"], step["arguments"])
        assert closed.is_error and closed.observation == closed.gym_error
        assert closed.observation.startswith("Error: ")
        assert gym.database_ids() == []


async def test_the_start_options_reach_the_session() -> None:
    """``extra`` goes to ``TaskSession.start``: with ``forward_any_tool`` a tool the task does
    not list reaches the gym (which does not know it either) instead of being refused here."""
    async with LocalGym.demo() as gym, GymDirectory({gym.name: gym.url}) as directory:
        for forward in (False, True):
            options = SessionOptions(
                directory=directory, seed_root=PATHS.directory, extra={"forward_any_tool": forward}
            )
            async with await options.start(load_task(PATHS.task)) as session:
                before = gym.method_counts.get("tools/call", 0)
                await answer_tool_call(lambda: session, "no_such_tool", {})
                assert gym.method_counts.get("tools/call", 0) - before == int(forward)
        assert gym.database_ids() == []
