"""A recipe that is a symbolic link out of the repository (issue 35): the diff shows a path, not the
recipe, and a runner would read whatever that path holds on its host. `config validate` refuses it at
its place, `runner run` never reads it; a link inside the repository stays fine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from clirun import run

SEED = "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"


def test_a_recipe_linked_from_outside_the_repository_is_refused(scratch: Path, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(scratch / SEED, outside / "agentic.yaml")
    (scratch / SEED).unlink()
    (scratch / SEED).symlink_to(outside / "agentic.yaml")
    res = run(["config", "validate", "--root", str(scratch), "--format", "json"])
    assert res.code == 1, res.out + res.err
    errors = json.loads(res.out)["errors"]
    ours = [e for e in errors if e["file"] == SEED]
    assert len(ours) == 1, errors
    assert ours[0]["message"].startswith(f"a symbolic link to {outside / 'agentic.yaml'}, outside the repository")
    assert "commit the file itself" in ours[0]["hint"]
    text = run(["config", "validate", "--root", str(scratch)])
    assert f"{SEED}: error: a symbolic link to" in text.out + text.err


def test_a_folder_of_recipes_linked_from_outside_is_refused(scratch: Path, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    shutil.move(str(scratch / "recipes/gb300-dsv41flash-fp4-sglang"), outside / "r")
    (scratch / "recipes/gb300-dsv41flash-fp4-sglang").symlink_to(outside / "r", target_is_directory=True)
    res = run(["config", "validate", "--root", str(scratch), "--format", "json"])
    assert res.code == 1
    assert any(e["file"] == "recipes/gb300-dsv41flash-fp4-sglang" and "outside the repository" in e["message"]
               for e in json.loads(res.out)["errors"])


def test_a_link_inside_the_repository_is_fine(scratch: Path):
    shutil.move(str(scratch / SEED), scratch / "recipes/real.yaml")
    (scratch / SEED).symlink_to("../real.yaml")
    res = run(["config", "validate", "--root", str(scratch), "--format", "json"])
    assert not [e for e in json.loads(res.out)["errors"] if "outside the repository" in e["message"]], res.out


def test_runner_run_never_reads_a_recipe_from_outside(scratch: Path, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(scratch / SEED, outside / "agentic.yaml")
    (scratch / "recipes/linked.yaml").symlink_to(outside / "agentic.yaml")
    row = json.loads((Path(__file__).resolve().parents[2] / "docs/examples/row-dep2-c64.json").read_text())
    for recipe in ("recipes/linked.yaml", f"recipes/../../{outside.name}/agentic.yaml"):
        (scratch / "row.json").write_text(json.dumps({**row, "recipe": recipe}))
        res = run(["runner", "run", "--row", str(scratch / "row.json"), "--root", str(scratch), "--dry-run"])
        assert res.code == 1 and "outside the repository" in res.err, res.out + res.err
