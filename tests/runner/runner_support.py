"""Helpers shared by the runner tests: seed rows, the AIPerf executable (fixtures in conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ci_tools.config.load import default_master_paths, read_masters

REPO = Path(__file__).resolve().parents[2]
SEED_KEY = "dsv41flash-fp4-gb300-sglang-agentic-dspark"


def seed_rows() -> list[tuple[str, dict]]:
    """One InferenceX-shaped agentic single-node row per point of the seed master entry."""
    entry = read_masters(default_master_paths(REPO), REPO).entries[SEED_KEY]
    rows = []
    for ss in entry["scenarios"]["agentic-coding"][0]["search-space"]:
        for conc in ss["conc-list"]:
            dpa = bool(ss.get("dp-attn", False))
            name = f"{'dep' if dpa else 'tp'}{ss['tp']}-c{conc}"
            row = {"image": entry["image"], "model": entry["model"], "model-prefix": entry["model-prefix"],
                   "precision": entry["precision"], "framework": entry["framework"], "runner": entry["runner"],
                   "tp": ss["tp"], "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": ss["ep"], "dp-attn": dpa,
                   "spec-decoding": ss["spec-decoding"], "conc": conc, "kv-offloading": ss["kv-offloading"],
                   "total-cpu-dram-gb": 0, "duration": 3600,
                   "exp-name": f"{entry['model-prefix']}_tp{ss['tp']}_conc{conc}_kvnone_spec-mtp",
                   "scenario-type": "agentic-coding", "run-eval": False, "config-key": SEED_KEY}
            if "router" in ss:
                row["router"] = ss["router"]
            rows.append((name, row))
    return rows


def aiperf_bin() -> str:
    env = os.environ.get("CI_TOOLS_AIPERF")
    if env:
        return env
    local = REPO / ".venv-aiperf" / "bin" / "aiperf"
    if local.exists():
        return str(local)
    pytest.fail("AIPerf 0.13 is missing: run `python3 dev.py test` (it creates .venv-aiperf) "
                "or set CI_TOOLS_AIPERF to an aiperf executable")




def lm_eval_bin() -> str:
    env = os.environ.get("CI_TOOLS_LMEVAL")
    if env:
        return env
    local = REPO / ".venv-lmeval" / "bin" / "lm_eval"
    if local.exists():
        return str(local)
    pytest.fail("lm-eval 0.4 is missing: run `python3 dev.py test` (it creates .venv-lmeval) "
                "or set CI_TOOLS_LMEVAL to an lm_eval executable")


def multinode_rows() -> list[tuple[str, dict]]:
    """Every multi-node row the example repository plans (matrix expansion, as `plan` emits them)."""
    from ci_tools import names
    from ci_tools.config.load import read_runners
    from ci_tools.policy.matrix import Filters, expand, is_multinode

    entries = read_masters(default_master_paths(REPO), REPO).entries
    hardware = (read_runners(REPO / names.RUNNERS, REPO).data or {}).get("hardware") or {}
    out = []
    for r in expand(entries, hardware, Filters()):
        if not is_multinode(r.data) or r.data.get("run-eval"):
            continue
        p, d = r.data["prefill"], r.data["decode"]
        concs = "x".join(str(c) for c in r.data["conc"])
        scen = "agentic" if r.data.get("scenario-type") == "agentic-coding" else f"{r.data['isl']}-{r.data['osl']}"
        name = f"{scen}-{p['num-worker']}p{d['num-worker']}d-tp{p['tp']}-tp{d['tp']}-c{concs}"
        out.append((name, {**r.data, "config-key": r.key}))
    return out
