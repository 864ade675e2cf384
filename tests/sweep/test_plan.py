"""Plan assembly: changelog flags x labels, trimming, canaries, estimates, append-only
(spec inferencex-config-changelog-matrix.md §2.10, §3.4, §5 cases 96-110; inferencex-pr-policy.md §1.2-2.4)."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from ci_tools.errors import InputError
from ci_tools.sweep import buckets as bk
from ci_tools.sweep.appendonly import append_only_delta, validate_scope
from ci_tools.sweep.gate import GateEvent, decide, mode_for
from ci_tools.sweep.load import load_policy
from ci_tools.sweep.matrix import KeyedRow
from ci_tools.sweep.row import make_row
from ci_tools.sweep.plan import Masters, PlanEntry, changelog_rows, plan_sweep


REPO = Path(__file__).resolve().parents[2]
FFF = "full-sweep-fail-fast"
NC = "non-canary-full-sweep-enabled"
SEED = "dsv41flash-fp4-gb300-sglang-agentic-dspark"
B300 = "dsv41flash-fp4-b300-sglang"
DISAGG = "dsv41flash-fp4-gb300-dynamo-sglang-disagg"
AG_DISAGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg"


@pytest.fixture(scope="module")
def policy():
    return load_policy(REPO)


@pytest.fixture(scope="module")
def example():
    cfg = REPO / "inferencex-e2e" / "configs"
    entries = yaml.safe_load((cfg / "nvidia-master.yaml").read_text())
    hw = yaml.safe_load((cfg / "runners.yaml").read_text())["hardware"]
    return Masters(entries, hw)


def entry(keys, i=0, **flags):
    return PlanEntry(i, 10 + i, {"config-keys": list(keys), "description": ["x"], "pr-link": "l", **flags}, list(keys))


def typed_plan_for(policy, masters, entries, labels, **kw):
    d = decide(GateEvent("local", labels=tuple(labels)), policy, appends_entry=bool(entries))
    return plan_sweep(d, entries, masters, policy, **kw)


def plan_for(policy, masters, entries, labels, **kw):
    """The plan as `plan --format json` prints it (the contract tools read)."""
    return typed_plan_for(policy, masters, entries, labels, **kw).as_dict()


def test_seed_pr_seven_points_on_gb300(policy, example):
    p = plan_for(policy, example, [entry([SEED], scenario_type=None)], [FFF])
    bench = [pt for pt in p["points"] if not pt["eval"] and not pt["canary"]]
    assert [(pt["parallelism"], pt["conc"], pt["gpus"]) for pt in bench] == [
        ("TP4 EP4", 1, 4), ("TP4 EP1", 4, 4), ("TP4 EP1", 16, 4), ("TP2 EP1", 16, 2), ("TP2 EP1", 32, 2),
        ("DEP2", 64, 2), ("DEP2", 128, 2)]
    assert {pt["runner"] for pt in p["points"]} == {"cluster:gb300-nv"}
    canary = p["canaries"]
    assert len(canary) == 1 and canary[0]["conc"] == 1 and canary[0]["agentx-fast"] and canary[0]["duration"] == 1200
    # canary honesty: the 20-minute AgentX-fast canary is a smoke run, so TP4 c1 still gets its hour
    assert canary[0]["canary"] == bk.CANARY_SMOKE
    smoke = [pt for pt in p["points"] if pt["canary"]]
    assert [(pt["profile"], pt["canary-kind"], pt["gpu-hours"]) for pt in smoke] == [("agentx-fast", "smoke", 1.33)]
    assert [pt["gpu-hours"] for pt in bench] == [4.0, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0]
    assert {pt["profile"] for pt in bench} == {"agentx"}
    assert len(p["buckets"]["single-node-agentic"]) == 7
    assert all(p["fail-fast"].values()) and p["reuse"]["eligible"]
    assert p["totals"]["canary-gpu-hours"] == 1.33


def test_a_fixed_seq_canary_is_the_point_itself(policy, example):
    p = plan_for(policy, example, [entry([B300])], [FFF])
    (c,) = p["canaries"]
    assert c["canary"] == bk.CANARY_FULL and c["conc"] == 4 and "duration" not in c
    rows = p["buckets"][c["bucket"]]
    assert not any(r["conc"] == 4 and r["tp"] == 4 and r["isl"] == c["isl"] for r in rows)   # not measured twice
    (pt,) = [pt for pt in p["points"] if pt["canary"]]
    assert (pt["profile"], pt["canary-kind"]) == ("fixed-seq", "full-point")


def test_with_agentx_fast_everywhere_the_canary_is_the_point(policy, example):
    p = plan_for(policy, example, [entry([SEED])], [FFF, "agentx-fast"])
    (c,) = p["canaries"]
    assert c["canary"] == bk.CANARY_FULL
    assert len(p["buckets"]["single-node-agentic"]) == 6
    assert {pt["profile"] for pt in p["points"] if not pt["eval"]} == {"agentx-fast"}


def test_no_canary_label_keeps_every_point_in_its_bucket(policy, example):
    p = plan_for(policy, example, [entry([SEED])], [NC])
    assert p["canaries"] == [] and len(p["buckets"]["single-node-agentic"]) == 7
    assert not any(p["fail-fast"].values())


def test_sweep_enabled_trims_to_lowest_conc_per_config(policy, example):
    p = plan_for(policy, example, [entry([SEED])], ["sweep-enabled"])
    assert [r["conc"] for r in p["buckets"]["single-node-agentic"]] == [1, 4, 16, 64]
    assert not p["reuse"]["eligible"] and "not reusable" in p["reuse"]["reason"]


def test_agentx_fast_shortens_agentic_rows_and_blocks_reuse(policy, example):
    p = plan_for(policy, example, [entry([SEED])], [NC, "agentx-fast"])
    rows = p["buckets"]["single-node-agentic"]
    assert all(r["duration"] == 1200 and r["agentx-fast"] for r in rows)
    assert not p["reuse"]["eligible"] and "agentx-fast" in p["reuse"]["reason"]


def test_canary_per_hardware_family(policy, example):
    p = plan_for(policy, example, [entry([B300, DISAGG, AG_DISAGG, SEED])], [FFF])
    fams = {c["family"]: c for c in p["canaries"]}
    assert set(fams) == {"b300", "gb300", "cluster:gb300-nv"}
    assert fams["b300"]["conc"] == 4 and fams["b300"]["bucket"] == "single-node-1k1k"   # tie: 1k1k before 8k1k
    # multi-node canary: a copy at the lowest conc; the row keeps the rest
    assert fams["gb300"]["conc"] == [64]
    assert [r["conc"] for r in p["buckets"]["multi-node-8k1k"]] == [[128], [512]]
    # the agentic family's canary is the single-node TP4 c1 point, not the multi-node c32
    assert fams["cluster:gb300-nv"]["config-key"] == SEED
    assert len(p["buckets"]["multi-node-agentic"]) == 2


def test_multi_node_agentic_only_sweep_gets_a_canary(policy, example):
    p = plan_for(policy, example, [entry([AG_DISAGG])], [FFF])
    assert [(c["bucket"], c["conc"], c["duration"]) for c in p["canaries"]] == [("multi-node-agentic", [32], 1200)]
    # a smoke canary: the c32 row stays and is measured with the full profile too
    assert [r["conc"] for r in p["buckets"]["multi-node-agentic"]] == [[32], [64]]


def test_evals_only_family_canary_falls_back_to_an_eval_row(policy, example):
    p = plan_for(policy, example, [entry([B300])], [FFF, "evals-only"])
    assert not any(p["buckets"][b] for b in bk.BENCH_BUCKETS)
    assert len(p["canaries"]) == 1 and p["canaries"][0]["bucket"] == "evals"


def test_canary_selection_failure_fails_closed(policy):
    broken = {"runner": "r", "exp-name": "x", "conc": None, "tp": 1, "isl": 1024, "osl": 1024}
    with pytest.raises(bk.CanarySelectionError):
        bk.select_canaries({"single-node-1k1k": [R("k", broken)]}, fast_seconds=1200)
    with pytest.raises(bk.CanarySelectionError, match="runner"):
        bk.select_canaries({"single-node-1k1k": [R("k", {**broken, "conc": 1, "runner": ""})]}, fast_seconds=1)


def test_canary_failure_in_plan_is_an_error_not_a_sweep(policy, example, monkeypatch):
    def boom(*a, **k):
        raise bk.CanarySelectionError("no integer concurrency")
    monkeypatch.setattr(bk, "select_canaries", boom)
    p = plan_for(policy, example, [entry([SEED])], [FFF])
    assert not p["sweep"] and "fails closed" in p["error"] and p["points"] == []


def test_release_keeps_only_passed_families():
    m = {"single-node-8k1k": [{"runner": "a"}, {"runner": "b"}], "evals": [{"runner": "b"}]}
    assert bk.release(m, {"a"}) == {"single-node-8k1k": [{"runner": "a"}], "evals": []}
    assert bk.release(m, set()) == {"single-node-8k1k": [], "evals": []}


@pytest.mark.parametrize("row, n", [
    ({"tp": 4, "pp": 1, "pcp-size": 1, "dcp-size": 4}, 4),
    ({"tp": 4, "pp": 2, "pcp-size": 2}, 16),
    ({"prefill": {"num-worker": 2, "tp": 4, "pp": 1, "pcp-size": 1},
      "decode": {"num-worker": 1, "tp": 8, "pp": 1, "pcp-size": 1}}, 16),
    ({"prefill": {"num-worker": 2, "tp": 16}, "decode": {"num-worker": 0, "tp": 16}}, 32),
])
def test_gpus_per_point(row, n):
    assert make_row(row).gpus == n        # tp*pp*pcp-size per replica, summed over workers


# ---- changelog flags x labels (spec §3.4.1) --------------------------------------------------------

@pytest.mark.parametrize("labels, flags, bench, eval_all", [
    ([NC], {}, True, False),
    ([NC], {"all-evals": True}, False, True),
    ([NC], {"evals-only": True}, False, False),
    ([NC, "all-evals"], {}, True, True),
    ([NC, "all-evals"], {"evals-only": True}, False, True),
    ([NC, "evals-only"], {}, False, False),
    ([NC, "all-evals", "evals-only"], {}, False, True),
])
def test_flag_by_entry_matrix(policy, example, labels, flags, bench, eval_all):
    b, e = changelog_rows([entry([B300], **flags)], example, mode_for(labels, policy))
    assert bool(b) == bench
    # all seven 8k1k rows vs the default subset: TP4 group {16,32,64} -> 32, 64; DEP8 group {128,256} -> 256
    assert sorted(r.row["conc"] for r in e) == ([4, 8, 16, 32, 64, 128, 256] if eval_all else [32, 64, 256])
    assert all(r.row["eval-only"] for r in e)


@pytest.mark.parametrize("labels", [[NC, "all-evals"], [NC, "evals-only"]])
def test_append_only_with_eval_modifier_is_refused(policy, example, labels):
    with pytest.raises(InputError, match="append-only sweeps cannot use"):
        changelog_rows([entry([B300], **{"append-only": True})], example, mode_for(labels, policy), example)


def test_append_only_mixed_with_regular_entries_is_refused(policy, example):
    with pytest.raises(InputError, match="cannot share a sweep"):
        changelog_rows([entry([B300], 0, **{"append-only": True}), entry([SEED], 1)], example, mode_for([NC], policy))


def test_106_scenario_entries_in_sequence(policy, example):
    e1 = entry([AG_DISAGG], 0, **{"scenario-type": ["fixed-seq-len"]})
    e2 = entry([SEED], 1, **{"scenario-type": ["agentic-coding"]})
    b, e = changelog_rows([e1, e2], example, mode_for([NC], policy))
    assert {r.key for r in b} == {SEED}   # AG_DISAGG has no fixed-seq scenario


def test_108_all_evals_entry_sorted_first(policy, example):
    b, e = changelog_rows([entry([B300], 0), entry([B300], 1, **{"all-evals": True})], example, mode_for([NC], policy))
    assert len(b) == 5 + 7          # throughput from the regular entry, generated once
    assert len(e) == 7              # evals from the all-evals entry (all 8k1k rows), not repeated


def test_eval_min_prefill_ep(policy, example):
    b, e = changelog_rows([entry([DISAGG], **{"eval-min-prefill-ep": 4})], example, mode_for([NC], policy))
    assert e and all(r.row["prefill"]["ep"] >= 4 for r in e)
    b, e = changelog_rows([entry([DISAGG], **{"eval-min-prefill-ep": 5})], example, mode_for([NC], policy))
    assert e == []


def test_unknown_key_in_entry(policy, example):
    with pytest.raises(InputError, match="nope-key"):
        changelog_rows([entry(["nope-key"])], example, mode_for([NC], policy))


def test_unsupported_seq_len_is_refused(policy, example):
    m = copy.deepcopy(example.entries)
    m[B300]["scenarios"]["fixed-seq-len"][0]["isl"] = 2048
    p = plan_for(policy, Masters(m, example.hardware), [entry([B300])], [NC])
    assert not p["sweep"] and "2048_1024" in p["error"]


def test_too_many_jobs_for_one_matrix(policy, example):
    m = copy.deepcopy(example.entries)
    m[B300]["scenarios"]["fixed-seq-len"][1]["search-space"][0]["conc-list"] = list(range(1, 300))
    p = plan_for(policy, Masters(m, example.hardware), [entry([B300])], [NC])
    assert not p["sweep"] and "256 jobs" in p["error"]


def test_no_entries_no_sweep(policy, example):
    p = plan_for(policy, example, [], [FFF])
    assert not p["sweep"] and "appends no entry" in p["reason"]


def test_conflicting_labels_plan_carries_the_error(policy, example):
    d = decide(GateEvent("local", labels=(FFF, NC)), policy, appends_entry=True)
    p = plan_sweep(d, [entry([SEED])], example, policy).as_dict()
    assert p["error"] and FFF in p["error"] and NC in p["error"] and not p["points"]


# ---- corpus changelog figures (spec §2.10, §6) ----------------------------------------------------

@pytest.fixture(scope="module")
def corpus_masters():
    from tests.conftest import shared_dir
    base = shared_dir() / "corpus" / "inferencex" / "configs"
    entries = {}
    for name in ("amd-master.yaml", "nvidia-master.yaml"):
        entries.update(yaml.load((base / name).read_text(), Loader=yaml.CSafeLoader))
    return Masters(entries, yaml.load((base / "runners.yaml").read_text(), Loader=yaml.CSafeLoader)["hardware"])


def _counts(bench, evals):
    out = {}
    for r in bench:
        out[bk.bench_bucket(r.row)] = out.get(bk.bench_bucket(r.row), 0) + 1
    for r in evals:
        out[bk.eval_bucket(r.row)] = out.get(bk.eval_bucket(r.row), 0) + 1
    return out


def test_corpus_star_entry(policy, corpus_masters):
    e = entry(list(corpus_masters.entries))
    b, ev = changelog_rows([e], corpus_masters, mode_for([NC], policy))
    assert _counts(b, ev) == {"single-node-8k1k": 690, "single-node-agentic": 482, "multi-node-8k1k": 383,
                              "multi-node-1k1k": 1, "multi-node-agentic": 264, "evals": 202, "agentic-evals": 33,
                              "multi-node-evals": 317, "multi-node-agentic-evals": 93}
    trimmed = bk.trim(b)
    c = _counts(trimmed, [])
    assert (c["single-node-8k1k"], c["single-node-agentic"], c["multi-node-8k1k"]) == (151, 84, 383)


def test_corpus_two_entry_example(policy, corpus_masters):
    keys = ["dsv4-fp4-b200-sglang", "qwen3.5-fp4-gb300-dynamo-sglang"]
    b, ev = changelog_rows([entry(keys)], corpus_masters, mode_for([NC], policy))
    c = _counts(b, ev)
    assert (c["single-node-8k1k"], c["multi-node-8k1k"], c["evals"], c["multi-node-evals"]) == (11, 4, 3, 4)
    evals = [(r.row["tp"], r.row["ep"], r.row["dp-attn"], r.row["conc"]) for r in ev if "tp" in r.row]
    assert sorted(evals) == [(8, 1, False, 32), (8, 8, True, 256), (8, 8, True, 1024)]
    assert sorted(r.row["eval-conc"] for r in ev if "prefill" in r.row) == [256, 2048, 5120, 5120]
    t = bk.trim(b)
    assert sorted(r.row["conc"] for r in t if "tp" in r.row) == [1, 64]
    assert sorted(r.row["conc"] for r in t if "prefill" in r.row) == [[1], [2048], [5120], [5120]]
    b, ev = changelog_rows([entry(keys)], corpus_masters, mode_for([NC, "all-evals"], policy))
    mn_evals = [r.row for r in ev if "prefill" in r.row]
    assert len([r for r in ev if "tp" in r.row]) == 11
    assert all(r["eval-all-concs"] and "eval-conc" not in r for r in mn_evals)
    b, ev = changelog_rows([entry(keys)], corpus_masters, mode_for([NC, "evals-only"], policy))
    assert b == []


def test_corpus_recipe_fingerprint_example():
    row = {"image": "vllm/vllm-openai:v0.16.0", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4",
           "precision": "fp4", "framework": "vllm", "spec-decoding": "mtp", "runner": "cluster:b300-nv", "isl": 8192,
           "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": 8, "dp-attn": True, "conc": 4,
           "max-model-len": 10240, "exp-name": "dsv4_tp8_conc4", "disagg": False, "run-eval": False,
           "eval-only": False}
    assert bk.recipe_fingerprint(row) == "7ea5ae247680852909b26ecaf590dad3cdf485a5603eccd8f5b59b66b60b8bb6"
    assert bk.recipe_fingerprint({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    assert bk.recipe_fingerprint({**row, "conc": 16}) == bk.recipe_fingerprint(row)


def R(key, data):
    return KeyedRow(key, make_row(data))


# ---- trimming (spec §5 case 96) ----------------------------------------------------------------------

def test_96_trim():
    def r(conc, backend):
        return R("k", {"tp": 8, "conc": conc, "exp-name": f"x{conc}", "kv-offload-backend": {"name": backend}})
    out = bk.trim([r(8, "a"), r(2, "a"), r(4, "b")])
    assert [x.row["conc"] for x in out] == [2, 4]
    mn = R("k", {"prefill": {"tp": 1}, "conc": [8, 4, 16]})
    assert bk.trim([mn])[0].row["conc"] == [4]


def test_trim_ties_keep_the_first():
    a = R("a", {"tp": 8, "conc": 4, "exp-name": "one"})
    b = R("b", {"tp": 8, "conc": 4, "exp-name": "two"})
    assert bk.trim([a, b]) == [a]


# ---- append-only (spec §3.4.2-3.4.3, cases 98-103) ----------------------------------------------------

def sn_row(conc, image="img", tp=8):
    return R("k", {"image": image, "model": "m", "runner": "r", "tp": tp, "isl": 8192, "osl": 1024,
                     "conc": conc, "exp-name": f"e{conc}"})


def mn_row(concs):
    return R("k", {"image": "img", "model": "m", "runner": "r", "isl": 8192, "osl": 1024,
                     "prefill": {"tp": 4}, "decode": {"tp": 8}, "conc": concs, "exp-name": "e"})


@pytest.mark.parametrize("base, head, expected", [
    ([sn_row(4), sn_row(8)], [sn_row(4), sn_row(8), sn_row(12)], [12]),
    ([mn_row([8, 16])], [mn_row([8, 16, 24])], [[24]]),
    ([mn_row([8, 16])], [mn_row([8, 16, 24, 24])], [[24]]),
    ([sn_row(4)], [sn_row(4), sn_row(8), sn_row(8)], [8]),
    ([sn_row(12)], [sn_row(12), sn_row(12, tp=4), sn_row(16, tp=4)], [12, 16]),
])
def test_98_append_only_delta(base, head, expected):
    assert [r.row["conc"] for r in append_only_delta(base, head)] == expected


@pytest.mark.parametrize("base, head, message", [
    ([sn_row(4)], [sn_row(4, image="new"), sn_row(8, image="new")], "remove or modify"),
    ([sn_row(4)], [sn_row(4), sn_row(8, image="other", tp=2)], "unchanged non-null image"),
    ([sn_row(4), sn_row(8)], [sn_row(8)], "remove existing concurrency points: \\[4\\]"),
    ([], [sn_row(4)], "existing curve in the base revision"),
    ([sn_row(4)], [sn_row(4)], "did not add any generated points"),
    ([sn_row("x")], [sn_row(4)], "invalid concurrency value: 'x'"),
])
def test_99_100_append_only_refusals(base, head, message):
    with pytest.raises(InputError, match=message):
        append_only_delta(base, head)


def _cfg(**over):
    c = {"image": "i", "router": {"name": "a"}, "scenarios": {"fixed-seq-len": [{"isl": 1}],
                                                              "agentic-coding": [{"x": 1}]}}
    c.update(over)
    return c


@pytest.mark.parametrize("head, message", [
    ({"k": _cfg(scenarios={"fixed-seq-len": [{"isl": 2}], "agentic-coding": [{"x": 1}]})}, None),
    ({"k": _cfg(router={"name": "b"})}, "config-wide fields"),
    ({"k": _cfg(scenarios={"fixed-seq-len": [{"isl": 1}], "agentic-coding": [{"x": 2}]})}, "outside its changelog scope"),
    ({"k": _cfg(scenarios={"fixed-seq-len": [{"isl": 1}]})}, "added or removed a scenario"),
    ({"k": _cfg(), "other": {"a": 2}}, "not selected by its changelog entry"),
])
def test_102_validate_scope(head, message):
    base = {"k": _cfg(), "other": {"a": 1}}
    head.setdefault("other", {"a": 1})
    if message is None:
        validate_scope(base, head, {"k": ("fixed-seq-len",)})
    else:
        with pytest.raises(InputError, match=message):
            validate_scope(base, head, {"k": ("fixed-seq-len",)})


def test_append_only_plan_runs_only_new_points_and_no_evals(policy, example):
    base = copy.deepcopy(example.entries)
    base[SEED]["scenarios"]["agentic-coding"][0]["search-space"][2]["conc-list"] = [16]
    p = plan_for(policy, example, [entry([SEED], **{"append-only": True, "scenario-type": ["agentic-coding"]})],
                 [NC], base=Masters(base, example.hardware))
    assert [(pt["parallelism"], pt["conc"]) for pt in p["points"]] == [("TP2 EP1", 32)]


def test_after_canary_releases_only_passed_families(policy, example):
    from ci_tools.sweep.plan import after_canary
    p = typed_plan_for(policy, example, [entry([B300, DISAGG, SEED])], [FFF])
    out = after_canary(p, {"b300", "cluster:gb300-nv"})
    assert out.canaries == () and out.sweep
    assert {r["runner"] for rows in out.buckets.values() for r in rows} == {"b300", "cluster:gb300-nv"}
    assert out.buckets["multi-node-8k1k"] == [] and "gb300" in out.reason and "nothing else" in out.reason
    assert out.totals.jobs == len(out.jobs) and not any(j.canary for j in out.jobs)
    assert out.totals.canary_gpu_hours == 0.0 and out.totals.gpus == p.totals.gpus
    assert out.as_dict()["totals"]["jobs"] == len(out.as_dict()["points"])
    none = after_canary(p, set())
    assert not none.sweep and not any(none.buckets.values())


def test_the_typed_plan_is_the_json_plan(policy, example):
    """`as_dict()` is what `--format json` prints: every job, total and reason comes from the typed fields."""
    p = typed_plan_for(policy, example, [entry([B300, SEED])], [FFF])
    d = p.as_dict()
    assert list(d) == ["sweep", "reason", "error", "mode", "gate", "entries", "canaries", "buckets", "fail-fast",
                       "points", "refused", "totals", "reuse", "concurrency-group", "findings"]
    assert [j.as_dict() for j in p.jobs] == d["points"] and d["totals"]["jobs"] == len(p.jobs)
    assert d["mode"] == p.gate.mode.as_dict() and d["concurrency-group"] == p.gate.concurrency_group
    assert p.totals.canaries == sum(j.canary for j in p.jobs) == len(p.canaries)
    assert json.loads(json.dumps(d)) == d


def test_output_size_is_counted_the_way_github_counts_it(policy, example):
    """#16.7: GitHub approximates the 1 MB per-job output limit in UTF-16. A plan whose outputs are
    well under 1,000,000 UTF-8 bytes but over it in UTF-16 must be refused before GitHub truncates it."""
    import dataclasses

    from ci_tools.github.actions import MAX_OUTPUTS_BYTES, output_size, outputs_text
    from ci_tools.sweep.render import OUTPUTS_HINT, OUTPUTS_WHAT, plan_outputs

    p = typed_plan_for(policy, example, [entry([SEED], scenario_type=None)], [FFF])
    rows = p.buckets["single-node-agentic"]
    row_bytes = len(json.dumps(rows[0], separators=(",", ":")).encode())
    n = int(0.7 * MAX_OUTPUTS_BYTES / row_bytes)           # ~0.7 MB of UTF-8: over the limit in UTF-16
    big = dataclasses.replace(p, buckets={**p.buckets, "single-node-agentic": [rows[0]] * n})
    text = "".join(f"{k}={v}\n" for k, v in plan_outputs(big).items())
    assert len(text.encode()) < MAX_OUTPUTS_BYTES < output_size(text)
    with pytest.raises(InputError, match="UTF-16") as refused:
        outputs_text(plan_outputs(big), what=OUTPUTS_WHAT, hint=OUTPUTS_HINT)
    assert refused.value.message.startswith("the plan's GitHub outputs are ") and "sweep-enabled" in refused.value.message
    small = dataclasses.replace(p, buckets={**p.buckets, "single-node-agentic": [rows[0]] * (n // 3)})
    assert outputs_text(plan_outputs(small), what=OUTPUTS_WHAT, hint=OUTPUTS_HINT)


# ---- servability: rows no runner can serve are refused before any GPU is booked ------------------

def _screen(masters: Masters):
    from ci_tools.config.load import load_recipe
    from ci_tools.runner.servable import screen_for

    from ci_tools.evals.policy import policy_from_doc
    from ci_tools.yaml.load import load_yaml_file

    recipes = {e["recipe"]: load_recipe(REPO / e["recipe"], e["recipe"]) for e in masters.entries.values()
               if e.get("recipe")}
    evals = policy_from_doc(load_yaml_file(REPO / "inferencex-e2e" / "ci-policy.yaml"))
    return screen_for(masters.entries, recipes, masters.hardware, evals)


def test_all_four_configs_plan_only_servable_rows(policy, example):
    keys = [B300, DISAGG, AG_DISAGG, SEED]
    p = plan_for(policy, example, [entry(keys)], [FFF], screen=_screen(example))
    assert p["sweep"] and p["error"] is None
    # eval rows run the eval harness, single-node (issue 13) and multi-node (issue 22): nothing is withheld
    assert p["refused"] == []
    assert p["buckets"]["evals"] or p["buckets"]["agentic-evals"]
    assert p["buckets"]["multi-node-evals"] or p["buckets"]["multi-node-agentic-evals"]


def test_an_entry_without_recipe_fails_the_plan_naming_it_and_the_fix(policy, example):
    masters = Masters({**example.entries, B300: {k: v for k, v in example.entries[B300].items() if k != "recipe"}},
                      example.hardware)
    p = plan_for(policy, masters, [entry([B300, SEED])], [FFF], screen=_screen(masters))
    assert not p["sweep"] and p["points"] == [] and all(not rows for rows in p["buckets"].values())
    assert p["error"].startswith("15 planned row(s) cannot run, so nothing is booked: dsv41flash-fp4-b300-sglang (")
    assert "has no `recipe:`" in p["error"] and "Fix: write a recipe" in p["error"]
    assert {r["rule"] for r in p["refused"] if not r["pending"]} == {"no-recipe"}


def test_an_evals_only_sweep_of_the_seed_runs_its_eval_row(policy, example):
    p = plan_for(policy, example, [entry([SEED])], [FFF, "evals-only"], screen=_screen(example))
    assert p["sweep"] and p["error"] is None and p["refused"] == []
    # the only row is the eval point, and with a canary label it is the family's canary
    (row,) = [r for rows in p["buckets"].values() for r in rows] + p["canaries"]
    assert row["conc"] == 128 and (row.get("run-eval") or row.get("eval-only"))
