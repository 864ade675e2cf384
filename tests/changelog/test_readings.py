"""Issue 25 finding 7: new entries mean one thing to every reader, and carry no hidden characters.

* YAML 1.1 (PyYAML: this gate, the planner) and YAML 1.2 (editors through the shipped JSON schema,
  ruamel.yaml) read `yes`, `on`, `1_0`, `010`, `1e3`, `0o17` differently; the lint refuses every new
  entry whose data depends on the reader. The references here are ruamel.yaml in 1.2 mode and the
  1.2.2 core schema written out from the spec below, not the lint's own resolver.
* Control, bidi and invisible characters written through escapes ("\\0", "\\e[31m", "\\u202e") are refused
  with the code point and where it is.
* A pr-link that names a PR in a sub-page form (`.../pull/2305/changes`) can only be corrected to its own
  canonical link, like the canonical form itself.
"""

from __future__ import annotations

import math
import re

import pytest
import yaml
from ruamel.yaml import YAML

from ci_tools.changelog.lint import Mode, lint_change

from .helpers import LINK, REPO, entry, history

PR = Mode(REPO, pr=42)
MAIN = Mode(REPO)

# Spellings that some reader takes for a boolean, number, date or null and another for text.
SPELLINGS = ["yes", "no", "on", "off", "Yes", "No", "ON", "OFF", "y", "n", "1_0", "010", "0b1", "0x_1", "1:30",
             "1e3", "1.0e3", "0o17", "1_000.5", "2024-01-01", "2024-01-01 10:00:00", "+1", ".5", "1.", "-0", "0x1F",
             "07", "1__0", "190:20:30", "NULL", "Null", "~", ".Inf", ".NaN", "True", "FALSE", "0o7_7",
             "6.8523015e+5", "685.230_15e+03", "+12_345", "0777", "1e-3", "-.inf", "1_0e5", "4", "true", "x"]
FIELDS = ["evals-only", "all-evals", "append-only", "eval-min-prefill-ep", "description", "config-keys",
          "scenario-type", "pr-link"]
_RUAMEL = YAML(typ="safe", pure=True)
_RUAMEL.version = (1, 2)


def _core(text: str):
    """YAML 1.2.2 core schema, section 10.3.2 (tag resolution of plain scalars)."""
    if re.fullmatch(r"null|Null|NULL|~|", text):
        return None
    if re.fullmatch(r"true|True|TRUE|false|False|FALSE", text):
        return text.lower() == "true"
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0o[0-7]+", text):
        return int(text[2:], 8)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text[2:], 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", text):
        return float(text)
    if re.fullmatch(r"[-+]?\.(inf|Inf|INF)", text):
        return -math.inf if text.startswith("-") else math.inf
    if re.fullmatch(r"\.nan|\.NaN|\.NAN", text):
        return math.nan
    return text


