"""Recipe resolution: one benchmark point of a recipe, merged into env + server args + router.

A recipe has a `serve` base (`env`, `args`) and named `points`, each with tp/ep/dp-attn/conc and
only what differs from the base. Resolution is pure: `resolve_point(recipe, ...)` returns a
`ResolvedPoint`; nothing here starts a process. Structural validation of recipes belongs to the
config validator; here only what would make a resolution wrong is rejected, with the location.

Merge rules for `args`: the base order is kept, a point's value replaces the base value in place,
`false`/`null` drops the argument, new arguments are appended in the point's order. `true` renders
as a bare flag, anything else as `--name value` (`render_args`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ci_tools.errors import Finding, InputError
from ci_tools.yaml.located import YamlDoc

# Engine-level keys that come from the point itself and must not be repeated in `args`: the
# runner renders them from tp/ep/dp-attn, so two sources could disagree silently. Each engine
# plug-in names its own (ci_tools/engines/<engine>.py); this is the fallback for unknown engines.
TOPOLOGY_ARGS = ("tp", "tp-size", "tensor-parallel-size", "ep", "ep-size", "expert-parallel-size",
                 "dp", "dp-size", "data-parallel-size", "enable-dp-attention")


def topology_args(engine: str) -> frozenset[str] | tuple[str, ...]:
    from ci_tools.engines import engine as plugin

    mod = plugin(engine)
    return mod.TOPOLOGY_ARGS if mod is not None else TOPOLOGY_ARGS
# Synthetic acceptance is a property of the run (throughput vs eval), never of the recipe env.
SIMULATED_ACCEPTANCE_PREFIX = "SGLANG_SIMULATE_ACC_"


@dataclass(frozen=True)
class PointKey:
    tp: int
    ep: int
    dp_attn: bool
    conc: int

    def describe(self) -> str:
        return f"tp={self.tp} ep={self.ep} dp-attn={'true' if self.dp_attn else 'false'} conc={self.conc}"


@dataclass
class Recipe:
    file: str
    data: dict
    doc: YamlDoc | None = None

    @property
    def image(self) -> str:
        return str(self.data.get("image", ""))

    @property
    def model(self) -> str:
        return str(self.data.get("model", ""))

    @property
    def engine(self) -> str:
        return str(self.data.get("engine", "sglang"))

    @property
    def engine_versions(self) -> tuple[str, ...]:
        """Released engine versions whose command line the image has (both neighbours of a nightly)."""
        value = self.data.get("engine-versions") or ()
        if isinstance(value, (str, int, float)):
            value = [value]
        return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else ()

    @property
    def synthetic_acceptance(self) -> float | None:
        value = self.data.get("synthetic-acceptance")
        return None if value is None else float(value)

    def points(self) -> dict[str, dict]:
        pts = self.data.get("points") or {}
        return pts if isinstance(pts, dict) else {}

    def finding(self, path: tuple, message: str, hint: str = "") -> Finding:
        if self.doc is not None:
            return self.doc.finding(path, message, hint)
        return Finding(self.file, None, None, message, hint)


@dataclass
class ResolvedPoint:
    """Everything the runner needs from the recipe for one point (plain data)."""

    recipe_file: str
    name: str
    key: PointKey
    engine: str
    image: str
    model: str
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    router: dict | None = None
    synthetic_acceptance: float | None = None
    engine_versions: tuple[str, ...] = ()
    pp: int = 1
    dcp: int = 1
    pcp: int = 1
    kv_offload: dict | None = None        # the recipe's `kv-offload` (backend, medium, args, env)
    options: dict[str, Any] = field(default_factory=dict)   # the engine's options file (TensorRT-LLM's LLM API)

    @property
    def gpus(self) -> int:
        """GPUs one single-node point occupies: TP x PP x PCP ranks (DEP shares them between DP ranks)."""
        return self.key.tp * self.pp * self.pcp

    def as_dict(self) -> dict:
        return {"recipe": self.recipe_file, "point": self.name, "tp": self.key.tp, "ep": self.key.ep,
                "dp-attn": self.key.dp_attn, "conc": self.key.conc, "engine": self.engine,
                "engine-versions": list(self.engine_versions), "image": self.image, "model": self.model, "env": dict(self.env),
                "args": dict(self.args), "router": self.router,
                "synthetic-acceptance": self.synthetic_acceptance,
                **{k: v for k, v in (("pp", self.pp), ("dcp-size", self.dcp), ("pcp-size", self.pcp)) if v > 1},
                **({"kv-offload": self.kv_offload} if self.kv_offload else {}),
                **({"options": self.options} if self.options else {})}


def recipe_from_data(data: dict, file: str = "<recipe>") -> Recipe:
    return Recipe(file, data)


def _point_key(name: str, pt: Mapping) -> PointKey:
    return PointKey(int(pt.get("tp", 0)), int(pt.get("ep", 1)), bool(pt.get("dp-attn", False)),
                    int(pt.get("conc", 0)))


def available_points(recipe: Recipe) -> list[tuple[str, PointKey]]:
    return [(name, _point_key(name, pt)) for name, pt in recipe.points().items() if isinstance(pt, dict)]


def merge_args(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """Base args with a point's overrides applied (see module docstring for the rules)."""
    out: dict[str, Any] = {}
    for name, value in (base or {}).items():
        out[name] = value
    for name, value in (override or {}).items():
        out[name] = value
    return {k: v for k, v in out.items() if v is not None and v is not False}


