"""How much of InferenceX's fleet the runner serves: every row of its masters (../shared/corpus/inferencex),
given a recipe with exactly its point, judged by `ci_tools.runner.servable` (issue 22).

For each benchmark and eval row the matrix expands from InferenceX's masters, a recipe is written from
the row alone: the engine its framework runs, its image, its model, and one point with the row's
topology (single-node: tp/ep/dp-attn/conc, pp/dcp/pcp, router, DRAM KV offload; multi-node: the
prefill and decode worker groups, the concurrency list, the frontend its framework uses with the
router the row declares, its KV transfer and offload). The recipe must be valid under ci-tools'
recipe schemas (else the refusal is the schema's), then `servable.refusals` decides, as `plan` does.

Two things the row cannot say are filled in, each the same for every row so that they decide nothing:
the image is pinned with a digest derived from its name (InferenceX pins none), and runner labels
that InferenceX's runners.yaml gives no `gpus-per-node` get their family's (4 on GB200/GB300, else 8).

Run as a script to print the table by reason: `python tests/runner/inferencex_coverage.py`.
"""

from __future__ import annotations

import collections
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_tools.config import schemas
from ci_tools.config.disagg import GroupKey
from ci_tools.config.load import read_masters, read_runners
from ci_tools.config.recipe import recipe_from_data
from ci_tools.evals.policy import policy_from_doc
from ci_tools.runner.servable import Context, refusals
from ci_tools.sweep.matrix import Filters, expand, select_evals
from ci_tools.yaml.load import load_yaml_file

REPO = Path(__file__).resolve().parents[2]

# framework -> (engine, frontend kind for multi-node rows)
ENGINE_OF = {"sglang": "sglang", "vllm": "vllm", "trt": "trtllm", "atom": "atom",
             "dynamo-sglang": "sglang", "dynamo-vllm": "vllm", "dynamo-trt": "trtllm", "sglang-disagg": "sglang",
             "llmd-vllm": "vllm", "atom-disagg": "atom", "tilert": "tilert"}
FRONTEND_OF = {"dynamo-sglang": "dynamo", "dynamo-vllm": "dynamo", "dynamo-trt": "dynamo",
               "sglang-disagg": "sglang-router", "vllm": "sglang-router", "llmd-vllm": "llm-d",
               "atom-disagg": "atomesh", "tilert": "tilert-pd-router"}
DEFAULT_ROUTER = {"dynamo": ("dynamo-router", "1.3.0"), "sglang-router": ("sglang-router", "0.3.2")}


def family_gpus_per_node(runner: str) -> int:
    return 4 if re.match(r"(cluster:)?gb[23]00", runner) else 8


def pinned(image: str) -> str:
    return image if "@sha256:" in image else f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _topology_extras(src: dict) -> dict:
    return {k: int(src[k]) for k in ("pp", "dcp-size", "pcp-size") if int(src.get(k, 1) or 1) != 1}


def _offload(row: dict) -> dict | None:
    if row.get("kv-offloading") in (None, "none"):
        return None
    backend = (row.get("kv-offload-backend") or {}).get("name")
    return {"backend": backend, "medium": row["kv-offloading"]}


