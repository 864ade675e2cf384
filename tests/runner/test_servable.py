"""Servability: every planned row runs or is refused with the entry, the reason and the fix."""

from __future__ import annotations

import copy

import pytest

from ci_tools.config.load import default_master_paths, read_masters, read_runners
from ci_tools.config.recipe import recipe_from_data
from ci_tools.config.load import load_recipe
from ci_tools.sweep.matrix import Filters, expand, select_evals
from ci_tools.evals.policy import policy_from_doc
from ci_tools.runner.servable import PENDING_RULES, Context, refusals
from ci_tools.yaml.load import load_yaml_file

from runner_support import REPO, SEED_KEY, seed_rows

B300 = "dsv41flash-fp4-b300-sglang"
MASTERS = read_masters(default_master_paths(REPO), REPO).entries
HARDWARE = (read_runners(REPO / "inferencex-e2e/configs/runners.yaml", REPO).data or {})["hardware"]
EVALS = policy_from_doc(load_yaml_file(REPO / "inferencex-e2e/ci-policy.yaml", "inferencex-e2e/ci-policy.yaml"))


def ctx(key: str, *, recipe=None, entry=None, gpn=None, evals=EVALS) -> Context:
    entry = MASTERS[key] if entry is None else entry
    if recipe is None and entry.get("recipe"):
        recipe = load_recipe(REPO / entry["recipe"], entry["recipe"])
    return Context(entry, recipe, None, gpn if gpn is not None else HARDWARE[entry["runner"]]["gpus-per-node"],
                   evals)


def example_rows() -> list[dict]:
    bench = expand(MASTERS, HARDWARE, Filters())
    evals = select_evals(expand(MASTERS, HARDWARE, Filters()), all_evals=False, evals_only=True)
    return [r.row.replace(config_key=r.key).as_dict() for r in bench + evals]


def test_every_example_row_runs_the_multinode_eval_rows_too():
    verdicts = {}
    for row in example_rows():
        found = refusals(row, ctx(row["config-key"]))
        kind = "runs" if not found else ("pending" if found[0].pending else "refused")
        verdicts.setdefault(kind, []).append((row["config-key"], row.get("exp-name"), [f.text() for f in found]))
    assert set(verdicts) == {"runs"}, verdicts
    # 12 B300 SGLang + 3 B300 vLLM + 3 B300 TRT-LLM + 3 B300 TRT-LLM MTP + 7 seed + 11 MI355X ATOM + 4 ATOM
    # MTP + 4 multi-node benchmark rows, the 7 single-node and the 3 multi-node eval rows
    assert len(verdicts["runs"]) == 57
    assert {k for k, _, _ in verdicts["runs"]} == set(MASTERS)


def test_no_pending_rule_is_left():
    """Multi-node eval rows were the last kind withheld: they run the harness against the frontend."""
    assert PENDING_RULES == ()
    _, row = seed_rows()[0]
    assert refusals({**row, "eval-only": True, "run-eval": True}, ctx(SEED_KEY)) == []   # runs the harness
    mn = next(r for r in example_rows() if r.get("eval-only") and "prefill" in r)
    assert refusals(mn, ctx(mn["config-key"])) == []


@pytest.mark.parametrize("multinode", [False, True])
def test_an_eval_row_without_the_policys_evals_section_is_refused(multinode):
    if multinode:
        row = next(r for r in example_rows() if r.get("eval-only") and "prefill" in r)
        key = row["config-key"]
    else:
        key, row = SEED_KEY, {**seed_rows()[0][1], "eval-only": True, "run-eval": True}
    (r,) = refusals(row, ctx(key, evals=None))
    assert not r.pending and r.rule == "no-eval-policy" and "evals:" in r.fix


def _seed_row(**change) -> dict:
    _, row = seed_rows()[0]
    return {**row, **change}


def _recipe(mutate) -> object:
    rec = load_recipe(REPO / MASTERS[SEED_KEY]["recipe"], MASTERS[SEED_KEY]["recipe"])
    data = copy.deepcopy(rec.data)
    mutate(data)
    return recipe_from_data(data, rec.file)


def _dep2(row):
    return {**row, "tp": 2, "ep": 2, "dp-attn": True, "conc": 64,
            "router": {"name": "sglang-router", "version": "0.3.2"}}


