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
