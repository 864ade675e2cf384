"""Every gate rule, accepted and rejected, with its exact message and line (pure core, no git)."""

from __future__ import annotations

import pytest

from ci_tools.changelog.lint import Mode, lint_change

from .helpers import LINK, MASTER_KEYS, REPO, entry, history

H = history(3)  # entries at lines 1, 7, 13; 17 lines
HX = H.replace(b"pull/2\n", b"pull/XXX\n")  # entry 2 still has a placeholder
HO = H.replace(LINK.encode() + b"/2\n", b"https://github.com/other/repo/pull/2\n")  # entry 2 links another repo
E = entry()     # appended after H + b"\n": lines 19 (config-keys) .. 23 (pr-link)
SECOND = entry(keys=("cfg-b",), desc=("Add cfg-b.",))
PR = Mode(REPO, pr=42)
MAIN = Mode(REPO)
LOCAL = Mode(REPO, local=True)


def run(base, head, mode=PR):
    return lint_change(base, head, file="log.yaml", mode=mode, master_keys=MASTER_KEYS)


ACCEPT = [
    ("placeholder XXX in a PR", H, H + b"\n" + E, PR, 1, 0),
    ("placeholder .../pull/XXX in a PR", H, H + b"\n" + entry(link=f"{LINK}/XXX"), PR, 1, 0),
    ("the PR's own link", H, H + b"\n" + entry(link=f"{LINK}/42"), PR, 1, 0),
    ("canonical link on main", H, H + b"\n" + entry(link=f"{LINK}/42"), MAIN, 1, 0),
    ("two appended entries", H, H + b"\n" + E + b"\n" + SECOND, PR, 2, 0),
    ("no change at all", H, H, MAIN, 0, 0),
    ("a new file", None, E, PR, 1, 0),
    ("base ending in an empty line: no extra separator", H + b"\n", H + b"\n" + E, PR, 1, 0),
    ("pr-link-only correction of a placeholder", HX, HX.replace(b"pull/XXX\n", b"pull/22\n"), MAIN, 0, 1),
    ("pr-link-only correction of another repository's link", HO, H.replace(b"pull/2\n", b"pull/22\n"), MAIN, 0, 1),
    ("local mode: placeholder", H, H + b"\n" + E, LOCAL, 1, 0),
    ("local mode: any canonical link", H, H + b"\n" + entry(link=f"{LINK}/7"), LOCAL, 1, 0),
    ("wildcard * and ? patterns", H, H + b"\n" + entry(keys=("dsr1-fp?-*-sglang", "cfg-*")), PR, 1, 0),
    ("every optional field", H, H + b"\n" + entry(extra="  scenario-type:\n    - agentic-coding\n    - fixed-seq-len\n"
                                                        "  evals-only: true\n  all-evals: false\n  eval-min-prefill-ep: 4\n"), PR, 1, 0),
    ("append-only alone", H, H + b"\n" + entry(extra="  append-only: true\n  evals-only: false\n  eval-min-prefill-ep: null\n"), PR, 1, 0),
    ("historical whitespace-only separators stay as they are", H.replace(b"\n\n", b"\n  \n", 1),
     H.replace(b"\n\n", b"\n  \n", 1) + b"\n" + E, PR, 1, 0),
]


@pytest.mark.parametrize("name,base,head,mode,added,corrections", ACCEPT, ids=[c[0] for c in ACCEPT])
def test_accepted(name, base, head, mode, added, corrections):
    result = run(base, head, mode)
    assert [f.message for f in result.errors] == []
    assert result.ok
    assert (len(result.added), result.corrections) == (added, corrections)


