"""`ci-tools config bump-image`: every place naming a config's image, and nothing else, changes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.config.bumpimage import plan_bump

KEY = "dsv41flash-fp4-gb300-sglang-agentic-dspark"
NEW = "lmsysorg/sglang:nightly-dev-cu13-20261101-abcdef12@sha256:" + "a" * 64


def cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=root, capture_output=True, text=True)


@pytest.fixture
def copy(tmp_path, repo_root) -> Path:
    for d in ("inferencex-e2e", "recipes"):
        shutil.copytree(repo_root / d, tmp_path / d)
    return tmp_path


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.split("\n"), after.split("\n")
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b) if x != y]


def test_the_seed_config_is_bumped_in_master_and_recipe_and_still_validates(copy, repo_root):
    files = ["inferencex-e2e/configs/nvidia-master.yaml", "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"]
    before = {f: (copy / f).read_text() for f in files}
    out = cli(copy, "config", "bump-image", "--config-key", KEY, "--image", NEW)
    assert out.returncode == 0, out.stderr
    for f in files:
        [(old, new)] = changed_lines(before[f], (copy / f).read_text())
        assert old.split("image: ")[0] == new.split("image: ")[0] and new.endswith("image: " + NEW)
    assert f"- config-keys:\n    - {KEY}\n" in out.stdout and "pr-link: XXX" in out.stdout
    assert cli(copy, "config", "validate", "--root", str(copy)).returncode == 0
    again = cli(copy, "config", "bump-image", "--config-key", KEY, "--image", NEW)
    assert again.returncode == 0 and "nothing to do" in again.stdout


@pytest.mark.parametrize("image", ["lmsysorg/sglang:v1", "lmsysorg/sglang@sha256:" + "a" * 64,
                                   "lmsysorg/sglang:v1@sha256:abc", "lmsysorg/sglang:v1@sha256:" + "A" * 64])
def test_references_without_a_full_digest_are_refused_and_nothing_is_written(copy, image):
    master = (copy / "inferencex-e2e/configs/nvidia-master.yaml").read_text()
    out = cli(copy, "config", "bump-image", "--config-key", KEY, "--image", image)
    assert out.returncode == 2 and "not pinned by digest" in out.stderr
    assert (copy / "inferencex-e2e/configs/nvidia-master.yaml").read_text() == master


def test_unknown_key_is_a_usage_error(copy):
    out = cli(copy, "config", "bump-image", "--config-key", "nope", "--image", NEW)
    assert out.returncode == 2 and "'nope' is not an entry" in out.stderr


def test_quoting_comments_and_config_file_recipes_are_kept():
    master = ("# top\nk:\n  image: \"old:1@sha256:" + "b" * 64 + "\"   # pinned\n  model: m\n"
              "  scenarios:\n    fixed-seq-len:\n      - search-space:\n          - prefill:\n"
              "              additional-settings: [CONFIG_FILE=recipes/r.yaml]\n")
    recipe = "# r\nimage: 'old:1@sha256:" + "b" * 64 + "'\nmodel: m\n"
    edits, texts = plan_bump({"m-master.yaml": master}, {"recipes/r.yaml": recipe}, "k", NEW)
    assert [e.file for e in edits] == ["m-master.yaml", "recipes/r.yaml"]
    assert texts["m-master.yaml"] == master.replace("old:1@sha256:" + "b" * 64, NEW)
    assert texts["recipes/r.yaml"] == recipe.replace("old:1@sha256:" + "b" * 64, NEW)


def test_json_lists_the_edits_and_the_entry(copy, tmp_path):
    import json

    out = cli(copy, "config", "bump-image", "--config-key", KEY, "--image", NEW, "--format", "json")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["edits"] and all(e["new"] == NEW for e in body["edits"])
    assert f"    - {KEY}" in body["changelog-entry"] and NEW in body["changelog-entry"]
    again = json.loads(cli(copy, "config", "bump-image", "--config-key", KEY, "--image", NEW, "--format", "json").stdout)
    assert again == {"edits": [], "changelog-entry": None}