CASES = [
    ("no-recipe", _seed_row(), dict(entry={**MASTERS[SEED_KEY], "recipe": None}),
     "the master entry has no `recipe:`", "write a recipe"),
    ("unknown-engine", _seed_row(), dict(recipe=_recipe(lambda d: d.update(engine="tensorflow"))),
     "engine 'tensorflow', which has no ci-tools plug-in", "use sglang, vllm, trtllm, atom"),
    ("no-recipe-point", _seed_row(conc=8), {}, "no point with tp=4 ep=4 dp-attn=false conc=8", "add the point"),
    ("runner", _seed_row(image="lmsysorg/sglang:other@sha256:" + "0" * 64), {},
     "differs from the recipe's", "fix the master entry or its recipe"),
    ("runner", _seed_row(), dict(gpn=2), "the point needs 4 GPUs; runner 'cluster:gb300-nv' has 2 per node", ""),
    ("runner", {**_dep2(_seed_row()), "router": {"name": "sglang-router", "version": "0.3.1"}}, {},
     "the master declares router sglang-router 0.3.1 but", ""),
    ("runner", _dep2(_seed_row()), dict(recipe=_recipe(lambda d: d["points"]["dep2-c64"]["router"].update(version="9.9"))),
     "router sglang-router 9.9 is not known to ci-tools", ""),
    ("runner", _seed_row(pp=2), {}, "the row's `pp: 2` differs from", "fix the master entry or its recipe"),
    ("runner", _seed_row(), dict(recipe=_recipe(lambda d: d.update({"engine-versions": ["nightly"]}))),
     "engine-versions entry 'nightly' is not a published version", ""),
    ("runner", _seed_row(**{"kv-offloading": "dram", "kv-offload-backend": {"name": "hicache"}}), {},
     "the row offloads KV (dram, hicache), but recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml has no `kv-offload`",
     ""),
    ("runner", _seed_row(**{"kv-offloading": "dram", "kv-offload-backend": {"name": "lmcache"}}),
     dict(recipe=_recipe(lambda d: d.update({"kv-offload": {"backend": "hicache", "medium": "dram"}}))),
     "but recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml's kv-offload is dram/hicache", ""),
    ("runner", _seed_row(**{"kv-offloading": "dram", "kv-offload-backend": {"name": "hicache"}}),
     dict(recipe=_recipe(lambda d: d.update({"kv-offload": {"backend": "hicache", "medium": "dram"}}))),
     "has no total-cpu-dram-gb budget", ""),
]


@pytest.mark.parametrize("rule,row,kw,message,fix", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_refusal_names_the_entry_the_reason_and_the_fix(rule, row, kw, message, fix):
    found = refusals(row, ctx(SEED_KEY, **kw))
    assert found and not found[0].pending
    assert found[0].rule == rule and found[0].config_key == SEED_KEY
    assert message in found[0].message, found[0].message
    assert fix in found[0].fix
    assert found[0].text().startswith(f"{SEED_KEY}: ")


def test_a_multinode_row_needs_a_disaggregated_recipe():
    key = "dsv41flash-fp4-gb300-dynamo-sglang-disagg"
    row = next(r for r in example_rows() if r["config-key"] == key and not r.get("eval-only"))
    assert refusals(row, ctx(key)) == []
    seed_recipe = load_recipe(REPO / MASTERS[SEED_KEY]["recipe"], MASTERS[SEED_KEY]["recipe"])
    (r,) = refusals(row, ctx(key, recipe=seed_recipe))
    assert r.rule == "not-a-disaggregated-recipe" and "mode: disaggregated" in r.fix


def test_the_b300_entry_now_has_a_recipe_for_every_row():
    rows = [r for r in example_rows() if r["config-key"] == B300 and not r.get("eval-only")]
    assert len(rows) == 12
    assert all(refusals(r, ctx(B300)) == [] for r in rows)


def test_every_row_the_plan_emits_for_all_four_configs_is_accepted_by_runner_run_dry_run(tmp_path):
    """Done-when of issue 11: plan all four example configs; each emitted row (canaries included)
    goes through `runner run --dry-run` exactly as benchmark.yml hands it over."""
    import json

    from click.testing import CliRunner

    from ci_tools.cli import cli
    from ci_tools.sweep.gate import GateEvent, decide
    from ci_tools.sweep.load import load_policy
    from ci_tools.sweep.plan import Masters, PlanEntry, plan_sweep
    from ci_tools.runner.servable import screen_for

    policy = load_policy(REPO)
    keys = list(MASTERS)
    recipes = {e["recipe"]: load_recipe(REPO / e["recipe"], e["recipe"]) for e in MASTERS.values() if e.get("recipe")}
    entry = PlanEntry(0, 1, {"config-keys": keys, "description": ["x"], "pr-link": "l"}, keys)
    decision = decide(GateEvent("local", labels=("full-sweep-fail-fast",)), policy, appends_entry=True)
    from ci_tools.evals.policy import policy_from_doc
    from ci_tools.yaml.load import load_yaml_file

    evals = policy_from_doc(load_yaml_file(REPO / "inferencex-e2e" / "ci-policy.yaml"))
    plan = plan_sweep(decision, [entry], Masters(MASTERS, HARDWARE), policy,
                      screen=screen_for(MASTERS, recipes, HARDWARE, evals)).as_dict()
    rows = [r for rs in plan["buckets"].values() for r in rs] + plan["canaries"]
    # the 49 benchmark jobs (9 of them vLLM and TRT-LLM, 15 ATOM), the 7 single-node and the 3 multi-node
    # eval rows run, with the canaries; nothing is withheld
    assert plan["error"] is None and len(rows) == 59, (plan["error"], len(rows))
    assert plan["refused"] == []
    for i, row in enumerate(rows):
        path = tmp_path / f"row{i}.json"
        path.write_text(json.dumps(row))
        backend = "slurm" if "prefill" in row else "docker"
        res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--backend", backend, "--dry-run",
                                       "--root", str(REPO), "--out", str(tmp_path / f"out{i}")])
        assert res.exit_code == 0, (row.get("config-key"), row.get("exp-name"), res.output)