def recipe_for(key: str, row: dict, gpn: int) -> dict:
    """A recipe with exactly the row's point (plain data, as a contributor would write it)."""
    framework = str(row.get("framework"))
    head = {"recipe-version": 1, "config-key": key, "engine": ENGINE_OF.get(framework, framework),
            "image": row["image"], "model": row["model"]}
    offload = _offload(row)
    router = row.get("router") if isinstance(row.get("router"), dict) else None
    if "prefill" not in row:
        point: dict[str, Any] = {"tp": row["tp"], "ep": row.get("ep", 1), "dp-attn": bool(row.get("dp-attn")),
                                 "conc": row["conc"], **_topology_extras(row)}
        if router:
            point["router"] = {"name": router["name"], "version": str(router["version"])}
        out = {**head, "serve": {}, "points": {"p": point}}
        if offload:
            out["kv-offload"] = offload
        return out
    kind = FRONTEND_OF.get(framework, framework)
    name, version = (router["name"], str(router["version"])) if router else DEFAULT_ROUTER.get(kind, (kind, "0"))

    def group(w: dict) -> dict:
        return {"num-worker": w.get("num-worker", 1), "tp": w["tp"], "ep": w.get("ep", 1),
                "dp-attn": bool(w.get("dp-attn")), "nodes": max(1, GroupKey.of(w).gpus_per_worker // gpn),
                **_topology_extras(w)}

    concs = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
    out = {**head, "mode": "disaggregated", "kv-transfer": row.get("kv-p2p-transfer") or "nixl",
           "frontend": {"kind": kind, "name": name, "version": version},
           "points": {"p": {"prefill": group(row["prefill"]), "decode": group(row["decode"]), "conc": concs}}}
    if offload:
        out["kv-offload"] = offload
    return out


@dataclass
class Verdict:
    key: str
    framework: str
    kind: str              # throughput | eval
    accepted: bool
    reason: str            # "" when accepted: the refusal's rule and the first words of its message
    message: str


def _reason(rule: str, message: str) -> str:
    """A refusal grouped by what it says, not by its row's numbers or file names."""
    text = re.sub(r"recipes/\S+\.yaml( point \S+)?: ", "", message)
    if rule != "schema":
        text = re.sub(r"'[^']*'|\"[^\"]*\"", "'X'", text)
    text = re.sub(r"\b[0-9a-f]{40}\b|\b\d+(\.\d+)*\b", "N", text)
    return f"{rule}: {text[:120]}"


def rows(shared: Path) -> list[tuple[str, str, dict]]:
    cfg = shared / "corpus" / "inferencex" / "configs"
    masters = read_masters([cfg / "nvidia-master.yaml", cfg / "amd-master.yaml"]).entries
    hardware = (read_runners(cfg / "runners.yaml").data or {}).get("hardware") or {}
    bench = expand(masters, hardware, Filters())
    evals = select_evals(expand(masters, hardware, Filters()), all_evals=False, evals_only=True)
    return ([("throughput", r.key, r.row.as_dict()) for r in bench]
            + [("eval", r.key, r.row.as_dict()) for r in evals]), hardware


def judge(shared: Path) -> list[Verdict]:
    evals = policy_from_doc(load_yaml_file(REPO / "inferencex-e2e/ci-policy.yaml", "inferencex-e2e/ci-policy.yaml"))
    found, hardware = rows(shared)
    out = []
    for kind, key, data in found:
        row = {**data, "config-key": key, "image": pinned(str(data["image"]))}
        runner = str(row.get("runner"))
        gpn = int((hardware.get(runner) or {}).get("gpus-per-node") or family_gpus_per_node(runner))
        data = recipe_for(key, row, gpn)
        schema = "disagg-recipe" if data.get("mode") == "disaggregated" else "recipe"
        if not schemas.is_valid(schema, None, data):
            err = min(schemas.validator(schema).iter_errors(data), key=lambda e: len(e.absolute_path), default=None)
            msg = f"{schemas.pathstr(err.absolute_path)}: {err.message}" if err else "invalid"
            out.append(Verdict(key, str(row.get('framework')), kind, False, _reason("schema", msg), msg))
            continue
        recipe = recipe_from_data(data, f"recipes/{key}.yaml")
        got = refusals(row, Context({"recipe": recipe.file}, recipe, None, gpn, evals))
        if got:
            out.append(Verdict(key, str(row.get('framework')), kind, False, _reason(got[0].rule, got[0].message), got[0].message))
        else:
            out.append(Verdict(key, str(row.get('framework')), kind, True, "", ""))
    return out


def table(verdicts: list[Verdict]) -> str:
    lines = []
    for kind in ("throughput", "eval"):
        mine = [v for v in verdicts if v.kind == kind]
        ok = sum(v.accepted for v in mine)
        lines.append(f"{kind}: {ok} of {len(mine)} accepted ({100 * ok / max(1, len(mine)):.0f} %)")
        for reason, n in collections.Counter(v.reason for v in mine if not v.accepted).most_common():
            lines.append(f"  {n:5d}  {reason}")
    return "\n".join(lines)


if __name__ == "__main__":
    import os
    import sys

    here = Path(os.environ.get("CI_TOOLS_SHARED", REPO.parent / "shared"))
    print(table(judge(Path(sys.argv[1]) if len(sys.argv) > 1 else here)))
