"""`config validate` rules between a multinode master entry, its disaggregated recipe and the runner.

Pure: over loaded documents (master entry, recipe, runners.yaml hardware facts); findings are
located in the file that has to change. What is checked:
- the recipe is a disaggregated one, and its frontend is the router the master declares (name,
  version) of the kind its framework uses (dynamo-* -> dynamo, otherwise sglang-router);
- kv-transfer equals the master's kv-p2p-transfer, KV offload matches kv-offloading/backend;
- every master search-space entry has exactly one recipe point with the same prefill and decode
  worker groups (num-worker, tp, ep, dp-attn, pp, dcp-size, pcp-size) and the same concurrencies,
  and vice versa (decode num-worker 0 is the aggregated point);
- each worker fills whole nodes of the runner (nodes x gpus-per-node = tp x pp x pcp) or an equal
  share of one node (`nodes: 1`), and the point fits the runner's node count.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ci_tools.config.disagg import ROLES, GroupKey, describe, is_disagg, point_keys
from ci_tools.config.points import search_space_concs
from ci_tools.config.rules import search_spaces
from ci_tools.errors import Finding


def frontend_kind(framework: str) -> str:
    return "dynamo" if framework.startswith("dynamo-") else "sglang-router"


# the engine an InferenceX multi-node framework runs on every worker
ENGINE_OF_FRAMEWORK = {"dynamo-sglang": "sglang", "sglang-disagg": "sglang", "dynamo-vllm": "vllm", "vllm": "vllm",
                       "dynamo-trt": "trtllm"}


def _ss_value(entry: Mapping, ss: Mapping, name: str) -> Any:
    return ss.get(name) if ss.get(name) is not None else entry.get(name)


def master_points(entry: Mapping) -> Iterator[tuple[tuple, Mapping, tuple[GroupKey, GroupKey], list[int]]]:
    for path, ss, _kind in search_spaces(dict(entry)):
        if isinstance(ss.get("prefill"), dict) and isinstance(ss.get("decode"), dict):
            yield path, ss, (GroupKey.of(ss["prefill"]), GroupKey.of(ss["decode"])), search_space_concs(ss)


def disagg_agrees(e, rec, hardware: Mapping | None) -> list[Finding]:
    """Findings for master entry `e` (crossfile.Entry) served by recipe `rec` (crossfile.Recipe)."""
    data, entry = rec.data, e.data
    if not is_disagg(data):
        return [rec.doc.finding(("config-key",), f"master entry {e.key} is multinode, but this recipe is a single-node recipe",
                                "write a disaggregated recipe (mode: disaggregated, prefill/decode worker groups); "
                                "see docs/runner-operator.md, 'Disaggregated (multi-node) points'")]
    from ci_tools.config.disagg import recipe_problems
    from ci_tools.config.recipe import Recipe as RecipeDoc

    out: list[Finding] = list(recipe_problems(RecipeDoc(rec.path, data, rec.doc)))
    want_kind = frontend_kind(str(entry["framework"]))
    fe = data["frontend"]
    if fe["kind"] != want_kind:
        out.append(rec.doc.finding(("frontend", "kind"),
                                   f"frontend kind {fe['kind']!r} does not serve framework {entry['framework']!r} "
                                   f"of master entry {e.key} ({e.where('framework')})",
                                   f"use kind: {want_kind}"))
    engine = ENGINE_OF_FRAMEWORK.get(str(entry["framework"]))
    if engine and data["engine"] != engine:
        out.append(rec.doc.finding(("engine",), f"engine {data['engine']!r} does not run framework "
                                                f"{entry['framework']!r} of master entry {e.key} "
                                                f"({e.where('framework')})", f"use engine: {engine}"))
    ss_list = list(master_points(entry))
    routers = {(str((_ss_value(entry, ss, 'router') or {}).get('name')),
                str((_ss_value(entry, ss, 'router') or {}).get('version'))) for _, ss, _, _ in ss_list}
    if routers and (fe["name"], str(fe["version"])) not in routers:
        shown = ", ".join(f"{n} {v}" for n, v in sorted(routers))
        out.append(rec.doc.finding(("frontend",),
                                   f"frontend {fe['name']} {fe['version']} is not the router master entry {e.key} "
                                   f"declares ({shown}, {e.where('router') if 'router' in entry else e.where()})",
                                   "the router is part of the benchmarked point: make the recipe's frontend "
                                   "name/version and the master's router agree"))
    transfers = {str(_ss_value(entry, ss, "kv-p2p-transfer")) for _, ss, _, _ in ss_list}
    if transfers and data["kv-transfer"] not in transfers:
        out.append(rec.doc.finding(("kv-transfer",),
                                   f"kv-transfer {data['kv-transfer']!r} differs from master entry {e.key}'s "
                                   f"kv-p2p-transfer ({', '.join(sorted(transfers))})",
                                   "make them the same backend"))
    offload = data.get("kv-offload")
    offloads = {(ss.get("kv-offloading") or "none", (ss.get("kv-offload-backend") or {}).get("name"))
                for _, ss, _, _ in ss_list}
    wants = {o for o in offloads if o[0] != "none"}
    if wants and not offload:
        kinds = ", ".join(f"{k} ({b})" for k, b in sorted(wants))
        out.append(rec.doc.finding(("config-key",), f"master entry {e.key} benchmarks kv-offloading {kinds}, but the recipe has "
                                       "no `kv-offload`", "add kv-offload: {backend: hicache, medium: dram, ...}"))
    elif offload and not wants:
        out.append(rec.doc.finding(("kv-offload",), f"the recipe offloads KV, but master entry {e.key} declares "
                                                    "kv-offloading: none", "remove kv-offload, or declare it in the master"))
    elif offload and (offload["medium"], offload["backend"]) not in wants:
        out.append(rec.doc.finding(("kv-offload",), f"kv-offload {offload['medium']}/{offload['backend']} differs "
                                                    f"from the master's {sorted(wants)}", "make them agree"))

    gpn = nodes_max = None
    facts = (hardware or {}).get(entry["runner"]) if isinstance(hardware, Mapping) else None
    if isinstance(facts, Mapping):
        gpn, nodes_max = facts.get("gpus-per-node"), facts.get("nodes")

    points = {name: pt for name, pt in data["points"].items()}
    by_key: dict = {}
    for name, pt in points.items():
        key = point_keys(pt)
        if key in by_key:
            out.append(rec.doc.finding(("points", name), f"points '{by_key[key]}' and '{name}' have the same worker "
                                                         f"groups ({describe(key)})", "keep one of them"))
            continue
        by_key[key] = name
    matched = set()
    for path, ss, key, concs in ss_list:
        name = by_key.get(key)
        if name is None:
            out.append(e.doc.finding(e.at(*path), f"{e.key}: search-space entry ({describe(key)}) has no point in its "
                                                  f"recipe {rec.where('points')}",
                                     f"add a point with these prefill/decode groups and conc: {concs}"))
            continue
        matched.add(name)
        pt = points[name]
        if sorted(pt["conc"]) != sorted(concs):
            out.append(rec.doc.finding(("points", name, "conc"),
                                       f"point '{name}' lists conc {pt['conc']}, but master entry {e.key} runs "
                                       f"{concs} for it ({e.where(*path)})", f"set conc: {concs}"))
        if gpn:
            from ci_tools.config.disagg import nodes_per_worker

            total, shared = 0, 0
            for role in ROLES:
                g = pt[role]
                gpus = GroupKey.of(g).gpus_per_worker
                need = nodes_per_worker(gpus, gpn)
                if g["num-worker"] and need != g["nodes"]:
                    out.append(rec.doc.finding(("points", name, role, "nodes"),
                                               f"point '{name}' {role}: a worker of {gpus} GPUs on {g['nodes']} "
                                               f"node(s) of {gpn} GPUs (runner {entry['runner']}) neither fills its "
                                               "nodes nor is an equal share of one",
                                               f"set nodes: {need}" if need else
                                               f"a worker needs a multiple of {gpn} GPUs, or a divisor of it"))
                if gpus >= gpn:
                    total += g["num-worker"] * g["nodes"]
                else:
                    shared += g["num-worker"] * gpus
            total += -(-shared // gpn)
            if nodes_max and total > nodes_max:
                out.append(rec.doc.finding(("points", name),
                                           f"point '{name}' needs {total} nodes; runner {entry['runner']} has "
                                           f"{nodes_max}", "use fewer or smaller workers"))
    for name in points:
        if name not in matched and name in by_key.values():
            out.append(rec.doc.finding(("points", name), f"point '{name}' ({describe(point_keys(points[name]))}) is "
                                                         f"not in the search space of master entry {e.key}",
                                       "add it to the master, or remove the point; only master points run"))
    return out
