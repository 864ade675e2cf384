"""Acceptance-length references: a recipe's synthetic acceptance names or equals a measured entry."""

from __future__ import annotations

import re

import pytest
from cfgdata import REPO
from clirun import run

from ci_tools import names
from ci_tools.config.acceptance import all_findings, recipe_findings, references
from ci_tools.yaml.located import load_yaml_text

RECIPE = names.RECIPES_DIR + "/gb300-dsv41flash-fp4-sglang/agentic.yaml"
DISAGG = names.RECIPES_DIR + "/gb300-dsv41flash-fp4-dynamo-sglang/agentic-disagg.yaml"
ENTRY = "dsv41flash-sglang-nextn3-thinking-on"
REFS = load_yaml_text((REPO / names.ACCEPTANCE_REFERENCES).read_text(), names.ACCEPTANCE_REFERENCES)


def _recipe(**top) -> str:
    body = {"model": "deepseek-ai/DeepSeek-V4.1-Flash", "engine": "sglang",
            "image": "lmsysorg/sglang:nightly-dev-cu13-20261012-e6072935@sha256:" + "a" * 64, **top}
    lines = [f"{k}: {v}" for k, v in body.items() if v is not None]
    return "\n".join(lines) + "\nserve:\n  args:\n    speculative-num-steps: 3\n"


@pytest.mark.parametrize("top, want", [
    ({}, []),                                                                   # no synthetic acceptance
    ({"synthetic-acceptance": 3.51}, []),                                       # equals the model's entry
    ({"synthetic-acceptance": 3.51, "synthetic-acceptance-reference": ENTRY}, []),
    ({"synthetic-acceptance": 3.2}, ["synthetic acceptance 3.2 has no measured reference"]),
    ({"synthetic-acceptance": 3.4, "synthetic-acceptance-reference": ENTRY},
     ["synthetic acceptance 3.4 is stale: dsv41flash-sglang-nextn3-thinking-on"]),
    ({"synthetic-acceptance": 3.51, "synthetic-acceptance-reference": "dsv41flash-sglang-nextn3-thinking-of"},
     ["is not an entry of inferencex-e2e/acceptance-lengths.yaml (did you mean 'dsv41flash-sglang-nextn3-thinking-on'?)"]),
    ({"synthetic-acceptance": 3.51, "model": "moonshotai/Kimi-K2.5"},
     ["no entry of inferencex-e2e/acceptance-lengths.yaml for moonshotai/Kimi-K2.5 has this length (its entries: none"]),
    ({"synthetic-acceptance": 3.51, "synthetic-acceptance-reference": ENTRY, "engine": "vllm"},
     ["was measured on sglang, this recipe runs vllm"]),
    ({"synthetic-acceptance-reference": ENTRY}, ["synthetic-acceptance-reference 'dsv41flash-sglang-nextn3-thinking-on' without"]),
])
def test_recipe_against_the_references(top, want):
    doc = load_yaml_text(_recipe(**top), "recipes/x/r.yaml")
    got = [f.message for f in recipe_findings("recipes/x/r.yaml", doc, references(REFS.data)) if f.severity == "error"]
    assert len(got) == len(want) and all(w in g for w, g in zip(want, got)), got


def test_other_speculative_steps_or_image_are_named():
    doc = load_yaml_text(_recipe(**{"synthetic-acceptance": 3.51, "synthetic-acceptance-reference": ENTRY})
                         .replace("steps: 3", "steps: 2").replace("20261012-e6072935", "20261101-aaaa"), "r.yaml")
    found = recipe_findings("r.yaml", doc, references(REFS.data))
    assert [f.severity for f in found] == ["error", "warning"]
    assert "measured with 3 speculative steps, this recipe runs 2" in found[0].message
    assert "this recipe's image is nightly-dev-cu13-20261101-aaaa" in found[1].message


def test_no_references_file_refuses_every_synthetic_acceptance():
    doc = load_yaml_text(_recipe(**{"synthetic-acceptance": 3.51}), "r.yaml")
    (f,) = all_findings([("r.yaml", doc)], None)
    assert f.line == 4 and "without a references file" in f.message


def test_entries_outside_the_possible_range_or_without_a_source_are_refused():
    text = (REPO / names.ACCEPTANCE_REFERENCES).read_text().replace("acceptance-length: 3.51", "acceptance-length: 4.5")
    text = re.sub(r"      source: .*\n", "", text)
    found = all_findings([], load_yaml_text(text, names.ACCEPTANCE_REFERENCES))
    assert {f.message.split(" ")[0] for f in found} == {"acceptance", "no"}
    assert any("outside [1, mtp + 1 = 4]" in f.message for f in found)


