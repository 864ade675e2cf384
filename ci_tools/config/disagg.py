"""Disaggregated recipes: one multi-node point as prefill and decode worker groups behind a frontend.

A disaggregated recipe (`mode: disaggregated`) has the same identity fields as a single-node recipe
(config-key, engine, image, model) plus:

  kv-transfer   the KV transfer backend between prefill and decode (the master's kv-p2p-transfer)
  engine        what every worker runs: sglang, vllm or trtllm (the engine plug-in renders each worker)
  frontend      what the client talks to: `kind: dynamo` (dynamo.frontend, workers run dynamo.<engine>)
                or `kind: sglang-router` (sglang_router: PD mode, or plain routing over aggregated
                workers), with the name/version the master declares as its `router`
  serve         env/args both sides start from; `prefill` and `decode` add per-side env/args
  kv-offload    optional host-memory KV offload (DRAM) for the agentic entry
  points        one per master search-space entry: the prefill and decode worker groups (num-worker,
                tp, ep, dp-attn, pp, dcp-size, pcp-size, nodes per worker) and the concurrencies the
                master lists for them. `decode: {num-worker: 0}` is InferenceX's aggregated multi-node
                point: the prefill side's workers serve whole requests, with no KV transfer.
                A worker needs tp x pp x pcp GPUs: whole nodes (`nodes` of them), or a share of one
                node (`nodes: 1`, several such workers packed on a node).

Resolution is pure: `resolve_disagg(recipe, prefill, decode)` finds the point whose worker groups
equal the row's and merges serve -> side -> point-side env and args (same merge rules as
single-node recipes: `false`/`null` drops, `true` is a bare flag).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ci_tools.config.recipe import SIMULATED_ACCEPTANCE_PREFIX, TOPOLOGY_ARGS, Recipe, merge_args, merge_env
from ci_tools.errors import Finding, InputError

MODE = "disaggregated"
ROLES = ("prefill", "decode")
FRONTEND_KINDS = ("dynamo", "sglang-router")
# Arguments the runner renders from the point, the placement and kv-transfer: never in `args`.
PLACEMENT_ARGS = TOPOLOGY_ARGS + (
    "host", "port", "model-path", "served-model-name", "nnodes", "node-rank", "dist-init-addr",
    "disaggregation-mode", "disaggregation-transfer-backend", "disaggregation-bootstrap-port",
    "model", "master-addr", "master-port", "headless", "kv-transfer-config", "pp-size", "dcp-size", "attn-cp-size",
    "pipeline-parallel-size", "decode-context-parallel-size", "prefill-context-parallel-size",
    "tensor-parallel-size", "expert-parallel-size", "enable-attention-dp", "extra-engine-args")


def is_disagg(data: object) -> bool:
    return isinstance(data, dict) and data.get("mode") == MODE


@dataclass(frozen=True)
class GroupKey:
    """The shape of one side: how many workers, and each worker's tp/ep/dp-attn."""

    workers: int
    tp: int
    ep: int
    dp_attn: bool
    pp: int = 1
    dcp: int = 1
    pcp: int = 1

    @classmethod
    def of(cls, w: Mapping) -> "GroupKey":
        return cls(int(w.get("num-worker", 1)), int(w.get("tp", 1)), int(w.get("ep", 1)),
                   bool(w.get("dp-attn", False)), int(w.get("pp", 1) or 1), int(w.get("dcp-size", 1) or 1),
                   int(w.get("pcp-size", 1) or 1))

    @property
    def gpus_per_worker(self) -> int:
        """InferenceX's GPU count of one worker: tp x pp x pcp (dcp splits the tp ranks). With
        attention DP and ep > tp (vLLM's DEP written `tp: 1, ep: 8`) the experts span ep / tp
        data-parallel replicas of tp ranks: ep x pp x pcp."""
        ranks = self.ep if self.dp_attn and self.ep > self.tp and self.ep % self.tp == 0 else self.tp
        return ranks * self.pp * self.pcp

    def describe(self) -> str:
        return (f"{self.workers} worker(s) x tp{self.tp} ep{self.ep}"
                + "".join(f" {n}{v}" for n, v in (("pp", self.pp), ("dcp", self.dcp), ("pcp", self.pcp)) if v > 1)
                + (" dp-attn" if self.dp_attn else ""))