NUL_ETC = [
    ("no final newline", H + b"\n" + E[:-1], 23, "the file does not end with a newline"),
    ("CR", H + b"\n" + E.replace(b"\n", b"\r\n", 1), 19, "a carriage return (CR) is not allowed; the file must use LF line endings"),
    ("TAB", H + b"\n" + E.replace(b"Add", b"\tAdd"), 22, "a TAB character is not allowed"),
    ("NUL", H + b"\n" + E.replace(b"Add", b"\0Add"), 22, "a NUL byte is not allowed"),
    ("BOM", b"\xef\xbb\xbf" + H, 1, "the file starts with a UTF-8 byte-order mark (BOM)"),
    ("not UTF-8", H + b"\n" + E.replace(b"Add", b"\xff"), 22, "the file is not valid UTF-8"),
    ("duplicate key", H + b"\n" + E + b"  description:\n    - again\n", 24,
     "not valid YAML: duplicate key 'description' (first written at line 21)"),
    ("malformed YAML", H + b"\n" + E.replace(b"    - cfg-a", b"    - [cfg-a"), 21,
     "not valid YAML: while parsing a flow sequence: did not find expected ',' or ']'"),
    ("history edited", H.replace(b"Change 2.", b"Change two."), 10,
     "entry 2 (line 7) was changed at line 10; historical entries are immutable except for a pr-link-only correction"),
    ("history reformatted", H.replace(b"  pr-link: " + LINK.encode() + b"/2", b"  pr-link:  " + LINK.encode() + b"/2"), 11,
     "historical bytes changed at line 11 (in entry 2 (line 7)) without a change of content;"
     " whitespace and formatting of history are immutable"),
    ("history edited while appending", H.replace(b'"Change 1."', b"'Change 1.'") + b"\n" + E, 4,
     "appended entries changed historical bytes at line 4 (in entry 1 (line 1)); history is immutable byte for byte"),
    ("entry deleted", history(2), 12,
     "1 historical entry was deleted (first difference at line 12, in entry 2 (line 7)); the changelog is append-only"),
    ("entry inserted mid-file", H.replace(b"- config-keys:\n    - cfg-a\n  description:\n    - \"Change 2.",
                                          E + b"\n- config-keys:\n    - cfg-a\n  description:\n    - \"Change 2."), 7,
     "a new entry was inserted at line 7, before historical entry 2; new entries go at the end of the file"),
    ("correction mixed with a new entry", H.replace(b"pull/2\n", b"pull/22\n") + b"\n" + E, 7,
     "do not mix historical pr-link corrections with new changelog entries"),
    ("re-pointing a canonical link", H.replace(b"pull/2\n", b"pull/22\n"), 11,
     f"entry 2 already links {LINK}/2; only a placeholder (XXX) or a non-canonical link may be corrected"),
    ("correction with another byte changed", H.replace(b"pull/2\n", b"pull/22\n").replace(b'"Change 1."', b"'Change 1.'"), 4,
     "historical bytes changed outside a pr-link line at line 4"),
    ("no empty line before the new entry", H + E, 18,
     "a new entry must be appended after exactly one empty line following the last entry"),
    ("two empty lines before the new entry", H + b"\n\n" + E, 20,
     "a new entry must be appended after exactly one empty line following the last entry"),
    ("two empty lines between new entries", H + b"\n" + E + b"\n\n" + SECOND, 26,
     "appended entries must be separated by exactly one empty line"),
    ("no empty line between new entries", H + b"\n" + E + SECOND, 24,
     "appended entries must be separated by exactly one empty line"),
    ("empty line at the end", H + b"\n" + E + b"\n", 24,
     "the file must end with exactly one newline; it ends with an empty line"),
    ("text added to the last historical entry", H + b'    - "more"\n', 18,
     "text appended to historical entry 3 (line 13): historical entries are immutable"),
    ("new entry not starting with config-keys", H + b"\n- description:\n    - x\n  config-keys:\n    - cfg-a\n  pr-link: XXX\n", 19,
     "text appended: the new entry at line 19 does not start with `- config-keys:`"),
    ("root not a list", b"foo: bar\n", 1, "the changelog must be a list of entries, each starting with `- config-keys:`"),
    ("unknown field", H + b"\n" + entry(extra="  evals_only: true\n"), 24, "entry 4: unknown field 'evals_only'; did you mean 'evals-only'?"),
    ("missing description", H + b"\n- config-keys:\n    - cfg-a\n  pr-link: XXX\n", 19,
     "entry 4: the required field 'description' is missing"),
    ("missing pr-link", H + b"\n- config-keys:\n    - cfg-a\n  description:\n    - x\n", 19,
     "entry 4: the required field 'pr-link' is missing"),
    ("description a bare string", H + b"\n- config-keys:\n    - cfg-a\n  description: x\n  pr-link: XXX\n", 21,
     "entry 4: description must be a list of strings, not a single string"),
    ("description empty", H + b"\n- config-keys:\n    - cfg-a\n  description: []\n  pr-link: XXX\n", 21,
     "entry 4: description must be a non-empty list of strings"),
    ("description item empty", H + b"\n" + entry(desc=("",)), 21, "entry 4: every description item must be non-empty text"),
    ("config-keys empty", H + b"\n- config-keys: []\n  description:\n    - x\n  pr-link: XXX\n", 19,
     "entry 4: config-keys must be a non-empty list of config keys"),
    ("config-key not a string", H + b"\n" + entry(keys=("123",)), 19, "entry 4: every config key must be a non-empty string"),
    ("unknown scenario-type", H + b"\n" + entry(extra="  scenario-type:\n    - agentic\n"), 24,
     "entry 4: unknown scenario-type 'agentic'"),
    ("scenario-type twice", H + b"\n" + entry(extra="  scenario-type:\n    - agentic-coding\n    - agentic-coding\n"), 24,
     "entry 4: scenario-type lists a scenario twice"),
    ("scenario-type empty", H + b"\n" + entry(extra="  scenario-type: []\n"), 24,
     "entry 4: scenario-type must be a non-empty list (or left out for all scenarios)"),
    ("flag not a boolean", H + b"\n" + entry(extra="  evals-only: yes please\n"), 24,
     "entry 4: evals-only must be true or false, not 'yes please'"),
    ("eval-min-prefill-ep below 1", H + b"\n" + entry(extra="  eval-min-prefill-ep: 0\n"), 24,
     "entry 4: eval-min-prefill-ep must be a whole number >= 1, not 0"),
    ("eval-min-prefill-ep a boolean", H + b"\n" + entry(extra="  eval-min-prefill-ep: true\n"), 24,
     "entry 4: eval-min-prefill-ep must be a whole number >= 1, not True"),
    ("append-only with evals-only", H + b"\n" + entry(extra="  append-only: true\n  evals-only: true\n"), 24,
     "entry 4: append-only cannot be combined with eval selection fields (evals-only)"),
    ("append-only with all-evals and eval-min-prefill-ep",
     H + b"\n" + entry(extra="  append-only: true\n  all-evals: true\n  eval-min-prefill-ep: 2\n"), 24,
     "entry 4: append-only cannot be combined with eval selection fields (all-evals, eval-min-prefill-ep)"),
    ("config key missing from the masters", H + b"\n" + entry(keys=("cfg-a", "nope-key")), 21,
     "entry 4: config key 'nope-key' is not in the master configs"),
    ("pattern matching nothing", H + b"\n" + entry(keys=("nope*",)), 20,
     "entry 4: the pattern 'nope*' matches no config key in the master configs"),
    ("[ is literal, not a character class", H + b"\n" + entry(keys=("'cfg-[ab]'",)), 20,
     "entry 4: config key 'cfg-[ab]' is not in the master configs"),
    ("another PR's link in a PR", H + b"\n" + entry(link=f"{LINK}/41"), 23,
     f"entry 4: a new entry in PR #42 must link '{LINK}/42' or use the placeholder XXX; found '{LINK}/41'"),
    ("a link to another repository", H + b"\n" + entry(link="https://github.com/other/repo/pull/42"), 23,
     f"entry 4: a new entry in PR #42 must link '{LINK}/42' or use the placeholder XXX;"
     " found 'https://github.com/other/repo/pull/42'"),
    ("empty pr-link", H + b"\n" + entry(link="''"), 23, "entry 4: pr-link must be a link to the pull request"),
]


