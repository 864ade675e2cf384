"""Fuzz tier: the changelog gate on the real InferenceX changelog and its real masters.

The nightly profile mutates all 772 entries; the CI profile the last HISTORY_CI of them (a mutation
re-parses history from the changed entry on, and under tracemalloc that is the cost of a case).

Properties: the gate never raises, hangs or blows up (harness bounds); every rendering works; a
change of history bytes is accepted only as a pr-link correction of a placeholder or non-canonical
link; the real CLI exits 0, 1 or 2 only.
"""

from __future__ import annotations

import functools
import subprocess

import pytest
from hypothesis import given, strategies as st

from ci_tools.changelog.keys import master_keys_from_bytes
from ci_tools.changelog.lint import Mode, lint_change
from ci_tools.changelog.parse import entry_starts
from ci_tools.cli.changelog import render
from tests.conftest import shared_dir

from .harness import NIGHTLY, check_case, cli_case, fuzz_settings
from .hostile import block_fragment, byte_edit, flow_value, mutate_bytes

REPO = "SemiAnalysisAI/InferenceX"
PR = Mode(REPO, pr=1234)
FILE = "inferencex-e2e/perf-changelog.yaml"
HISTORY_CI = 120


@functools.cache
def corpus() -> tuple[bytes, list[str]]:
    root = shared_dir() / "corpus/inferencex"
    if not (root / "perf-changelog.yaml").is_file():
        pytest.fail(f"the shared corpus is missing: expected {root} (set CI_TOOLS_SHARED)")
    keys: list[str] = []
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        keys += master_keys_from_bytes((root / "configs" / name).read_bytes(), name)
    return (root / "perf-changelog.yaml").read_bytes(), keys


@functools.cache
def history() -> bytes:
    full, _ = corpus()
    if NIGHTLY:
        return full
    starts = entry_starts(full)
    return full[starts[-HISTORY_CI]:]


@st.composite
def hostile_entry(draw) -> bytes:
    _, keys = corpus()
    key_lines = draw(st.one_of(
        st.just(f"    - {keys[0]}\n"),
        st.builds(lambda p: f'    - "{p}"\n', st.text(alphabet=st.sampled_from("*?ab-Z.[]"), max_size=60)),
        block_fragment()))
    desc_lines = draw(st.one_of(st.just('    - "A change."\n'), block_fragment()))
    extra = draw(st.sampled_from(["", "  scenario-type:\n    - agentic-coding\n"]))
    if draw(st.booleans()):
        extra += f"  {draw(st.sampled_from(['scenario-type', 'evals-only', 'x', 'pr-link']))}: {draw(flow_value())}\n"
    text = "- config-keys:\n" + key_lines + "  description:\n" + desc_lines + "  pr-link: XXX\n" + extra
    return text.encode("utf-8", "surrogatepass")


def _lint_and_render(base: bytes, head: bytes):
    result = lint_change(base, head, file=FILE, mode=PR, master_keys=corpus()[1])
    for fmt in ("text", "json", "github"):
        render(result, FILE, fmt)
    return result


@fuzz_settings(40)
@given(hostile_entry(), st.lists(byte_edit, max_size=2))
def test_fuzz_appended_entries(entry, edits):
    base, _ = corpus()
    head = base + b"\n" + mutate_bytes(entry, edits)
    check_case("changelog-append", _lint_and_render, base, head)


def _changed_lines(base: bytes, head: bytes) -> list[tuple[bytes, bytes]] | None:
    old, new = base.split(b"\n"), head.split(b"\n")
    if len(old) != len(new):
        return None
    return [(a, b) for a, b in zip(old, new) if a != b]


