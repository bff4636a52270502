"""A stand-in for upstream's ``orchestrators/planner_react.py`` in our own words: the same
shape (the template a static method returns, the f-string handing the plan over), so the
parser is tested without upstream's text in the project. ``EOG_UPSTREAM_DIR`` tests use the
real file."""

from __future__ import annotations

from pathlib import Path

SOURCE = '''
class SimplePlanGenerator:
    @staticmethod
    def _default_prompt_template() -> str:
        return """PLAN FOR {user_task}
UNDER {system_policy}
WITH {tools}"""


class PlannerReactOrchestrator:
    async def execute(self):
        plan = "?"
        enhanced_user_message = f"""TASK:
{self.config.user_prompt}
PLAN:
{plan}
GO."""
        return enhanced_user_message
'''


def fake_upstream(folder: Path, source: str = SOURCE) -> Path:
    """``folder`` as an upstream checkout holding ``orchestrators/planner_react.py``."""
    (folder / "orchestrators").mkdir(parents=True, exist_ok=True)
    (folder / "orchestrators" / "planner_react.py").write_text(source, encoding="utf-8")
    return folder
