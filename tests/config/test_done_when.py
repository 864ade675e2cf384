"""The issue's "done when" items for config validation, on the repository's own example data."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest
from cfgdata import REPO
from clirun import run

from ci_tools import names
from ci_tools.config.touched import touched_keys

MASTER = names.CONFIGS_DIR + "/nvidia-master.yaml"
RECIPE = names.RECIPES_DIR + "/gb300-dsv41flash-fp4-sglang/agentic.yaml"
SEED = "dsv41flash-fp4-gb300-sglang-agentic-dspark"


def _line_of(path: Path, needle: str, after: str | None = None) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines) if i >= start and needle in line) + 1


def test_the_repository_validates_clean():
    res = run(["config", "validate", "--root", str(REPO)])
    assert res.code == 0, res.out + res.err
    assert res.out.endswith("0 error(s), 0 warning(s)\n")
    assert "checked 2 master file(s) with 9 entries, 1 runners file, 9 recipe(s)" in res.out


def test_changing_only_the_recipe_digest_fails_naming_both_files_and_lines(scratch):
    recipe = scratch / RECIPE
    text = recipe.read_text(encoding="utf-8")
    old = re.search(r"^image: .*@sha256:([0-9a-f]{64})$", text, re.M).group(1)
    new = "0" * 64
    recipe.write_text(text.replace(old, new), encoding="utf-8")
    res = run(["config", "validate"], cwd=scratch)
    assert res.code == 1
    recipe_line = _line_of(recipe, "image: ")
    master_line = _line_of(scratch / MASTER, "image: ", after=f"{SEED}:")
    (finding,) = [line for line in res.out.splitlines() if ": error: " in line]
    assert finding.startswith(f"{RECIPE}:{recipe_line}:1: error: recipe image differs from the image of master entry "
                              f"{SEED} at {MASTER}:{master_line} ")
    assert f"recipe sha256:{new[:12]}..., master sha256:{old[:12]}..." in finding


def test_the_demo_scratch_repository_validates(tmp_path):
    spec = importlib.util.spec_from_file_location("demo", REPO / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    demo.build_scratch_repo(tmp_path)
    res = run(["config", "validate", "--base", "base"], cwd=tmp_path)
    assert res.code == 0, res.out + res.err


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(scratch: Path) -> Path:
    _git(scratch, "init", "-q", "-b", "main")
    _git(scratch, "config", "user.email", "t@example.invalid")
    _git(scratch, "config", "user.name", "t")
    _git(scratch, "add", "-A")
    _git(scratch, "commit", "-q", "-m", "base")
    return scratch


def _unpin(repo: Path, rel: str, key_line: str) -> None:
    """Drop the digest from the image right after `key_line`."""
    path = repo / rel
    lines = path.read_text(encoding="utf-8").split("\n")
    i = lines.index(key_line)
    j = next(n for n in range(i, len(lines)) if lines[n].lstrip().startswith("image:"))
    lines[j] = lines[j].split("@")[0]
    path.write_text("\n".join(lines), encoding="utf-8")


def _pin_findings(repo: Path, *args: str) -> dict[str, list[str]]:
    body = json.loads(run(["config", "validate", "--format", "json", *args], cwd=repo).out)
    return {kind: [f["message"] for f in body[kind] if "digest" in f["message"]] for kind in ("errors", "warnings")}


def test_base_ref_makes_unpinned_images_errors_only_where_the_change_touches(repo):
    _git(repo, "tag", "base")
    _unpin(repo, MASTER, "dsv41flash-fp4-b300-sglang:")  # legacy debt, committed before the change
    _unpin(repo, names.RECIPES_DIR + "/b300-dsv41flash-fp4-sglang/fixed-seq.yaml", "config-key: dsv41flash-fp4-b300-sglang")
    _git(repo, "commit", "-qam", "unpin b300")
    _git(repo, "tag", "before-change")
    _unpin(repo, MASTER, "dsv41flash-fp4-gb300-dynamo-sglang-disagg:")  # the change under review
    got = _pin_findings(repo, "--base", "before-change")
    assert got["errors"] == ["image of dsv41flash-fp4-gb300-dynamo-sglang-disagg (touched by this change): "
                             "it is not pinned by digest"]
    assert got["warnings"] == ["1 entry in this file uses an image without a @sha256 digest: "
                               "dsv41flash-fp4-b300-sglang (line 12)", "recipe image: it is not pinned by digest"]
    # Against the older base both entries (and the B300 recipe) changed, so all are errors.
    got = _pin_findings(repo, "--base", "base")
    assert len(got["errors"]) == 3 and got["warnings"] == []


def test_an_entry_whose_recipe_changed_is_touched(repo):
    _unpin(repo, MASTER, f"{SEED}:")
    _unpin(repo, RECIPE, "config-key: " + SEED)
    _git(repo, "commit", "-qam", "unpin the seed entry and its recipe (legacy)")
    assert _pin_findings(repo, "--base", "HEAD")["errors"] == []
    recipe = repo / RECIPE
    recipe.write_text(recipe.read_text(encoding="utf-8").replace("tokenizer-worker-num: 4", "tokenizer-worker-num: 8", 1),
                      encoding="utf-8")
    got = _pin_findings(repo, "--base", "HEAD")
    assert got["errors"] == [f"image of {SEED} (touched by this change): it is not pinned by digest",
                             "recipe image: it is not pinned by digest"]


@pytest.mark.parametrize("base,head,expected", [
    (None, {"a": 1, "b": 2}, {"a", "b"}),
    ({"a": 1}, {"a": 1, "b": 2}, {"b"}),
    ({"a": {"x": [1, 2]}}, {"a": {"x": [1, 3]}}, {"a"}),
    ({"a": 1, "b": 2}, {"a": 1}, set()),
    ({"a": 1}, ["not", "a", "mapping"], set()),
    ("garbage", {"a": 1}, {"a"}),
])
def test_touched_keys(base, head, expected):
    assert touched_keys(base, head) == expected


@pytest.mark.parametrize("files,base_text,expected", [
    ({"m.yaml"}, "a: 1\nb: 2\n", {"b"}),            # b changed
    ({"m.yaml"}, None, {"a", "b"}),                 # the file is new at head
    ({"m.yaml"}, "a: [1\n", {"a", "b"}),            # unreadable at base: all of it counts
    ({"other.yaml"}, "a: 1\nb: 2\n", {"k"}),        # the master is unchanged: only the given keys
])
def test_change_from(files, base_text, expected):
    from ci_tools.config.touched import change_from
    from ci_tools.yaml.located import load_yaml_text

    head = load_yaml_text("a: 1\nb: 3\n", "m.yaml")
    change = change_from("base", files, [head], {"m.yaml": base_text}, frozenset({"k"}) if "other.yaml" in files else frozenset())
    assert change.keys == frozenset(expected) and change.files == frozenset(files)