@dataclass
class Group:
    """One resolved side (prefill or decode)."""

    role: str
    key: GroupKey
    nodes_per_worker: int
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def gpus_per_worker(self) -> int:
        return self.key.gpus_per_worker

    @property
    def gpus(self) -> int:
        return self.key.workers * self.key.gpus_per_worker

    @property
    def nodes(self) -> int:
        return self.key.workers * self.nodes_per_worker

    def as_dict(self) -> dict:
        return {"num-worker": self.key.workers, "tp": self.key.tp, "ep": self.key.ep,
                "dp-attn": self.key.dp_attn, "pp": self.key.pp, "dcp-size": self.key.dcp,
                "pcp-size": self.key.pcp, "nodes-per-worker": self.nodes_per_worker,
                "gpus": self.gpus, "env": dict(self.env), "args": dict(self.args)}


@dataclass
class DisaggPoint:
    recipe_file: str
    name: str
    engine: str
    image: str
    model: str
    kv_transfer: str
    frontend: dict
    prefill: Group
    decode: Group
    concs: list[int]
    kv_offload: dict | None = None
    synthetic_acceptance: float | None = None
    engine_versions: tuple[str, ...] = ()

    @property
    def groups(self) -> tuple[Group, Group]:
        return (self.prefill, self.decode)

    @property
    def aggregated(self) -> bool:
        """InferenceX's aggregated multi-node point: decode num-worker 0, the prefill side serves."""
        return self.decode.key.workers == 0

    @property
    def gpus(self) -> int:
        """GPUs over all workers, prefill and decode (the tok/s/GPU denominator)."""
        return self.prefill.gpus + self.decode.gpus

    @property
    def nodes(self) -> int:
        return self.prefill.nodes + self.decode.nodes

    def as_dict(self) -> dict:
        return {"recipe": self.recipe_file, "point": self.name, "engine": self.engine, "image": self.image,
                "model": self.model, "kv-transfer": self.kv_transfer, "frontend": dict(self.frontend),
                "prefill": self.prefill.as_dict(), "decode": self.decode.as_dict(), "conc": list(self.concs),
                "kv-offload": self.kv_offload, "synthetic-acceptance": self.synthetic_acceptance,
                "engine-versions": list(self.engine_versions),
                "gpus": self.gpus, "nodes": self.nodes}


def nodes_per_worker(gpus: int, gpus_per_node: int) -> int | None:
    """Nodes one worker of `gpus` GPUs occupies: whole nodes, or 1 when it is a share of one node
    (several such workers are packed on it); None when neither fits exactly."""
    if gpus % gpus_per_node == 0:
        return gpus // gpus_per_node
    if gpus < gpus_per_node and gpus_per_node % gpus == 0:
        return 1
    return None


def fits(gpus: int, nodes: int, gpus_per_node: int) -> bool:
    return nodes_per_worker(gpus, gpus_per_node) == nodes


def points(recipe: Recipe) -> dict[str, dict]:
    pts = recipe.data.get("points") or {}
    return {k: v for k, v in pts.items() if isinstance(v, dict)} if isinstance(pts, dict) else {}


def point_keys(pt: Mapping) -> tuple[GroupKey, GroupKey]:
    return GroupKey.of(pt.get("prefill") or {}), GroupKey.of(pt.get("decode") or {})


def describe(keys: tuple[GroupKey, GroupKey]) -> str:
    return f"prefill {keys[0].describe()}, decode {keys[1].describe()}"


def recipe_problems(recipe: Recipe) -> list[Finding]:
    """What makes any point of the recipe wrong whatever the master says (config validate, resolve)."""
    out = []
    for i, name in enumerate(points(recipe)):
        out += _placement_problems(recipe, name, shared=i == 0)
    return out


