"""``Text``: an upstream expression rendered as Python would, with only its own literals."""

from __future__ import annotations

import ast

import pytest

from eog_core.run._upstream_text import Text, find_function, first_assigned, list_appends


def _text(source: str) -> Text:
    node = ast.parse(source, mode="eval").body
    return Text(node)


@pytest.mark.parametrize(
    ("source", "values"),
    [
        ("f'{a!r} and {b:>5} and {c!s}'", {"a": "x", "b": 12, "c": None}),
        ("f\"{'yes' if ok else 'no'}: {n}\"", {"ok": False, "n": 3}),
        ("f\"- {t.get('name')}: {t.get('description', 'none')}\"", {"t": {"name": "q"}}),
        ("['head', json.dumps(data, indent=2), 'tail']", {"json.dumps(data, indent=2)": "{}"}),
        (
            "f'{self.subtask.title} / {results[-1].summary}'",
            {"self.subtask.title": 1, "results[-1].summary": [2]},
        ),
    ],
)
def test_it_renders_as_python_would(source: str, values: dict[str, object]) -> None:
    scope = {"a": "x", "b": 12, "c": None, "ok": False, "n": 3, "t": {"name": "q"}}
    scope |= {"json": __import__("json"), "data": {}}

    class Obj:
        def __init__(self, **kw: object) -> None:
            self.__dict__.update(kw)

    scope |= {"self": Obj(subtask=Obj(title=1)), "results": [Obj(summary=[2])]}
    assert _text(source).render(values) == eval(source, scope)  # the test's own literals


def test_the_slots_are_the_expressions_it_does_not_evaluate() -> None:
    text = _text("f\"{'a' if x.ok else 'b'} {t.get('k', 'd')} {len(items)}\"")
    assert text.slots() == {"x.ok", "t", "len(items)"}
    with pytest.raises(KeyError, match="len"):
        text.render({"x.ok": True, "t": {}})
    assert _text("'plain'").literal() == "plain" and _text("f'{x}'").literal() is None


def test_the_finders_read_a_module_s_structure() -> None:
    tree = ast.parse(
        "class C:\n"
        "    def m(self):\n"
        "        parts = ['a']\n"
        "        parts.append(f'{x}')\n"
        "        if y:\n"
        "            parts.append('z')\n"
        "        parts = ['again']\n"
    )
    method = find_function(tree, "C", "m")
    assert method is not None and find_function(tree, "C", "other") is None
    assert find_function(tree, "D", "m") is None
    first = first_assigned(method, "parts")
    assert isinstance(first, ast.List) and Text(first).render({}) == ["a"]
    assert [ast.unparse(node) for node in list_appends(method, "parts")] == ["f'{x}'", "'z'"]
