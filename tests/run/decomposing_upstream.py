"""A stand-in for upstream's ``orchestrators/decomposing_planner.py`` in our own words: the
same shape (where each text is, what it fills in, the caps' defaults), so the parser, the
orchestrator and the differential's golden are tested without upstream's text in the
project. ``EOG_UPSTREAM_DIR`` tests use the real file."""

from __future__ import annotations

from pathlib import Path

SOURCE = '''
class DecomposingPlanGenerator:
    @staticmethod
    def _default_decomposition_template() -> str:
        return """SPLIT {user_task}
UNDER {system_policy}
TOOLS:
{tools}
ANSWER {{"strategic_plan": "...", "subtasks": [...]}}"""

    def construct_prompt(self, system_prompt, user_prompt, tools):
        tool_descriptions = [f"* {t.get('name')} does {t.get('description', 'something')}" for t in tools]
        return self.decomposition_prompt_template.format(tools="\\n".join(tool_descriptions))

    async def generate_plan_and_subtasks(self, system_prompt, user_prompt, tools, max_retries: int = 3):
        strategic_plan = rationale = ""
        full_plan = f"PLAN {strategic_plan} BECAUSE {rationale}"
        return full_plan


class WorkingMemory:
    def to_prompt_string(self) -> str:
        if not self.data:
            return "MEMORY: none"
        parts = ["MEMORY:", "```json", json.dumps(self.data, indent=2), "```"]
        return "\\n".join(parts)


class ExecutorSubAgent:
    def _generate_subtask_prompt(self) -> str:
        memory_context = self.working_memory.to_prompt_string()
        return f"""DO {self.subtask.title}
HOW {self.subtask.description}
WHY {self.subtask.rationale}
THEN {self.subtask.expected_outcome}
{memory_context}
GO"""

    async def execute(self, max_iterations: int = 25):
        try:
            pass
        except Exception as e:
            return SubTaskResult(summary=f"FAILED: {str(e)}")
        summary = final_response or (f"{len(conversation_flow)} calls made")
        return summary

    async def _extract_memory_updates(self, messages, tool_results):
        actions_summary = []
        for tr in tool_results:
            actions_summary.append(
                f"> {tool_name} {'ok' if success else 'failed'}: {json.dumps(result_data, indent=2) if result_data else '-'}"
            )
        actions_text = "\\n".join(actions_summary) if actions_summary else "NO CALLS"
        extraction_prompt = f"""KEEP WHAT MATTERS AFTER {self.subtask.title}
HOW: {self.subtask.description}
GOAL: {self.subtask.expected_outcome}
CALLS:
{actions_text}
ANSWER JSON"""
        return extraction_prompt


class DecomposingPlannerOrchestrator:
    def __init__(self, *args, max_iterations: int = 25, **kwargs):
        pass

    def _generate_final_output(self, results):
        parts = ["SUMMARY"]
        for result in results:
            status = "+" if result.success else "-"
            parts.append(f"[{status}] {result.subtask_id} {result.title}")
            parts.append(f"  {result.summary}")
            if result.error:
                parts.append(f"  ERROR {result.error}")
        if results:
            parts.append(f"LAST {results[-1].summary}")
        return "\\n".join(parts)
'''


def fake_upstream(folder: Path, source: str = SOURCE) -> Path:
    """``folder`` as an upstream checkout holding ``orchestrators/decomposing_planner.py``."""
    (folder / "orchestrators").mkdir(parents=True, exist_ok=True)
    (folder / "orchestrators" / "decomposing_planner.py").write_text(source, encoding="utf-8")
    return folder