@pytest.mark.parametrize("name,head,line,message", NUL_ETC, ids=[c[0] for c in NUL_ETC])
def test_rejected_in_pr_mode(name, head, line, message):
    result = run(H if name != "root not a list" else None, head)
    assert not result.ok
    first = result.errors[0]
    assert (first.line, first.message) == (line, message)
    assert first.file == "log.yaml"
    assert all(f.hint for f in result.errors), "every finding says how to fix it"


MODES = [
    ("placeholder on main", MAIN, entry(), "entry 4: a new main-branch entry must have a canonical pr-link; found 'XXX'"),
    (".../pull/XXX on main", MAIN, entry(link=f"{LINK}/XXX"),
     f"entry 4: a new main-branch entry must have a canonical pr-link; found '{LINK}/XXX'"),
    ("TBD on main", MAIN, entry(link="TBD"), "entry 4: a new main-branch entry must have a canonical pr-link; found 'TBD'"),
    ("leading zero on main", MAIN, entry(link=f"{LINK}/042"),
     f"entry 4: a new main-branch entry must have a canonical pr-link; found '{LINK}/042'"),
    ("/changes suffix on main", MAIN, entry(link=f"{LINK}/42/changes"),
     f"entry 4: a new main-branch entry must have a canonical pr-link; found '{LINK}/42/changes'"),
    ("TBD locally", LOCAL, entry(link="TBD"), "entry 4: pr-link 'TBD' is neither a pull-request link nor the placeholder"),
    ("TBD in a PR", PR, entry(link="TBD"),
     f"entry 4: a new entry in PR #42 must link '{LINK}/42' or use the placeholder XXX; found 'TBD'"),
]


@pytest.mark.parametrize("name,mode,new,message", MODES, ids=[m[0] for m in MODES])
def test_link_rule_by_mode(name, mode, new, message):
    result = run(H, H + b"\n" + new, mode)
    assert [(f.line, f.message) for f in result.errors] == [(23, message)]


