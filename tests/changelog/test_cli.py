"""`ci-tools changelog ...` as a process, on real git repositories in temporary directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import assert_golden

from .helpers import LINK, REPO, commit, entry, git, history, init_repo, write

LOG = "inferencex-e2e/perf-changelog.yaml"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "changelog"
MASTER = b"""# comment
cfg-a:
  model: a
cfg-b:
  model: b
dsr1-fp8-h200-sglang:
  model: dsr1
"""


def cli(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "GITHUB_REPOSITORY"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=repo, capture_output=True, text=True,
                          env=full_env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "repo")
    write(r, "inferencex-e2e/configs/nvidia-master.yaml", MASTER)
    write(r, "inferencex-e2e/configs/runners.yaml", b"labels: {}\n")
    write(r, "inferencex-e2e/ci-policy.yaml", f"policy-version: 1\nrepository: {REPO}\nlabels: {{}}\n".encode())
    write(r, LOG, history(3))
    commit(r, "base", tag="base")
    return r


def head_with(repo: Path, content: bytes, tag: str = "head") -> None:
    write(repo, LOG, content)
    commit(repo, tag, tag=tag)


def test_pr_mode_accepts_an_appended_entry(repo):
    head_with(repo, history(3) + b"\n" + entry(keys=("cfg-*",)))
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == (f"{LOG}: accepted: 1 new entry\n"
                          "  entry 4 (line 19): 2 config(s): cfg-a, cfg-b\n")


def test_rejection_in_every_format_matches_the_golden_files(repo):
    head_with(repo, history(3) + b"\n\n" + entry(keys=("nope",), link="TBD"))
    for fmt, ext in (("text", "txt"), ("json", "json"), ("github", "txt")):
        out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", "--format", fmt)
        assert out.returncode == 1, out.stderr
        assert "Traceback" not in out.stderr
        assert_golden(GOLDEN / f"lint-rejected.{fmt}.{ext}", out.stdout)


def test_json_lists_added_entries_and_resolved_keys(repo):
    head_with(repo, history(3) + b"\n" + entry(keys=("cfg-b", "dsr1-*"), link=f"{LINK}/42"))
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--format", "json")
    body = json.loads(out.stdout)
    assert out.returncode == 0
    assert body == {"ok": True, "errors": [], "corrections": 0, "added": [{
        "number": 4, "line": 19, "resolved-keys": ["cfg-b", "dsr1-fp8-h200-sglang"],
        "entry": {"config-keys": ["cfg-b", "dsr1-*"], "description": ["Add cfg-a."], "pr-link": f"{LINK}/42"}}]}


def test_main_mode_rejects_a_placeholder(repo):
    head_with(repo, history(3) + b"\n" + entry())
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head")
    assert out.returncode == 1
    assert (f"{LOG}:23: error: entry 4: a new main-branch entry must have a canonical pr-link; found 'XXX'"
            in out.stdout)


def test_reads_git_objects_not_the_working_tree(repo):
    head_with(repo, history(3) + b"\n" + entry())
    write(repo, LOG, b"garbage\r\n")
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42")
    assert out.returncode == 0, out.stdout


def test_correction_only_is_accepted(repo):
    head_with(repo, history(3).replace(b"pull/2\n", b"pull/XXX\n"), tag="placeholder")
    head_with(repo, history(3).replace(b"pull/2\n", b"pull/20\n"))
    out = cli(repo, "changelog", "lint", "--base", "placeholder", "--head", "head")
    assert out.returncode == 0
    assert out.stdout == f"{LOG}: accepted: 1 pr-link correction(s)\n"


@pytest.mark.parametrize("args,code,message", [
    (["--base", "nope", "--head", "HEAD"], 2,
     "unknown git ref 'nope': no commit by that name in {repo} (fetch it first, e.g. `git fetch origin <branch>`,"
     " or check the spelling; shallow CI checkouts need `fetch-depth: 0`)"),
    (["--base", "base"], 2, "give --base REF and --head REF (or --staged for the pre-commit check)"),
    (["--staged", "--base", "base"], 2, "--staged compares HEAD with the index; do not combine it with --base/--head"),
    (["--base", "base", "--head", "HEAD", "--repo", "not a repo"], 2,
     "--repo must be OWNER/NAME (e.g. SemiAnalysisAI/InferenceX), not 'not a repo'"),
    (["--base", "base", "--head", "HEAD", "--changelog-file", "missing.yaml"], 2,
     "missing.yaml: error: the changelog does not exist at HEAD"),
    (["--base", "base", "--head", "HEAD", "--master", "nope.yaml"], 2,
     "nope.yaml: error: master config not found at HEAD"),
])
def test_usage_and_input_errors(repo, args, code, message):
    out = cli(repo, "changelog", "lint", *args)
    assert out.returncode == code
    assert message.format(repo=repo.resolve()) in out.stderr
    assert "Traceback" not in out.stderr


def test_pr_must_be_a_positive_number(repo):
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "HEAD", "--pr", "x")
    assert out.returncode == 2 and "'x' is not a valid integer" in out.stderr


def test_inferencex_layout_with_master_options(tmp_path):
    r = init_repo(tmp_path / "ix")
    write(r, "configs/amd-master.yaml", b"amd-a:\n  x: 1\n")
    write(r, "configs/nvidia-master.yaml", b"nv-a:\n  x: 1\n")
    write(r, "perf-changelog.yaml", history(1).replace(b"cfg-a", b"nv-a"))
    commit(r, "base", tag="base")
    head_with_file = history(1).replace(b"cfg-a", b"nv-a") + b"\n" + entry(keys=("amd-a", "nv-?"))
    write(r, "perf-changelog.yaml", head_with_file)
    commit(r, "head", tag="head")
    args = ["changelog", "lint", "--base", "base", "--head", "head", "--changelog-file", "perf-changelog.yaml",
            "--master", "configs/amd-master.yaml", "--master", "configs/nvidia-master.yaml", "--pr", "7"]
    out = cli(r, *args, env={"GITHUB_REPOSITORY": REPO})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "amd-a, nv-a" in out.stdout
    # no policy, no $GITHUB_REPOSITORY, no remote: the repository must be given
    out = cli(r, *args)
    assert out.returncode == 2 and "pass --repo OWNER/NAME" in out.stderr
    git(r, "remote", "add", "origin", "git@github.com:acme/bench.git")
    assert cli(r, *args).returncode == 0


def test_staged_mode_for_pre_commit(repo):
    write(repo, LOG, history(3) + b"\n" + entry())
    git(repo, "add", LOG)
    write(repo, LOG, b"unstaged garbage\n")  # only what is staged counts
    out = cli(repo, "changelog", "lint", "--staged")
    assert out.returncode == 0, out.stdout
    write(repo, LOG, history(3).replace(b"Change 3.", b"Change three."))
    git(repo, "add", LOG)
    out = cli(repo, "changelog", "lint", "--staged")
    assert out.returncode == 1
    assert "entry 3 (line 13) was changed" in out.stdout


def test_staged_mode_in_a_repository_without_commits(tmp_path):
    r = init_repo(tmp_path / "fresh")
    write(r, "inferencex-e2e/configs/nvidia-master.yaml", MASTER)
    write(r, LOG, entry())
    git(r, "add", "-A")
    out = cli(r, "changelog", "lint", "--staged", "--repo", REPO)
    assert out.returncode == 0, out.stdout + out.stderr


def test_canonicalize_rewrites_the_working_tree(repo):
    git(repo, "branch", "-f", "origin/main", "base")  # a local stand-in for the remote-tracking branch
    new = history(3) + b"\n" + entry() + b"\n" + entry(keys=("cfg-b",), link=f"{LINK}/XXX")
    head_with(repo, new)
    out = cli(repo, "changelog", "canonicalize", "--pr", "42")
    assert out.returncode == 0, out.stderr
    assert (repo / LOG).read_bytes() == new.replace(b"pr-link: XXX", f"pr-link: {LINK}/42".encode()).replace(
        f"{LINK}/XXX".encode(), f"{LINK}/42".encode())
    out = cli(repo, "changelog", "canonicalize", "--pr", "42", "--base", "base")
    assert out.stdout == f"{LOG} already links PR #42; nothing to do\n"


def _conflicted_merge(repo: Path, other_conflict: bool = False) -> None:
    git(repo, "checkout", "-q", "-b", "pr")
    write(repo, LOG, history(3) + b"\n" + entry(keys=("cfg-b",), desc=("PR.",)))
    if other_conflict:
        write(repo, "inferencex-e2e/configs/runners.yaml", b"labels: {pr: []}\n")
    commit(repo, "pr entry")
    git(repo, "checkout", "-q", "main")
    write(repo, LOG, history(3) + b"\n" + entry(desc=("Main.",), link=f"{LINK}/40"))
    if other_conflict:
        write(repo, "inferencex-e2e/configs/runners.yaml", b"labels: {main: []}\n")
    commit(repo, "main entry")
    git(repo, "checkout", "-q", "pr")
    assert git(repo, "merge", "main", check=False).returncode != 0


def test_resolve_conflict_during_a_real_merge(repo):
    _conflicted_merge(repo)
    out = cli(repo, "changelog", "resolve-conflict", "--pr", "42")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{LOG}: resolved: main's version plus 1 entry of PR #42\nnext: git add {LOG} && git commit --no-edit\n"
    resolved = (repo / LOG).read_bytes()
    assert resolved == (history(3) + b"\n" + entry(desc=("Main.",), link=f"{LINK}/40") + b"\n"
                        + entry(keys=("cfg-b",), desc=("PR.",), link=f"{LINK}/42"))
    git(repo, "add", LOG)
    git(repo, "commit", "-q", "--no-edit")
    out = cli(repo, "changelog", "lint", "--base", "main", "--head", "HEAD", "--pr", "42")
    assert out.returncode == 0, out.stdout


def test_resolve_conflict_refuses_other_conflicts(repo):
    _conflicted_merge(repo, other_conflict=True)
    before = (repo / LOG).read_bytes()
    out = cli(repo, "changelog", "resolve-conflict", "--pr", "42")
    assert out.returncode == 1
    assert out.stderr == ("error: other files conflict too: inferencex-e2e/configs/runners.yaml; resolve-conflict only"
                          " resolves the changelog. Resolve those by hand first (or `git merge --abort`)\n")
    assert (repo / LOG).read_bytes() == before


def test_resolve_conflict_outside_a_merge(repo):
    out = cli(repo, "changelog", "resolve-conflict", "--pr", "42")
    assert out.returncode == 2  # used at the wrong time: a usage error
    assert "no merge is in progress" in out.stderr


def test_pre_commit_hook_definition(repo_root):
    import yaml

    hooks = yaml.safe_load((repo_root / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "changelog-lint")
    assert hook["entry"] == "ci-tools changelog lint --hook --fix"
    assert hook["pass_filenames"] is False and hook["language"] == "python"
    assert "perf-changelog" in hook["files"]
    assert {"pre-commit", "pre-push", "manual"} <= set(hook["stages"])


def test_documented_pre_commit_snippet_names_a_ref_of_this_repository(repo_root):
    import re

    for doc in ("README.md", "docs/contributor.md"):
        revs = re.findall(r"repo: https://github.com/SemiAnalysisAI/ci-tools, rev: ([^,\s]+),", (repo_root / doc).read_text())
        assert revs, f"{doc} shows the pre-commit entry"
        for rev in revs:
            found = [git(repo_root, "rev-parse", "--verify", "--quiet", f"{r}^{{commit}}", check=False).returncode
                     for r in (rev, f"origin/{rev}")]
            assert 0 in found, f"{doc}'s pre-commit rev {rev!r} is not a ref of this repository"


def test_fix_repairs_only_new_lines_and_says_what_is_left(repo):
    spaced = entry(keys=("cfg-b",)).replace(b"  description:\n", b"  description: \n")
    write(repo, LOG, history(3) + b"  \n\n" + spaced + b"\n")
    git(repo, "add", LOG)
    out = cli(repo, "changelog", "lint", "--staged", "--fix")
    assert out.returncode == 1
    assert f"{LOG}:18: error: trailing whitespace in a new line (also at line 22)" in out.stdout
    assert "run `ci-tools changelog lint --fix`" in out.stdout
    assert "(it passes the gate now)" in out.stdout
    assert (repo / LOG).read_bytes() == history(3) + b"\n" + entry(keys=("cfg-b",))
    git(repo, "add", LOG)
    assert cli(repo, "changelog", "lint", "--staged", "--fix").returncode == 0


def test_fix_leaves_history_edits_and_other_findings_alone(repo):
    write(repo, LOG, history(3).replace(b"Change 1.", b"Change one.") + b"\n" + entry())
    git(repo, "add", LOG)
    before = (repo / LOG).read_bytes()
    out = cli(repo, "changelog", "lint", "--staged", "--fix")
    assert out.returncode == 1 and "historical entries are immutable" in out.stdout
    assert (repo / LOG).read_bytes() == before
    write(repo, LOG, history(3) + b"\n" + entry(keys=("nope",)) + b"   \n")
    git(repo, "add", LOG)
    out = cli(repo, "changelog", "lint", "--staged", "--fix")
    assert out.returncode == 1 and "1 finding(s) above remain to fix by hand" in out.stdout
    assert (repo / LOG).read_bytes() == history(3) + b"\n" + entry(keys=("nope",))


def test_fix_refuses_when_the_working_tree_is_not_the_checked_version(repo):
    head_with(repo, history(3) + b"\n" + entry() + b" \n")
    write(repo, LOG, b"edited\n")
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", "--fix")
    assert out.returncode == 1 and "not fixed: the working-tree file differs" in out.stderr + out.stdout
    assert (repo / LOG).read_bytes() == b"edited\n"


@pytest.mark.parametrize("setup,how", [
    ("range", "the range"),
    ("staged", "the index against HEAD"),
    ("branch", "HEAD against its merge base with origin/main"),
    ("alone", "the index against HEAD; no upstream branch (origin/main)"),
])
def test_hook_mode_picks_the_comparison_pre_commit_asks_for(repo, setup, how):
    bad = history(3) + b"\n" + entry(keys=("nope",))
    env = {}
    if setup == "range":
        head_with(repo, bad)
        env = {"PRE_COMMIT_FROM_REF": "base", "PRE_COMMIT_TO_REF": "head"}
    elif setup == "staged":
        write(repo, LOG, bad)
        git(repo, "add", LOG)
    elif setup == "branch":
        git(repo, "update-ref", "refs/remotes/origin/main", "base")
        head_with(repo, bad)
    else:
        head_with(repo, bad)
    out = cli(repo, "changelog", "lint", "--hook", env=env)
    assert f"{LOG}: checked {how}" in out.stdout
    if setup == "alone":  # the broken entry is in HEAD and nothing says what the branch started from
        assert out.returncode == 0 and "accepted: no change" in out.stdout
    else:
        assert out.returncode == 1 and "config key 'nope' is not in the master configs" in out.stdout


def test_canonicalize_without_origin_main_asks_for_base(repo):
    out = cli(repo, "changelog", "canonicalize", "--pr", "42")
    assert out.returncode == 2
    assert "no --base given and the default, the merge base of HEAD and origin/main, is unavailable" in out.stderr
    assert out.stderr.rstrip().endswith("pass --base REF")


def test_github_format_on_success(repo):
    head_with(repo, history(3) + b"\n" + entry())
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", "--format", "github")
    assert out.stdout == f"::notice file={LOG},title=changelog lint::1 new entry\n"


def test_resolve_conflict_refuses_during_a_rebase(repo):
    # In a rebase "ours" is main and "theirs" the PR: the stages mean the opposite, so no guessing.
    git(repo, "checkout", "-q", "-b", "pr")
    write(repo, LOG, history(3) + b"\n" + entry(keys=("cfg-b",), desc=("PR.",)))
    commit(repo, "pr entry")
    git(repo, "checkout", "-q", "main")
    write(repo, LOG, history(3) + b"\n" + entry(desc=("Main.",), link=f"{LINK}/40"))
    commit(repo, "main entry")
    git(repo, "checkout", "-q", "pr")
    assert git(repo, "rebase", "main", check=False).returncode != 0
    out = cli(repo, "changelog", "resolve-conflict", "--pr", "42")
    assert out.returncode == 1
    assert "a rebase is in progress; resolve-conflict only handles `git merge origin/main`" in out.stderr
    git(repo, "rebase", "--abort")


def test_a_pr_behind_main_is_judged_on_its_own_change(repo):
    git(repo, "checkout", "-q", "-b", "pr")
    write(repo, LOG, history(3) + b"\n" + entry(keys=("cfg-b",), desc=("PR.",)))
    commit(repo, "pr entry")
    git(repo, "checkout", "-q", "main")
    write(repo, LOG, history(3) + b"\n" + entry(desc=("Main.",), link=f"{LINK}/40"))
    commit(repo, "main moved on")
    out = cli(repo, "changelog", "lint", "--base", "main", "--head", "pr", "--pr", "42")
    assert out.returncode == 0, out.stdout
    assert "entry 4 (line 19): 1 config(s): cfg-b" in out.stdout


def test_unrelated_histories_are_an_input_error(repo, tmp_path):
    git(repo, "checkout", "-q", "--orphan", "other")
    write(repo, LOG, entry())
    commit(repo, "unrelated", tag="other")
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "other")
    assert out.returncode == 2
    assert "'base' and 'other' have no common ancestor" in out.stderr


def test_a_pr_cannot_choose_the_repository_its_links_are_checked_against(repo):
    """Issue 15 item 3: the PR edits `repository:` in the policy and re-points history's placeholder and
    foreign links at another repository; the links are judged against the base version's repository."""
    base = history(2) + b"\n" + entry(link=f"{LINK}/XXX")
    head_with(repo, base, tag="with-placeholder")
    write(repo, "inferencex-e2e/ci-policy.yaml", b"policy-version: 1\nrepository: evil/elsewhere\nlabels: {}\n")
    head_with(repo, base.replace(f"{LINK}/XXX".encode(), b"https://github.com/evil/elsewhere/pull/9"))
    out = cli(repo, "changelog", "lint", "--base", "with-placeholder", "--head", "head")
    assert out.returncode == 1, out.stdout
    assert f"a pr-link correction must be a canonical link; found 'https://github.com/evil/elsewhere/pull/9'" \
        in out.stdout
    assert f"use {LINK}/<number>" in out.stdout