def merge_options(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """A point's options over the base's, mapping into mapping (a point may change one key of the base's
    `speculative_config`); null removes a key."""
    out: dict[str, Any] = {}
    for name, value in list((base or {}).items()) + list((override or {}).items()):
        if isinstance(value, Mapping) and isinstance(out.get(name), dict):
            value = merge_options(out[name], value)
        elif isinstance(value, Mapping):
            value = merge_options({}, value)
        out[name] = value
    return {k: v for k, v in out.items() if v is not None}


def merge_env(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, str]:
    out = {str(k): v for k, v in (base or {}).items()}
    out.update({str(k): v for k, v in (override or {}).items()})
    # null removes a base variable, like null in args; everything else is a string in the process env
    return {k: _env_str(v) for k, v in out.items() if v is not None}


def _env_str(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def render_args(args: Mapping[str, Any]) -> list[str]:
    """`{"trust-remote-code": True, "tp": 4}` -> `["--trust-remote-code", "--tp", "4"]`."""
    from ci_tools.engines import render_args as render

    return render(args)


def _check_point(recipe: Recipe, name: str, pt: Mapping, env: Mapping, args: Mapping) -> list[Finding]:
    problems: list[Finding] = []
    topology = topology_args(recipe.engine)
    sections: list[tuple[Mapping, tuple[str, ...]]] = [
        ((recipe.data.get("serve") or {}).get("args") or {}, ("serve", "args")),
        (pt.get("args") or {}, ("points", name, "args"))]
    for section, where in sections:
        for arg in section:
            if arg in topology:
                problems.append(recipe.finding(where + (arg,),
                                               f"`{arg}` is set in args, but tp/ep/dp-attn come from the point",
                                               "remove it from args; set tp/ep/dp-attn on the point instead"))
    for var in env:
        if var.startswith(SIMULATED_ACCEPTANCE_PREFIX):
            where = ("points", name, "env", var) if var in (pt.get("env") or {}) else ("serve", "env", var)
            problems.append(recipe.finding(where, f"`{var}` must not be committed in the recipe env",
                                           "set `synthetic-acceptance:` at the top of the recipe; the runner "
                                           "applies it on throughput runs and never on eval runs"))
    return problems


def resolve_point(recipe: Recipe, tp: int, ep: int, dp_attn: bool, conc: int) -> ResolvedPoint:
    """Merge the base and the point matching (tp, ep, dp-attn, conc). InputError if absent."""
    wanted = PointKey(int(tp), int(ep), bool(dp_attn), int(conc))
    matches = [(name, key) for name, key in available_points(recipe) if key == wanted]
    if not matches:
        listing = "; ".join(f"{n} ({k.describe()})" for n, k in available_points(recipe)) or "none"
        msg = f"{recipe.file}: no point with {wanted.describe()}"
        raise InputError(msg, findings=[recipe.finding(("points",), f"no point with {wanted.describe()}",
                                                       f"available points: {listing}")])
    if len(matches) > 1:
        names = ", ".join(n for n, _ in matches)
        raise InputError(f"{recipe.file}: several points match {wanted.describe()}: {names}",
                         findings=[recipe.finding(("points", matches[1][0]),
                                                  f"several points match {wanted.describe()}: {names}",
                                                  "each (tp, ep, dp-attn, conc) must appear once")])
    name = matches[0][0]
    pt = recipe.points()[name]
    serve = recipe.data.get("serve") or {}
    env = merge_env(serve.get("env"), pt.get("env"))
    args = merge_args(serve.get("args"), pt.get("args"))
    problems = _check_point(recipe, name, pt, env, args)
    if problems:
        raise InputError(problems[0].message, findings=problems)
    router = pt.get("router", serve.get("router"))
    offload = recipe.data.get("kv-offload")
    return ResolvedPoint(recipe_file=recipe.file, name=name, key=wanted, engine=recipe.engine,
                         image=recipe.image, model=recipe.model, env=env, args=args,
                         router=dict(router) if isinstance(router, dict) else None,
                         synthetic_acceptance=recipe.synthetic_acceptance,
                         engine_versions=recipe.engine_versions, pp=int(pt.get("pp", 1)),
                         dcp=int(pt.get("dcp-size", 1)), pcp=int(pt.get("pcp-size", 1)),
                         kv_offload=dict(offload) if isinstance(offload, dict) else None,
                         options=merge_options(serve.get("options"), pt.get("options")))
