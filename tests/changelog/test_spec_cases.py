"""The changelog acceptance cases of the spec (§5, 111-119; 120-125 are in test_merge.py).

Where InferenceX's CLI gate accepted what its own byte rules forbid (case 119, weakness W17), this
gate follows the byte rules: those cases are rejections here, on purpose.
"""

from __future__ import annotations

import pytest
import yaml

from ci_tools.changelog.lint import Mode, lint_change
from ci_tools.changelog.parse import parse_entries
from ci_tools.errors import InputError

from .helpers import LINK, MASTER_KEYS, REPO, entry, history

ENTRY = {"config-keys": ["cfg-a"], "description": ["x"], "pr-link": f"{LINK}/1"}


def messages(base, head, pr=42, keys=MASTER_KEYS):
    result = lint_change(base, head, file="f", mode=Mode(REPO, pr=pr), master_keys=keys)
    return result, [f.message for f in result.errors]


def test_111_safe_dump_round_trip_and_final_newline():
    raw = yaml.safe_dump([ENTRY]).encode()
    assert [e.data for e in parse_entries(raw, "f")] == [ENTRY]
    with pytest.raises(InputError, match="does not end with a newline"):
        parse_entries(raw[:-1], "f")


def test_112_bad_yaml_and_duplicate_keys():
    base = history(1)
    _, msgs = messages(base, base + b"\n" + entry().replace(b"  pr-link", b"   pr-link"))
    assert msgs[0].startswith("`pr-link:` is indented by 3 spaces")  # the parser's words are in the hint
    _, msgs = messages(base, base + b"\n" + entry() + b"  description:\n    - y\n")
    assert "duplicate key 'description'" in msgs[0]


def test_113_additions_by_mode():
    base = history(1)
    result, msgs = messages(base, base + b"\n" + entry())
    assert msgs == [] and len(result.added) == 1
    assert "a new entry in PR #42 must link" in messages(base, base + b"\n" + entry(link=f"{LINK}/41"))[1][0]
    assert "a new main-branch entry must have a canonical pr-link" in messages(base, base + b"\n" + entry(), pr=None)[1][0]


def test_114_corrections_deletions_and_mixing():
    base = entry(link="XXX")
    result, msgs = messages(base, entry(link=f"{LINK}/42"), pr=99)
    assert msgs == [] and (result.added, result.corrections) == ([], 1)
    assert "entry 1 (line 1) was changed" in messages(base, entry(desc=("y",), link="XXX"))[1][0]
    two = base + b"\n" + entry(desc=("z",), link=f"{LINK}/2")
    assert "historical entry was deleted" in messages(two, base)[1][0]
    mixed = entry(link=f"{LINK}/42") + b"\n" + entry(desc=("new",))
    assert messages(base, mixed)[1] == ["do not mix historical pr-link corrections with new changelog entries"]


def test_115_raw_layout():
    base = history(2)
    new = entry(desc=("n",))
    assert messages(base, base + b"\n" + new)[1] == []
    assert "historical" in messages(base, base.replace(b"Change 1.", b"Change 1!") + b"\n" + new)[1][0]
    assert messages(base, base + b"\n" + new + b"\n\n" + new)[1] == [
        "appended entries must be separated by exactly one empty line"]
    assert messages(base, base + b"\n" + new + b"\n")[1] == [
        "the file must end with exactly one newline; it ends with an empty line"]


def test_116_correction_with_a_whitespace_change():
    base = entry(link="XXX")
    head = entry(link=f"{LINK}/42").replace(b'    - "Add cfg-a."', b'    -  "Add cfg-a."')
    assert messages(base, head)[1] == ["historical bytes changed outside a pr-link line at line 4"]


def test_117_head_without_final_newline():
    assert messages(history(1), history(1) + b"\n- config-keys: []")[1] == ["the file does not end with a newline"]


@pytest.mark.parametrize("change,expected", [
    # accepted by InferenceX's CLI gate, rejected here (W17)
    ("mid-file insertion", "a new entry was inserted at line 7, before historical entry 2"),
    ("append without blank line and pr-link TBD", "a new entry must be appended after exactly one empty line"),
    ("historical blank-line whitespace removed", "historical bytes changed at line 12"),
    # rejected by InferenceX's CLI gate, accepted here (a pr-link-only correction)
    ("pr-link correction", None),
    ("missing key", "config key 'nope-key' is not in the master configs"),
    ("pattern matching nothing", "the pattern 'nope*' matches no config key in the master configs"),
    ("extra field", "unknown field 'colour'"),
    ("append-only with evals-only", "append-only cannot be combined with eval selection fields"),
    ("description a string", "description must be a list of strings"),
])
def test_119_cli_gate_cases(change, expected):
    base = history(2) + b"  \n" + entry(desc=("3",), link="XXX")  # a historical whitespace-only separator
    new = entry(keys=("cfg-b",), desc=("new",))
    heads = {
        "mid-file insertion": base.replace(b"- config-keys:", new + b"\n- config-keys:", 2).replace(
            new + b"\n- config-keys:", b"- config-keys:", 1),
        "append without blank line and pr-link TBD": base + entry(link="TBD"),
        "historical blank-line whitespace removed": base.replace(b"\n  \n", b"\n\n"),
        "pr-link correction": base.replace(b"pr-link: XXX", f"pr-link: {LINK}/3".encode()),
        "missing key": base + b"\n" + entry(keys=("nope-key",)),
        "pattern matching nothing": base + b"\n" + entry(keys=("nope*",)),
        "extra field": base + b"\n" + entry(extra="  colour: red\n"),
        "append-only with evals-only": base + b"\n" + entry(extra="  append-only: true\n  evals-only: true\n"),
        "description a string": base + b"\n" + entry().replace(b'  description:\n    - "Add cfg-a."', b"  description: x"),
    }
    result, msgs = messages(base, heads[change])
    if expected is None:
        assert result.ok and result.corrections == 1
    else:
        assert any(expected in m for m in msgs), msgs