def test_github_repository_comes_before_the_policy_file(repo):
    head_with(repo, history(3).replace(b"pull/2\n", b"pull/XXX\n"), tag="placeholder")
    head_with(repo, history(3).replace(b"pull/2\n", b"pull/20\n"))
    out = cli(repo, "changelog", "lint", "--base", "placeholder", "--head", "head",
              env={"GITHUB_REPOSITORY": "other/repo"})
    assert out.returncode == 1 and "found 'https://github.com/acme/bench/pull/20'" in out.stdout


def test_canonicalize_speaks_json_and_github(repo):
    head_with(repo, history(3) + b"\n" + entry())
    out = cli(repo, "changelog", "canonicalize", "--pr", "42", "--base", "base", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"file": LOG, "changed": True,
                                      "message": f"{LOG}: pr-links of the new entries now point to PR #42"}
    out = cli(repo, "changelog", "canonicalize", "--pr", "42", "--base", "base", "--format", "github")
    assert out.stdout == f"::notice file={LOG},title=changelog::{LOG} already links PR #42; nothing to do\n"


def test_every_finding_at_once_history_edits_and_a_typod_key(repo):
    """Issue 24: a history edit hid the rest (a second edited entry, a typo'd key in the new entry):
    the author fixed one, pushed, and only then learned of the next."""
    edited = history(3).replace(b"Change 1.", b"Change one.").replace(b"Change 3.", b"Change three.")
    head_with(repo, edited + b"\n" + entry(keys=("cfg-bb",)))
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42")
    assert out.returncode == 1
    assert "entry 1 (line 1) was changed" in out.stdout and "entry 3 (line 13) was changed" in out.stdout
    assert "config key 'cfg-bb' is not in the master configs; did you mean 'cfg-b'?" in out.stdout
    assert f"{LOG}: rejected: 3 error(s)" in out.stdout