def _core_load(text: str):
    def build(node):
        if isinstance(node, yaml.MappingNode):
            return {build(k): build(v) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [build(v) for v in node.value]
        return _core(node.value) if node.style is None else node.value
    return build(yaml.compose(text, Loader=yaml.SafeLoader))


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _entry_with(field: str, value: str) -> bytes:
    desc = value if field == "description" else '"x"'
    lines = ["- config-keys:", f"    - {value if field == 'config-keys' else 'cfg-a'}", "  description:",
             f"    - {desc}",
             f"  pr-link: {value if field == 'pr-link' else 'XXX'}"]
    if field == "scenario-type":
        lines += ["  scenario-type:", f"    - {value}"]
    elif field not in ("config-keys", "description", "pr-link"):
        lines += [f"  {field}: {value}"]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("field", FIELDS)
def test_no_accepted_entry_is_read_differently_by_yaml_1_2(field):
    wrong, accepted = [], 0
    for value in SPELLINGS:
        head = _entry_with(field, value)
        old = yaml.safe_load(head)
        readings = [_RUAMEL.load(head.decode()), _core_load(head.decode())]
        result = lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a", *SPELLINGS])
        if result.ok:
            accepted += 1
            if not all(_same(old, new) for new in readings):
                wrong.append(value)
    assert wrong == []
    assert accepted >= 1 or field in ("scenario-type", "pr-link")  # the table is not refused wholesale


@pytest.mark.parametrize("line,value,fix", [
    ("  evals-only: yes", "yes", "write `  evals-only: true`"),
    ("  all-evals: on", "on", "write `  all-evals: true`"),
    ("  append-only: OFF", "OFF", "write `  append-only: false`"),
    ("  eval-min-prefill-ep: 1_0", "1_0", "write `  eval-min-prefill-ep: 10`"),
    ("  eval-min-prefill-ep: 010", "010", "write `  eval-min-prefill-ep: 8`"),
])
def test_a_yaml_1_1_only_value_is_refused_where_written_with_the_fix(line, value, fix):
    base = history(2)
    head = base + b"\n" + entry(extra=line + "\n")
    result = lint_change(base, head, file="log.yaml", mode=PR, master_keys=["cfg-a"])
    at = head.decode().split("\n").index(line) + 1
    assert [(f.line, f.hint.split(" (")[0]) for f in result.errors] == [(at, fix)]
    assert f"`{value}`" in result.errors[0].message and "YAML 1.2" in result.errors[0].message


def test_text_that_yaml_1_2_reads_as_a_number_must_be_quoted():
    head = entry(desc=()) .replace(b"  description:\n", b"  description:\n    - 1e3\n")
    result = lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert [(f.line, f.col, f.hint) for f in result.errors] == [(4, 7, 'quote it: `"1e3"` if you mean the text')]
    quoted = lint_change(None, head.replace(b"- 1e3", b'- "1e3"'), file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert quoted.ok


def test_a_tag_is_refused_in_a_new_entry():
    head = entry(extra="  evals-only: !!bool yes\n")
    result = lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert len(result.errors) == 1 and "!!bool" in result.errors[0].message


def test_history_written_in_yaml_1_1_is_not_judged():
    base = history(2).replace(b"  pr-link:", b"  evals-only: yes\n  pr-link:", 1)
    result = lint_change(base, base + b"\n" + entry(), file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert result.ok, result.errors


# -- control, bidi and invisible characters ---------------------------------------------------------
@pytest.mark.parametrize("escaped,code,at", [
    ("\\0", "U+0000", 1), ("\\e[31mred", "U+001B ESCAPE", 1), ("left\\u202eright", "U+202E RIGHT-TO-LEFT OVERRIDE", 5),
    ("\\ufeffx", "U+FEFF", 1), ("a\\x85b", "U+0085", 2), ("a\\x9bb", "U+009B", 2), ("ab\\u2066c", "U+2066", 3),
    ("one\\ttwo", "U+0009 TAB", 4), ("one\\ntwo", "U+000A LINE FEED", 4), ("x\\u200by", "U+200B", 2),
    ("x\\Ly", "U+2028", 2), ("x\\u061cy", "U+061C", 2), ("x\\x7fy", "U+007F", 2),
])
def test_control_and_bidi_characters_are_refused_with_the_code_point_and_position(escaped, code, at):
    head = entry(desc=("Fine.", escaped))
    result = lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert [f.line for f in result.errors] == [5], result.errors
    message = result.errors[0].message
    assert f"description item 2 contains {code}" in message and f"at character {at}" in message


def test_control_characters_in_other_text_fields_are_refused_too():
    head = entry(keys=("cfg-\\e*",)).replace(b"- cfg-\\e*", b'- "cfg-\\e*"')
    result = lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert any("config-keys item 1 contains U+001B" in f.message for f in result.errors), result.errors
    head = entry(link='"XXX\\u202e"').replace(b"pr-link: XXX", b"pr-link: XXX")
    result = lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a"])
    assert any("pr-link contains U+202E" in f.message for f in result.errors), result.errors


def test_unicode_text_that_is_visible_stays_allowed():
    head = entry(desc=("CONC≥64, prefill_ep 8→1 — naïve café 日本語 👩‍💻",))
    assert lint_change(None, head, file="log.yaml", mode=PR, master_keys=["cfg-a"]).ok


# -- pr-link sub-page forms ---------------------------------------------------------------------------
SUBPAGES = [f"{LINK}/2/changes", f"{LINK}/2/files", f"{LINK}/2/commits", f"{LINK}/2/commits/abc123",
            f"{LINK}/2#discussion_r1", f"{LINK}/2/", f"{LINK}/2?w=1", "http://github.com/acme/bench/pull/2",
            "https://www.github.com/acme/bench/pull/2", "https://github.com/Acme/Bench/pull/2/files",
            f"{LINK}/02"]


@pytest.mark.parametrize("link", SUBPAGES)
def test_a_sub_page_link_cannot_be_re_pointed_to_another_pr(link):
    base = history(3).replace(f"{LINK}/2\n".encode(), f"{link}\n".encode())
    repointed = base.replace(f"{link}\n".encode(), f"{LINK}/99\n".encode())
    result = lint_change(base, repointed, file="log.yaml", mode=MAIN, master_keys=None)
    assert [f.line for f in result.errors] == [11], result.errors
    assert "links pull request #2" in result.errors[0].message and f"{LINK}/2" in result.errors[0].hint
    canonical = base.replace(f"{link}\n".encode(), f"{LINK}/2\n".encode())
    fixed = lint_change(base, canonical, file="log.yaml", mode=MAIN, master_keys=None)
    assert fixed.ok and fixed.corrections == 1, fixed.errors


def test_no_corpus_link_that_names_a_pr_can_be_re_pointed(shared):
    """The 772 real links: each one naming a PR keeps it (the attack pass re-pointed `/pull/2305/changes`)."""
    log = (shared / "corpus" / "inferencex" / "perf-changelog.yaml").read_bytes()
    repo = "SemiAnalysisAI/InferenceX"
    lines = log.split(b"\n")
    links = [i for i, text in enumerate(lines) if text.startswith(b"  pr-link:")]
    canonical = re.compile(rb"  pr-link: https://github\.com/SemiAnalysisAI/InferenceX/pull/[1-9][0-9]*\s*$")
    # the canonical ones are covered by test_rules; every other form is tried here, plus a sample
    tried = [i for i in links if not canonical.fullmatch(lines[i])] + links[::97]
    assert any(b"/changes" in lines[i] for i in tried)
    repointed = []
    for i in tried:
        new = list(lines)
        new[i] = f"  pr-link: https://github.com/{repo}/pull/1".encode()
        result = lint_change(log, b"\n".join(new), file="perf-changelog.yaml", mode=Mode(repo), master_keys=None)
        if result.ok:
            repointed.append(lines[i].decode())
    # a placeholder names no PR: correcting it is what the correction path is for
    assert repointed == ["  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX"]