def test_the_example_recipes_name_their_entry():
    for path in (RECIPE, DISAGG):
        assert f"synthetic-acceptance-reference: {ENTRY}" in (REPO / path).read_text()


def test_config_validate_refuses_a_recipe_without_a_reference(scratch):
    recipe = scratch / RECIPE
    text = recipe.read_text()
    recipe.write_text(text.replace("synthetic-acceptance: 3.51", "synthetic-acceptance: 3.39")
                      .replace(f"synthetic-acceptance-reference: {ENTRY}\n", ""))
    res = run(["config", "validate", "--root", str(scratch)])
    line = text.splitlines().index("synthetic-acceptance: 3.51") + 1
    assert res.code == 1
    assert f"{RECIPE}:{line}:1: error: synthetic acceptance 3.39 has no measured reference" in res.out


def test_config_validate_checks_the_references_file_schema(scratch):
    refs = scratch / names.ACCEPTANCE_REFERENCES
    refs.write_text(refs.read_text().replace("    mtp: 3", "    mpt: 3"))
    res = run(["config", "validate", "--root", str(scratch)])
    assert res.code == 1 and names.ACCEPTANCE_REFERENCES in res.out and "mpt" in res.out


def test_the_collection_matrix_is_thinking_by_steps_per_served_model():
    from ci_tools.config.acceptance import collection_matrix

    recipes = [(p, load_yaml_text((REPO / p).read_text(), p)) for p in (RECIPE, DISAGG)]
    rows = collection_matrix(recipes, references(REFS.data))
    assert [(r["thinking"], r["mtp"]) for r in rows] == [(t, k) for t in (True, False) for k in (1, 2, 3, 4)]
    assert {r["dataset"] for r in rows} == {"speed-bench-qualitative-coding"}
    assert all(r["recipes"] == [RECIPE, DISAGG] for r in rows)                 # one image: measured once
    (seed,) = [r for r in rows if r["current"] is not None]
    assert (seed["id"], seed["mtp"], seed["thinking"], seed["current"]) == (ENTRY, 3, True, 3.51)
    assert rows[0]["id"] == "deepseek-v4.1-flash-sglang-mtp1-thinking-on"
    assert [r["mtp"] for r in collection_matrix(recipes, references(REFS.data), mtp_levels=(5,), thinking=(False,))] == [3, 5]


def test_the_dry_run_prints_the_matrix_in_every_format(tmp_path, monkeypatch):
    import json

    res = run(["config", "acceptance-matrix", "--root", str(REPO), "--thinking", "on"])
    assert res.code == 0 and res.out.startswith("SPEED-Bench (speed-bench-qualitative-coding): 4 measurement(s)")
    assert f"{ENTRY}: deepseek-ai/DeepSeek-V4.1-Flash sglang nightly-dev-cu13-20261012-e6072935, thinking on, mtp 3 (now 3.51)" in res.out
    res = run(["config", "acceptance-matrix", "--root", str(REPO), "--format", "json"])
    assert len(json.loads(res.out)) == 8
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary"))
    res = run(["config", "acceptance-matrix", "--root", str(REPO), "--mtp", "3", "--format", "github"])
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert res.code == 0 and outputs["count"] == "2" and len(json.loads(outputs["matrix"])) == 2


def test_each_cell_serves_the_single_node_recipes_smallest_point():
    from ci_tools.config.acceptance import collection_matrix

    recipes = [(p, load_yaml_text((REPO / p).read_text(), p)) for p in (DISAGG, RECIPE)]
    masters = {"dsv41flash-fp4-gb300-sglang-agentic-dspark": {"runner": "cluster:gb300-nv", "precision": "fp4",
                                                              "model-prefix": "dsv41flash"}}
    rows = collection_matrix(recipes, references(REFS.data), masters=masters, thinking=(False,), mtp_levels=(2,))
    serve = rows[0]["serve"]     # the disaggregated recipe comes first but is not what a cell serves
    assert (serve["recipe"], serve["tp"], serve["ep"], serve["conc"], serve["runner"]) == (RECIPE, 4, 4, 1,
                                                                                             "cluster:gb300-nv")
    assert (serve["scenario-type"], serve["osl"], serve["exp-name"]) == ("fixed-seq-len", 4096,
                                                                           "deepseek-v4.1-flash_al_mtp2_thinking_off")
    assert rows[0]["runner"] == "cluster:gb300-nv"
    only_disagg = collection_matrix(recipes[:1], references(REFS.data), thinking=(False,), mtp_levels=(2,))
    assert only_disagg[0]["serve"] is None
