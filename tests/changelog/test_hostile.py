"""Hostile changelog input (issue 15, items 9 and 11): refused with a located message, never a traceback,
never a hang; the `*` resolver (shared with `plan`) never backtracks."""

from __future__ import annotations

import json
import re

import pytest

from ci_tools.changelog import keys
from ci_tools.changelog.lint import Mode, lint_change

from .helpers import MASTER_KEYS, REPO, entry, history

H = history(3)
PR = Mode(REPO, pr=42)


def new_entry(desc_lines: str = '    - "x"\n', keys_lines: str = "    - cfg-a\n", extra: str = "") -> bytes:
    return (b"- config-keys:\n" + keys_lines.encode() + b"  description:\n" + desc_lines.encode()
            + b"  pr-link: XXX\n" + extra.encode())


def bomb(levels: int) -> str:
    out = ['    - &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    out += [f"    - &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("added,fragment", [
    (new_entry(bomb(7)), "aliases expand"),
    (new_entry("    - &r [*r]\n"), "recursive alias"),
    (new_entry("    - " + "[" * 330 + "]" * 330 + "\n"), "nested more than"),
    (new_entry("    - 0x_\n"), "cannot read the value '0x_'"),
    (new_entry(keys_lines="    - !!set {cfg-a}\n"), "!!set is not supported"),
    (new_entry(extra="  scenario-type: !custom [agentic-coding]\n"), "!custom is not supported"),
    (new_entry('    - "a\u0085b"\n'), "U+0085 NEXT LINE"),
    (new_entry('    - "a\u2028b"\n'), "U+2028 LINE SEPARATOR"),
    (new_entry('    - "a\u2029b"\n'), "U+2029 PARAGRAPH SEPARATOR"),
    (new_entry("    - a\ufeffb\n"), "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
])
def test_hostile_new_entries_are_refused(added, fragment):
    result = lint_change(H, H + b"\n" + added, file="log.yaml", mode=PR, master_keys=MASTER_KEYS)
    assert not result.ok
    assert any(fragment in f.message for f in result.errors), [f.message for f in result.errors]
    assert all(f.line for f in result.errors if "aliases expand" not in f.message)


def test_an_ambiguous_character_already_in_history_is_not_blamed_on_a_new_entry():
    old = entry(desc=("legacy\u2028text",), link="https://github.com/acme/bench/pull/9")
    base = H + b"\n" + old
    result = lint_change(base, base + b"\n" + new_entry(), file="log.yaml", mode=PR, master_keys=MASTER_KEYS)
    assert not [f for f in result.errors if "U+2028" in f.message]


def test_a_date_in_a_rejected_entry_renders_as_json(tmp_path):
    from ci_tools.cli.changelog import render

    result = lint_change(H, H + b"\n" + new_entry("    - 2024-01-01\n"), file="log.yaml", mode=PR,
                         master_keys=MASTER_KEYS)
    data = json.loads(render(result, "log.yaml", "json"))
    assert data["ok"] is False and data["added"][0]["entry"]["description"] == ["2024-01-01"]


def reference(pattern: str, key: str) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", "."), key, re.S) is not None


@pytest.mark.parametrize("pattern,key", [
    ("*", ""), ("*", "abc"), ("a*", "abc"), ("*c", "abc"), ("a*c", "ac"), ("a*b*c", "aXbYc"), ("a*b*c", "acb"),
    ("?", ""), ("a?c", "abc"), ("*a*a", "aaa"), ("*a*a", "a"), ("dsr1-*-sglang", "dsr1-fp8-h200-sglang"),
    ("[x]*", "[x]y"), ("a.c", "abc"), ("**", "x"), ("*?*", ""), ("*?*", "z"), ("*ab", "aab"), ("a*?b", "ab"),
])
def test_pattern_matching_equals_the_regex_definition(pattern, key):
    assert keys.matches(pattern, key) == reference(pattern, key)


def test_star_patterns_do_not_backtrack():
    """`*******Z` against long keys took 21 s with a `.*` per `*`; the atomic groups make it a scan. The
    check counts nothing with a clock: a backtracking matcher would not finish this test at all."""
    master = ["a" * 200 + str(i) for i in range(500)]
    for pattern in ("*" * 40 + "Z", "*a" * 40 + "Z", "?*" * 30 + "Z"):
        assert keys.resolve_keys([pattern], master) == ([], [pattern])
