"""The missing-entry rule: performance-relevant changes need an appended entry naming their configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ci_tools.changelog.coverage import ChangedFile, entry_text, missing_entry_findings, relevant

from .helpers import REPO, commit, entry, git, history, init_repo, write
from .test_cli import LOG, cli

POLICY = (f"policy-version: 1\nrepository: {REPO}\nlabels: {{}}\n"
          "performance-relevant:\n  - inferencex-e2e/configs/*-master.yaml\n  - recipes/*\n  - launch/*.sh\n").encode()
MASTER = b"""cfg-a:
  model: a
  recipe: recipes/a/agentic.yaml
cfg-b:
  model: b
  recipe: recipes/a/agentic.yaml
cfg-c:
  model: c
"""
RECIPE = b"# tuned for GB300\nconfig-key: cfg-a\nargs:\n  tp: 2\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "repo")
    write(r, "inferencex-e2e/configs/nvidia-master.yaml", MASTER)
    write(r, "inferencex-e2e/ci-policy.yaml", POLICY)
    write(r, "recipes/a/agentic.yaml", RECIPE)
    write(r, "launch/run.sh", b"echo run\n")
    write(r, "docs/notes.md", b"notes\n")
    write(r, LOG, history(3))
    commit(r, "base", tag="base")
    return r


def lint(repo: Path, *extra: str):
    commit(repo, "head")
    git(repo, "tag", "-f", "head")
    return cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", *extra)


def suggested_entry(hint: str) -> bytes:
    text = hint.split("describe the change:\n", 1)[1]
    return (text.replace("<what changed and why it can move the numbers>", "Tune it.") + "\n").encode()


def test_a_recipe_change_without_an_entry_fails_on_the_recipe_with_the_entry_to_append(repo):
    write(repo, "recipes/a/agentic.yaml", RECIPE.replace(b"tp: 2", b"tp: 4"))
    out = lint(repo, "--format", "json")
    assert out.returncode == 1
    [err] = json.loads(out.stdout)["errors"]
    assert (err["file"], err["line"]) == ("recipes/a/agentic.yaml", 1)
    assert err["message"] == ("recipes/a/agentic.yaml changed and is served by configs cfg-a, cfg-b, but no changelog"
                              " entry appended by this change names them; every change that can affect performance"
                              " needs one")
    assert entry_text(["cfg-a", "cfg-b"]) in err["hint"]
    # appending exactly the suggested entry (its description written) passes
    write(repo, LOG, history(3) + b"\n" + suggested_entry(err["hint"]))
    out = lint(repo)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_master_entry_change_is_located_on_its_key(repo):
    write(repo, "inferencex-e2e/configs/nvidia-master.yaml", MASTER.replace(b"model: c", b"model: c2"))
    write(repo, LOG, history(3) + b"\n" + entry(keys=("cfg-a",)))
    out = lint(repo, "--format", "github")
    assert out.returncode == 1
    assert out.stdout.startswith("::error file=inferencex-e2e/configs/nvidia-master.yaml,line=7,title=changelog lint::"
                                 "inferencex-e2e/configs/nvidia-master.yaml changed and changes config cfg-c")


@pytest.mark.parametrize("name,change,keys,ok", [
    ("entry names the configs", lambda r: write(r, "recipes/a/agentic.yaml", RECIPE + b"  ep: 2\n"), ("cfg-*",), True),
    ("entry names one of two", lambda r: write(r, "recipes/a/agentic.yaml", RECIPE + b"  ep: 2\n"), ("cfg-a",), False),
    ("comment-only recipe edit", lambda r: write(r, "recipes/a/agentic.yaml", RECIPE + b"# why tp 2\n"), None, True),
    ("comment-only master edit", lambda r: write(r, "inferencex-e2e/configs/nvidia-master.yaml",
                                                 b"# a comment\n" + MASTER), None, True),
    ("other policy-named file, no entry", lambda r: write(r, "launch/run.sh", b"echo fast\n"), None, False),
    ("other policy-named file, any entry", lambda r: write(r, "launch/run.sh", b"echo fast\n"), ("cfg-c",), True),
    ("a file the policy does not name", lambda r: write(r, "docs/notes.md", b"more\n"), None, True),
    ("a deleted recipe", lambda r: (r / "recipes/a/agentic.yaml").unlink(), None, True),
])
def test_cases(repo, name, change, keys, ok):
    change(repo)
    if keys:
        write(repo, LOG, history(3) + b"\n" + entry(keys=keys))
    out = lint(repo)
    assert (out.returncode == 0) == ok, out.stdout + out.stderr


def test_commits_and_pushed_ranges_skip_the_rule_but_the_branch_check_applies_it(repo):
    write(repo, "recipes/a/agentic.yaml", RECIPE.replace(b"tp: 2", b"tp: 4"))
    git(repo, "add", "-A")
    assert cli(repo, "changelog", "lint", "--staged").returncode == 0  # the entry may come in a later commit
    commit(repo, "recipe only", tag="head")
    out = cli(repo, "changelog", "lint", "--hook", env={"PRE_COMMIT_FROM_REF": "base", "PRE_COMMIT_TO_REF": "head"})
    assert out.returncode == 0, out.stdout
    git(repo, "update-ref", "refs/remotes/origin/main", "base")
    out = cli(repo, "changelog", "lint", "--hook")
    assert out.returncode == 1 and "recipes/a/agentic.yaml:1: error: recipes/a/agentic.yaml changed" in out.stdout


def test_the_policy_without_the_list_checks_nothing(repo):
    write(repo, "inferencex-e2e/ci-policy.yaml", POLICY.split(b"performance-relevant")[0])
    write(repo, "recipes/a/agentic.yaml", RECIPE.replace(b"tp: 2", b"tp: 4"))
    assert lint(repo).returncode == 0


def test_pure_rule_table():
    recipe = ChangedFile("recipes/x.yaml", ("k1", "k2"), 1)
    other = ChangedFile("launch/x.sh", None, 1)
    assert missing_entry_findings([recipe], {"k1", "k2"}, 1, LOG) == []
    [f] = missing_entry_findings([recipe, other], {"k1"}, 1, LOG)
    assert f.file == "recipes/x.yaml" and "config k2" in f.message and entry_text(["k2"]) in f.hint
    [f] = missing_entry_findings([other], set(), 0, LOG)
    assert "appends no changelog entry" in f.message and "<config-key>" in f.hint
    assert missing_entry_findings([ChangedFile("recipes/orphan.yaml", (), 1)], set(), 0, LOG) == []
    assert relevant("recipes/a/b/c.yaml", ["recipes/*"]) and not relevant("recipesx/a", ["recipes/*"])