def _placement_problems(recipe: Recipe, name: str, shared: bool = True) -> list[Finding]:
    out = []
    sections: list[tuple[tuple[str, ...], dict | None]] = []   # (where, the args or env there)
    envs: list[tuple[tuple[str, ...], dict | None]] = []
    if shared:
        sections += [(("serve", "args"), (recipe.data.get("serve") or {}).get("args"))]
        sections += [((role, "args"), (recipe.data.get(role) or {}).get("args")) for role in ROLES]
        sections += [(("kv-offload", "args"), (recipe.data.get("kv-offload") or {}).get("args"))]
        envs += [(("serve", "env"), (recipe.data.get("serve") or {}).get("env"))]
        envs += [((role, "env"), (recipe.data.get(role) or {}).get("env")) for role in ROLES]
        envs += [(("frontend", "env"), (recipe.data.get("frontend") or {}).get("env"))]
    sections += [(("points", name, role, "args"), ((points(recipe)[name].get(role) or {}).get("args")))
                 for role in ROLES]
    envs += [(("points", name, role, "env"), ((points(recipe)[name].get(role) or {}).get("env"))) for role in ROLES]
    for where, env in envs:
        for var in env or {}:
            if str(var).startswith(SIMULATED_ACCEPTANCE_PREFIX):
                out.append(recipe.finding(where + (var,), f"`{var}` must not be committed in the recipe env",
                                          "set `synthetic-acceptance:` at the top of the recipe; the runner "
                                          "applies it on throughput runs and never on eval runs"))
    for where, args in sections:
        for arg in args or {}:
            if arg in PLACEMENT_ARGS:
                out.append(recipe.finding(where + (arg,),
                                          f"`{arg}` is set in args, but the runner renders it from the point, "
                                          "its placement on nodes or `kv-transfer`",
                                          "remove it; set tp/ep/dp-attn/num-worker on the point's prefill/decode"))
    return out


def offload_roles(offload: Mapping, decode: GroupKey) -> list[str]:
    """Which side offloads KV: `workers:`, by default the prefill side (the aggregated workers too)."""
    return list(offload.get("workers") or ["prefill"])


def resolve_disagg(recipe: Recipe, prefill: Mapping, decode: Mapping, conc: list[int] | None = None,
                   offload: bool = True) -> DisaggPoint:
    """The point serving a row's prefill/decode groups, merged. InputError (located) when absent.
    `offload`: whether the row offloads KV (an entry may mix points with and without; the recipe's
    `kv-offload` says how it offloads when a point does)."""
    wanted = (GroupKey.of(prefill), GroupKey.of(decode))
    matches = [n for n, pt in points(recipe).items() if point_keys(pt) == wanted]
    if not matches:
        listing = "; ".join(f"{n} ({describe(point_keys(pt))})" for n, pt in points(recipe).items()) or "none"
        raise InputError(f"{recipe.file}: no point with {describe(wanted)}",
                         findings=[recipe.finding(("points",), f"no point with {describe(wanted)}",
                                                  f"available points: {listing}")])
    if len(matches) > 1:
        raise InputError(f"{recipe.file}: several points have {describe(wanted)}: {', '.join(matches)}")
    name = matches[0]
    pt = points(recipe)[name]
    problems = _placement_problems(recipe, name)
    if problems:
        raise InputError(problems[0].message, findings=problems)
    serve = recipe.data.get("serve") or {}
    how = recipe.data.get("kv-offload") if offload else None
    groups = {}
    for role in ROLES:
        side = recipe.data.get(role) or {}
        ptside = pt.get(role) or {}
        env = merge_env(merge_env(serve.get("env"), side.get("env")), ptside.get("env"))
        args = merge_args(merge_args(serve.get("args"), side.get("args")), ptside.get("args"))
        if isinstance(how, dict) and role in offload_roles(how, GroupKey.of(pt.get("decode") or {})):
            args = merge_args(args, how.get("args"))
        groups[role] = Group(role, GroupKey.of(ptside), int(ptside.get("nodes", 1)), env, args)
    concs = [int(c) for c in (pt.get("conc") or [])]
    if conc is not None and any(c not in concs for c in conc):
        missing = ", ".join(str(c) for c in conc if c not in concs)
        raise InputError(f"{recipe.file}: point {name} does not list concurrency {missing}",
                         findings=[recipe.finding(("points", name, "conc"),
                                                  f"point {name} does not list concurrency {missing} of the row",
                                                  "add it to the point's `conc` (the master lists it)")])
    synth = recipe.data.get("synthetic-acceptance")
    return DisaggPoint(recipe_file=recipe.file, name=name, engine=recipe.engine, image=recipe.image,
                       model=recipe.model, kv_transfer=str(recipe.data.get("kv-transfer", "")),
                       frontend=dict(recipe.data.get("frontend") or {}), prefill=groups["prefill"],
                       decode=groups["decode"], concs=list(conc) if conc is not None else concs,
                       kv_offload=dict(how) if isinstance(how, dict) else None,
                       synthetic_acceptance=None if synth is None else float(synth),
                       engine_versions=recipe.engine_versions)