def test_all_problems_are_reported_sorted_by_line():
    head = H + b"  \n" + entry(keys=("nope",), link="TBD", extra="  colour: red\n")
    result = run(H, head)
    assert [(f.line, f.message) for f in result.errors] == [
        (18, "trailing whitespace in a new line"),
        (19, "a new entry must be appended after exactly one empty line following the last entry"),
        (20, "entry 4: config key 'nope' is not in the master configs"),
        (23, f"entry 4: a new entry in PR #42 must link '{LINK}/42' or use the placeholder XXX; found 'TBD'"),
        (24, "entry 4: unknown field 'colour'"),
    ]


def test_keys_are_resolved_for_the_planner():
    result = run(H, H + b"\n" + entry(keys=("dsr1-*", "dsr1-fp8-h200-sglang", "cfg-b")))
    assert result.resolved == {3: ["dsr1-fp8-h200-sglang", "dsr1-fp4-b200-sglang", "cfg-b"]}


def test_fast_path_still_checks_the_whole_file():
    # History is compared as bytes, yet the whole file must still be a valid changelog...
    broken = b"- config-keys: [\n"
    assert run(broken, broken + b"\n" + E).errors[0].message.startswith("not valid YAML")
    # ...but a base whose last entry keeps trailing lines (|+) would absorb the separator, so the
    # full comparison runs and sees the historical value change.
    keep = H + b"  extra: |+\n    text\n"
    result = run(keep, keep + b"\n" + E)
    assert result.errors and "entry 3 (line 13) was changed" in result.errors[0].message


def test_a_correction_must_itself_be_canonical():
    result = run(HX, HX.replace(b"pull/XXX\n", b"pull/22/changes\n"))
    assert [(f.line, f.message) for f in result.errors] == [
        (11, f"entry 2: a pr-link correction must be a canonical link; found '{LINK}/22/changes'")]


def test_a_misspelt_field_is_one_error_with_the_right_name():
    typo = entry().replace(b"  description:", b"  descripton:")
    result = run(H, H + b"\n" + typo)
    assert [(f.message, f.hint) for f in result.errors] == [
        ("entry 4: unknown field 'descripton'; did you mean 'description'?", "rename it to `description:`")]


def test_a_misspelt_config_key_gets_a_suggestion():
    result = run(H, H + b"\n" + entry(keys=("dsr1-fp8-h200-sglan",)))
    [f] = result.errors
    assert f.message == "entry 4: config key 'dsr1-fp8-h200-sglan' is not in the master configs; did you mean 'dsr1-fp8-h200-sglang'?"
    assert f.hint == "write `    - dsr1-fp8-h200-sglang`"
    far = run(H, H + b"\n" + entry(keys=("zzz",))).errors[0]
    assert "did you mean" not in far.message and "check the spelling" in far.hint


YAML_MISTAKES = [
    ("field indented by 3", b"  pr-link: XXX\n", b"   pr-link: XXX\n", 23,
     "`pr-link:` is indented by 3 spaces; an entry's fields are indented by exactly two, under `- config-keys:`"),
    ("field indented by 1", b"  description:\n", b" description:\n", 21,
     "`description:` is indented by 1 space; an entry's fields are indented by exactly two, under `- config-keys:`"),
    ("list on the field line", b"  description:\n    - \"Add cfg-a.\"\n", b"  description: - x\n", 21,
     "a list cannot start on the line of its field"),
    ("unclosed quote", b"\"Add cfg-a.\"", b"\"Add cfg-a.", 22, "a quoted string is not closed"),
]


@pytest.mark.parametrize("name,old,new,line,message", YAML_MISTAKES, ids=[c[0] for c in YAML_MISTAKES])
def test_yaml_mistakes_are_said_in_the_files_terms(name, old, new, line, message):
    result = run(H, H + b"\n" + entry().replace(old, new))
    first = result.errors[0]
    assert (first.line, first.message) == (line, message), first.as_text()
    assert "(YAML parser: " in first.hint


def test_line_of_counts_lines_whatever_the_order_of_the_calls():
    """line_of remembers its last answer (findings come in file order): any order of calls, on any
    content, must still give the line that counting from the start gives."""
    import random

    from ci_tools.changelog.parse import line_of

    rng = random.Random(7)
    texts = [b"a\nb\n\nccc\n" * 50, b"no newline", b"\n" * 30, b""]
    for _ in range(2000):
        content = rng.choice(texts)
        offset = rng.randrange(len(content) + 1)
        assert line_of(content, offset) == content.count(b"\n", 0, offset) + 1
