"""``materialise``: a state document back into SQLite, exported again to the same state."""

from __future__ import annotations

from pathlib import Path

from eog_core.state import export_database, materialise, state_document, state_id, table_state
from eog_core.verify import SqliteSqlRunner


def document() -> dict[str, object]:
    case = table_state(
        ["id", "title", "weight", "payload"],
        ["id"],
        [
            {"id": 2, "title": "two", "weight": float("inf"), "payload": None},
            {"id": 1, "title": "one", "weight": 0.1, "payload": b"\x00\xff\x10"},
            {"id": 3, "title": "3", "weight": 1.0, "payload": None},
        ],
    )
    pair = table_state(["b", "a"], ["a", "b"], [{"b": "z", "a": 2}, {"b": "a", "a": 2}])
    loose = table_state(
        ["x", "y"], [], [{"x": 1, "y": "a"}, {"x": 1, "y": "a"}, {"x": "m", "y": 2}]
    )
    return state_document(
        {"gym-a": {"tables": {"case": case, "pair": pair}}, "gym-b": {"tables": {"loose": loose}}}
    )


async def test_a_materialised_state_exports_to_the_same_state(tmp_path: Path) -> None:
    original = document()
    files = materialise(original, tmp_path)
    with SqliteSqlRunner(files) as runner:
        gyms = {gym: await export_database(runner, gym, "db") for gym in files}
        again = state_document(gyms)
        assert state_id(again) == state_id(original)
        # an integer column keeps its affinity: text compares as a number, as on the gym
        outcome = await runner.run_sql(
            "gym-a", None, "SELECT title FROM \"case\" WHERE id = '1'", {}
        )
        assert outcome.body == {"data": [{"title": "one"}]}
        outcome = await runner.run_sql(
            "gym-a", None, 'SELECT title FROM "case" WHERE title = 3', {}
        )
        assert outcome.body == {"data": [{"title": "3"}]}
