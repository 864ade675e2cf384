"""What a recipe's text may not say (issue 35): a YAML 1.1 reading (`yes` is true to PyYAML, which
ci-tools reads recipes with, and text to editors and the recipe schema) and a character that hides or
reorders what a reviewer sees (a bidi control in `model:`). The rules are the changelog gate's own
(`ci_tools/yaml/readings.py`, `ci_tools/yaml/text.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import run

SEED = "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"


def _validate(scratch: Path, old: str, new: str) -> tuple[int, list[dict], int]:
    path = scratch / SEED
    text = path.read_text()
    assert old in text, old
    text = text.replace(old, new, 1)
    path.write_text(text)
    line = text[:text.index(new)].count("\n") + 1 + new[:new.index(":")].count("\n") if ":" in new else 0
    res = run(["config", "validate", "--root", str(scratch), "--format", "json"])
    found = [e for e in json.loads(res.out)["errors"] if e["file"] == SEED]
    return res.code, found, line


@pytest.mark.parametrize("old,new,words,hint", [
    ("trust-remote-code: true", "trust-remote-code: yes",
     "serve.args.trust-remote-code: `yes` is true to YAML 1.1", "write `true`"),
    ("trust-remote-code: true", "trust-remote-code: on", "`on` is true to YAML 1.1", "write `true`"),
    ("schedule-policy: shortest-prefill-first", "schedule-policy: 1_0",
     "`1_0` is the number 10 to YAML 1.1", 'quote it: `"1_0"`'),
    ("trust-remote-code: true", "trust-remote-code: !!bool true", "the YAML tag !!bool", "remove the tag"),
])
def test_a_value_yaml_versions_read_differently_is_refused(scratch: Path, old, new, words, hint):
    code, found, line = _validate(scratch, old, new)
    assert code == 1 and found, found
    assert words in found[0]["message"] and hint in found[0]["hint"] and found[0]["line"] == line, found


@pytest.mark.parametrize("char,name", [("\\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE (a bidi control character)"),
                                       ("\\u200b", "U+200B ZERO WIDTH SPACE (an invisible format character)"),
                                       ("\\e", "U+001B ESCAPE (a C0 control character)")])
def test_a_hidden_character_in_model_is_refused(scratch: Path, char, name):
    text = (scratch / SEED).read_text()
    model = next(line for line in text.splitlines() if line.startswith("model: "))
    code, found, line = _validate(scratch, model, f'model: "deepseek-ai/{char}DeepSeek-V4.1-Flash"')
    assert code == 1, found
    ours = [e for e in found if "contains" in e["message"]]
    assert ours and ours[0]["message"] == f"model contains {name} at character 13" and ours[0]["line"] == line


def test_the_shipped_recipes_pass(scratch: Path):
    res = run(["config", "validate", "--root", str(scratch), "--format", "json"])
    assert not [e for e in json.loads(res.out)["errors"] if e["file"].startswith("recipes/")], res.out
