"""Key patterns, the master-key scan, and the entry schema against its JSON Schema twin."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
import yaml

from ci_tools.changelog.keys import master_keys_from_bytes, resolve_keys
from ci_tools.changelog.parse import parse_entries
from ci_tools.changelog.schema import canonical_link, entry_findings
from ci_tools.errors import InputError

KEYS = ["config-b", "config-a", "other", "qwen3.5-a", "qwen3x5-b", "dsr1-fp4-b200-sglang"]


@pytest.mark.parametrize("patterns,resolved,unmatched", [
    (["config-*", "config-a"], ["config-b", "config-a"], []),       # spec §5 case 97, first-seen order
    (["qwen3.5*"], ["qwen3.5-a"], []),                              # the dot is literal
    (["qwen3?5*"], ["qwen3.5-a", "qwen3x5-b"], []),                 # ? is one character
    (["dsr1-fp4-b200-sglan?"], ["dsr1-fp4-b200-sglang"], []),
    (["config-[ab]"], [], ["config-[ab]"]),                         # [ is literal
    (["*"], KEYS, []),
    (["nope", "config-a", "nope*"], ["config-a"], ["nope", "nope*"]),
    (["other", "other", "o*"], ["other"], []),
    ([], [], []),
])
def test_resolve_keys(patterns, resolved, unmatched):
    assert resolve_keys(patterns, KEYS) == (resolved, unmatched)


def test_master_keys_fallback_parses_properly():
    assert master_keys_from_bytes(b"'a':\n  x: 1\nb: {y: 2}\n", "m.yaml") == ["a", "b"]
    with pytest.raises(InputError) as exc:
        master_keys_from_bytes(b"a:\n  x: 1\na:\n  y: 2\n", "m.yaml")
    assert "duplicate key 'a'" in exc.value.findings[0].message
    with pytest.raises(InputError):
        master_keys_from_bytes(b"- a\n", "m.yaml")


@pytest.mark.parametrize("link,ok", [
    ("https://github.com/acme/bench/pull/1", True), ("https://github.com/acme/bench/pull/0", False),
    ("https://github.com/acme/bench/pull/01", False), ("https://github.com/acme/bench/pull/1/changes", False),
    ("http://github.com/acme/bench/pull/1", False), ("https://github.com/acme/bench/pull/XXX", False),
    ("https://github.com/acme/bench/issues/1", False), (1, False),
])
def test_canonical_link(link, ok):
    assert canonical_link(link, "acme/bench") is ok


ENTRIES = [
    "config-keys: [a]\ndescription: [x]\npr-link: XXX",
    "config-keys: [a, 'b*']\ndescription: [x, y]\npr-link: XXX\nscenario-type: [agentic-coding]\nevals-only: true",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nappend-only: true\nevals-only: false\neval-min-prefill-ep: null",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nscenario-type: null\nall-evals: true\neval-min-prefill-ep: 3",
    "config-keys: []\ndescription: [x]\npr-link: XXX",
    "config-keys: [a]\ndescription: x\npr-link: XXX",
    "config-keys: [a]\ndescription: []\npr-link: XXX",
    "config-keys: [a]\ndescription: [x]",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nextra: 1",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nscenario-type: [agentic]",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nscenario-type: []",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nscenario-type: [fixed-seq-len, fixed-seq-len]",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nevals-only: 'yes'",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\neval-min-prefill-ep: 0",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\neval-min-prefill-ep: 1.5",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nappend-only: true\nall-evals: true",
    "config-keys: [a]\ndescription: [x]\npr-link: XXX\nappend-only: true\neval-min-prefill-ep: 2",
    "config-keys: [1]\ndescription: [x]\npr-link: XXX",
    "config-keys: [a]\ndescription: ['']\npr-link: XXX",
    "config-keys: [a]\ndescription: [x]\npr-link: ''",
    "config-keys: [a]\ndescription: [x]\npr-link: 12",
]


@pytest.mark.parametrize("body", ENTRIES)
def test_python_rules_agree_with_the_json_schema(body):
    schema = json.loads(resources.files("ci_tools").joinpath("schemas/changelog.schema.json").read_text())
    data = yaml.safe_load(body)
    by_schema = jsonschema.Draft202012Validator(schema).is_valid([data])
    text = "- " + body.replace("\n", "\n  ") + "\n"
    entry = parse_entries(text.encode(), "f")[0]
    assert (not entry_findings(entry, "f")) is by_schema, body


def test_the_corpus_entries_mostly_satisfy_the_schema(shared):
    # History is a log, not re-validated; still the schema fits what InferenceX really wrote.
    schema = json.loads(resources.files("ci_tools").joinpath("schemas/changelog.schema.json").read_text())
    data = yaml.load((shared / "corpus" / "inferencex" / "perf-changelog.yaml").read_bytes(), Loader=yaml.CSafeLoader)
    bad = [i for i, e in enumerate(data) if not jsonschema.Draft202012Validator(schema).is_valid([e])]
    assert bad == []