@fuzz_settings(40)
@given(st.lists(byte_edit, min_size=1, max_size=3), st.booleans())
def test_fuzz_history_is_immutable(edits, append):
    base, keys = history(), corpus()[1]
    head = mutate_bytes(base, edits)
    if append:
        head += b"\n- config-keys:\n    - " + keys[0].encode() + b'\n  description:\n    - "x"\n  pr-link: XXX\n'
    result = check_case("changelog-history", _lint_and_render, base, head).value
    if head == base or head.startswith(base) or not result.ok:
        return
    changed = _changed_lines(base, head)
    assert changed, "a history change was accepted that is not a line-for-line pr-link correction"
    prefix = f"  pr-link: https://github.com/{REPO}/pull/".encode()
    for old, new in changed:
        assert old.startswith(b"  pr-link:") and new.startswith(prefix), (old, new)
        assert not old.startswith(prefix) or not old[len(prefix):].isdigit(), \
            f"an already-canonical link was re-pointed: {old!r} -> {new!r}"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A real git repository holding the corpus changelog and masters (the CLI reads git objects)."""
    base, _ = corpus()
    root = tmp_path_factory.mktemp("fuzzrepo")
    corpus_root = shared_dir() / "corpus/inferencex"
    (root / "inferencex-e2e/configs").mkdir(parents=True)
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        (root / "inferencex-e2e/configs" / name).write_bytes((corpus_root / "configs" / name).read_bytes())
    (root / FILE).write_bytes(base)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    git("-c", "user.email=f@example.invalid", "-c", "user.name=f", "add", "-A")
    git("-c", "user.email=f@example.invalid", "-c", "user.name=f", "-c", "commit.gpgsign=false",
        "commit", "-qm", "base")
    git("tag", "base")
    return root, git


@fuzz_settings(15)
@given(hostile_entry(), st.sampled_from(["text", "json", "github"]))
def test_fuzz_changelog_lint_cli(repo, entry, fmt):
    root, git = repo
    base, _ = corpus()
    (root / FILE).write_bytes(base + b"\n" + entry)
    blob = git("hash-object", "-w", FILE).strip()
    git("update-index", "--cacheinfo", f"100644,{blob},{FILE}")
    commit = git("-c", "user.email=f@example.invalid", "-c", "user.name=f",
                 "commit-tree", git("write-tree").strip(), "-p", "base", "-m", "case").strip()
    cli_case("changelog-lint-cli", ["changelog", "lint", "--base", "base", "--head", commit, "--pr", "1234",
                                    "--repo", REPO, "--format", fmt], cwd=root)


# -- issue 25 finding 7: readings, hidden characters, sub-page links --------------------------------
_SCALAR_CHARS = "0123456789_.:eE+-oxbOXyesnoYNfalsetruTRUEFALSEinfNa~"


def _reading_1_2(text: str):
    from ruamel.yaml import YAML

    y = YAML(typ="safe", pure=True)
    y.version = (1, 2)
    return y.load(text)


@fuzz_settings(60)
@given(st.sampled_from(["evals-only", "all-evals", "append-only", "eval-min-prefill-ep", "description", "config-keys"]),
       st.one_of(st.sampled_from(["yes", "On", "OFF", "1_0", "010", "1e3", "0o17", "1:30", "0b1", "2024-01-01", "0x_a"]),
                 st.text(alphabet=st.sampled_from(_SCALAR_CHARS), min_size=1, max_size=12)))
def test_fuzz_accepted_values_read_alike_in_yaml_1_1_and_1_2(field, value):
    """Family `yaml-1.1-only`: a new entry the gate accepts means the same to PyYAML and to YAML 1.2."""
    import math

    import yaml

    base, keys = corpus()
    key = value if field == "config-keys" else keys[0]
    desc = value if field == "description" else '"x"'
    entry = f"- config-keys:\n    - {key}\n  description:\n    - {desc}\n  pr-link: XXX\n"
    if field not in ("config-keys", "description"):
        entry += f"  {field}: {value}\n"
    head = base + b"\n" + entry.encode()
    result = lint_change(base, head, file=FILE, mode=PR, master_keys=keys + [value])
    for fmt in ("text", "json", "github"):
        render(result, FILE, fmt)
    if not result.ok:
        return
    try:
        old = yaml.safe_load(entry)
    except yaml.YAMLError:
        raise AssertionError(f"accepted what PyYAML cannot read alone: {entry!r}")
    new = _reading_1_2(entry)

    def same(a, b):
        if type(a) is not type(b):
            return False
        if isinstance(a, float) and math.isnan(a):
            return math.isnan(b)
        if isinstance(a, (list, dict)):
            pairs = zip(a.items(), b.items()) if isinstance(a, dict) else zip(a, b)
            return len(a) == len(b) and all(same(x, y) for x, y in pairs)
        return a == b
    assert same(old, new), (entry, old, new)


_ESCAPES = ["\\0", "\\a", "\\b", "\\e", "\\e[31m", "\\t", "\\n", "\\r", "\\v", "\\f", "\\x85", "\\x9b", "\\x7f",
            "\\u202e", "\\u202a", "\\u2066", "\\u2069", "\\u200e", "\\u061c", "\\ufeff", "\\u200b", "\\L", "\\P",
            "\\N", "\\_", "\\x01", "\\uffff", "\\u00e9", "\\u2192", "\\\\", '\\"', "\\ "]


@fuzz_settings(60)
@given(st.sampled_from(["description", "config-keys", "pr-link"]), st.lists(st.sampled_from(_ESCAPES), min_size=1, max_size=3),
       st.text(alphabet="ab -", max_size=8))
def test_fuzz_no_hidden_character_reaches_an_accepted_entry(field, escapes, filler):
    """Family `hidden-characters`: control, bidi and invisible characters written through escapes."""
    import unicodedata

    base, keys = corpus()
    text = filler.join(escapes) + filler
    quoted = f'"{text}"'
    entry = (f"- config-keys:\n    - {quoted if field == 'config-keys' else keys[0]}\n  description:\n"
             f"    - {quoted if field == 'description' else chr(34) + 'x' + chr(34)}\n"
             f"  pr-link: {quoted if field == 'pr-link' else 'XXX'}\n")
    head = base + b"\n" + entry.encode()
    result = check_case("changelog-hidden", _lint_and_render, base, head).value
    if not result.ok:
        return
    for item in result.added:
        for value in [*item.data.values(), *(v for vs in item.data.values() if isinstance(vs, list) for v in vs)]:
            if isinstance(value, str):
                bad = [c for c in value if unicodedata.category(c) in ("Cc", "Cs")
                       or unicodedata.bidirectional(c) in ("RLO", "LRO", "RLE", "LRE", "PDF", "RLI", "LRI", "FSI", "PDI")
                       or c in "\u200b\u200e\u200f\u061c\ufeff\u2028\u2029\uffff"]
                assert not bad, (entry, value)


_SUBPAGE = st.sampled_from(["/changes", "/files", "/commits", "/commits/0123abc", "#discussion_r1", "/", "?w=1",
                            "/checks", "#issuecomment-5"])


@fuzz_settings(40)
@given(st.integers(min_value=0, max_value=HISTORY_CI - 1), _SUBPAGE,
       st.sampled_from(["https://github.com/", "http://github.com/", "https://www.github.com/"]),
       st.integers(min_value=1, max_value=9999))
def test_fuzz_a_pr_link_in_any_form_keeps_its_pr(k, suffix, host, other):
    """Family `subpage-links`: a link naming PR #N in a sub-page form is corrected only to #N."""
    import re

    log = history()
    lines = log.split(b"\n")
    links = [i for i, text in enumerate(lines) if re.fullmatch(rb"  pr-link: https://github\.com/.+/pull/[0-9]+", text)]
    i = links[k % len(links)]
    number = int(lines[i].rsplit(b"/", 1)[1])
    lines[i] = f"  pr-link: {host}{REPO}/pull/{number}{suffix}".encode()
    base = b"\n".join(lines)
    lines[i] = f"  pr-link: https://github.com/{REPO}/pull/{other}".encode()
    head = b"\n".join(lines)
    result = check_case("changelog-subpage", _lint_and_render, base, head).value
    assert result.ok is (other == number), (base.split(b"\n")[i], result.errors)