def test_text_and_json_number_an_entry_the_same_way(repo):
    """Issue 24: the text said "entry 4" and the JSON `"index": 3` for the same entry."""
    head_with(repo, history(3) + b"\n" + entry(keys=("cfg-b",)))
    text = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42").stdout
    doc = json.loads(cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42",
                         "--format", "json").stdout)
    (added,) = doc["added"]
    assert f"entry {added['number']} (line {added['line']})" in text and "index" not in added


def test_many_findings_are_capped_per_file_and_counted(repo):
    """2,000 appended entries without their empty lines: 1,999 findings. The first 50 are shown, one
    more counts the rest, and the verdict counts them all (each format; the text shown before printed
    every one)."""
    from ci_tools.errors import MAX_FINDINGS_PER_FILE

    added = b"".join(entry(keys=("cfg-a",), desc=(f"Entry {i}.",)) for i in range(2000))
    head_with(repo, history(3) + b"\n" + added)
    text = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42")
    assert text.returncode == 1
    shown = [line for line in text.stdout.splitlines() if "must be separated by exactly one empty line" in line]
    assert len(shown) == MAX_FINDINGS_PER_FILE
    assert f"… and {1999 - MAX_FINDINGS_PER_FILE} more findings in this file" in text.stdout
    assert text.stdout.rstrip().endswith(f"{LOG}: rejected: 1999 error(s)")
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", "--format", "json")
    errors = json.loads(out.stdout)["errors"]
    assert len(errors) == MAX_FINDINGS_PER_FILE + 1 and errors[-1]["message"].startswith("… and 1949 more")


def test_a_changelog_past_the_yaml_size_limit_is_refused_from_git(repo):
    """The changelog is read from git, not from disk: the size limit of one YAML file holds there too."""
    from ci_tools.yaml.located import MAX_YAML_FILE_BYTES

    big = entry(keys=("cfg-a",), desc=("x" * (MAX_YAML_FILE_BYTES + 1),))
    head_with(repo, history(3) + b"\n" + big)
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"more than {MAX_YAML_FILE_BYTES:,} bytes, the limit for one YAML file" in out.stdout + out.stderr
