"""Can a runner serve this row? One pure decision for `plan`, `config validate` and `runner run`.

A row the planner emits must either run or be refused here, before any GPU is booked, with the
entry, the reason and the fix. The decision is the runner's own: a row is servable exactly when
`runner run --dry-run` would accept it (same recipe resolution, same `build_plan`), plus the rules
below that `runner run` cannot see from one row (the master entry has no recipe).

Two kinds of refusal:
- the change is wrong (no recipe, no such point, image differs, engine or router unknown...): the
  author fixes it; `plan` and `config validate` fail;
- the row is of a kind ci-tools does not run yet (`pending=True`). Each such kind is one named rule
  in PENDING_RULES, owned by the issue building that runner; delete the rule when the runner lands.
  `plan` withholds such rows from the GPU matrices and lists them, without failing the sweep of the
  rows that do run. There is none today: eval rows, single- and multi-node, run the eval harness
  against the server or the frontend (issues 13 and 22), decided like any row with the policy's
  `evals:` section in the context.

Multi-node disaggregated rows (prefill/decode) are decided by the multi-node planner
(`ci_tools.runner.disagg`, issue 14), exactly as `runner run` resolves them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ci_tools.config.recipe import Recipe, resolve_point
from ci_tools.engines import engine as engine_plugin
from ci_tools.errors import InputError
from ci_tools.sweep.row import MatrixRow, MultiNodeRow, as_row


@dataclass(frozen=True)
class Refusal:
    rule: str
    config_key: str
    message: str
    fix: str
    pending: bool = False

    def text(self) -> str:
        return f"{self.config_key}: {self.message}. Fix: {self.fix}"

    def as_dict(self) -> dict:
        return {"rule": self.rule, "config-key": self.config_key, "message": self.message, "fix": self.fix,
                "pending": self.pending}


@dataclass(frozen=True)
class Context:
    """What the decision needs besides the row, read by the caller (plain data)."""

    entry: Mapping[str, Any] | None                  # the row's master entry
    recipe: Recipe | None = None                      # its loaded recipe (None: no `recipe:` or unreadable)
    recipe_error: str | None = None                   # why the recipe could not be read
    gpus_per_node: int | None = None                  # runners.yaml hardware of the row's runner
    evals: Any = None                                 # ci_tools.evals.policy.EvalPolicy (ci-policy.yaml `evals:`)


# ---- rows ci-tools does not run yet (one rule each; remove a rule when its runner lands) -----------
# A rule takes the row and returns (message, fix) when it withholds the row. None are left: the last
# one, multi-node eval rows, went when the multi-node runner ran the eval harness (issue 22).

PENDING_RULES: tuple[Callable[[Mapping[str, Any]], tuple[str, str] | None], ...] = ()


# ---- the decision ---------------------------------------------------------------------------------

def _int(row: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = row.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(key)
    return value


def refusals(row: Mapping[str, Any], ctx: Context) -> list[Refusal]:
    """Everything that stops this row from running (empty: `runner run` serves it)."""
    row = as_row(row)
    key = str(row.config_key or "?")
    for rule in PENDING_RULES:
        hit = rule(row)
        if hit:
            return [Refusal(rule.__name__.replace("_", "-"), key, hit[0], hit[1], pending=True)]
    out: list[Refusal] = []

    def refuse(rule: str, message: str, fix: str) -> list[Refusal]:
        out.append(Refusal(rule, key, message, fix))
        return out

    if ctx.entry is None:
        return refuse("unknown-config-key", f"no master entry named {key!r}", "plan rows come from master entries; "
                      "re-run `ci-tools plan`")
    recipe_path = ctx.entry.get("recipe") if isinstance(ctx.entry, Mapping) else None
    if not recipe_path:
        return refuse("no-recipe", "the master entry has no `recipe:`, so no runner knows how to serve it",
                      "write a recipe (recipes/<dir>/<name>.yaml, with a point per search-space point) and set "
                      "`recipe:` on the entry")
    if ctx.recipe is None:
        return refuse("recipe-unreadable", f"its recipe {recipe_path} cannot be read: {ctx.recipe_error or 'missing'}",
                      "fix the recipe file (`ci-tools config validate` shows where)")
    recipe = ctx.recipe
    plugin = engine_plugin(recipe.engine)
    if plugin is None:
        from ci_tools.engines import ENGINE_NAMES, UNSERVED_ENGINES

        why, fix = UNSERVED_ENGINES.get(recipe.engine, ("", ""))
        return refuse("unknown-engine", f"recipe {recipe.file} uses engine {recipe.engine!r}, which has no ci-tools "
                      f"plug-in{': ' + why if why else ''}",
                      fix or f"use {', '.join(ENGINE_NAMES)}, or add a plug-in in ci_tools/engines/")
    from ci_tools.evals.policy import is_eval_row

    if is_eval_row(row) and ctx.evals is None:
        return refuse("no-eval-policy", "it is an eval row and the policy file has no `evals:` section, so no "
                      "harness or task is known", "add evals: (suites, harnesses) to inferencex-e2e/ci-policy.yaml")
    if isinstance(row, MultiNodeRow):
        _multinode(row, recipe, ctx, refuse)
        return out
    try:
        tp, ep, conc = _int(row, "tp"), _int(row, "ep", 1), _int(row, "conc")
    except ValueError as exc:
        return refuse("row-shape", f"the row's `{exc.args[0]}` is not one integer", "plan single-node rows only")
    try:
        point = resolve_point(recipe, tp, ep, bool(row.get("dp-attn", False)), conc)
    except InputError as exc:
        hint = exc.findings[0].hint if exc.findings and exc.findings[0].hint else ""
        return refuse("no-recipe-point", str(exc), f"add the point to {recipe.file}" + (f" ({hint})" if hint else ""))
    from ci_tools.runner.plan import Settings, build_plan

    try:
        build_plan(row, point, Settings(gpus_per_node=ctx.gpus_per_node, evals=ctx.evals), "out")
    except InputError as exc:
        refuse("runner", f"`runner run` would refuse the row: {exc}", "fix the master entry or its recipe as the "
               "message says")
    return out


def _multinode(row: MultiNodeRow, recipe: Recipe, ctx: Context, refuse) -> None:
    """A prefill/decode row: the multi-node planner decides, as `runner run` would (Slurm only)."""
    from ci_tools.config.disagg import is_disagg, resolve_disagg
    from ci_tools.runner.disagg import build_multinode_plan
    from ci_tools.runner.plan import Settings

    if not is_disagg(recipe.data):
        refuse("not-a-disaggregated-recipe", f"the row is multi-node (prefill/decode) but {recipe.file} is not "
                      "a disaggregated recipe", "set `mode: disaggregated` in the recipe and describe its "
                      "prefill/decode groups (docs/runner-operator.md, 'Disaggregated (multi-node) points')")
        return
    concs = row.get("conc")
    concs = [int(c) for c in concs] if isinstance(concs, list) else ([int(concs)] if concs is not None else None)
    try:
        point = resolve_disagg(recipe, row.get("prefill") or {}, row.get("decode") or {}, concs,
                               (row.get("kv-offloading") or "none") != "none")
        build_multinode_plan(row, point, Settings(evals=ctx.evals), "out", ctx.gpus_per_node)
    except InputError as exc:
        refuse("multinode-runner", f"`runner run` would refuse the row: {exc}", "fix the master entry or its "
               "disaggregated recipe as the message says")




def screen_for(entries: Mapping[str, Mapping[str, Any]], recipes: Mapping[str, Recipe | str],
               hardware: Mapping[str, Any], evals: Any = None) -> Callable[[str, MatrixRow], list[Refusal]]:
    """The plan builder's screen: `recipes` maps each `recipe:` path to its loaded recipe, or to the
    reason it could not be read (the shell reads them from git at the planned head); `evals` is the
    policy's `evals:` section (ci_tools.evals.policy.EvalPolicy), None when it has none."""
    def screen(key: str, row: MatrixRow) -> list[Refusal]:
        entry = entries.get(key)
        path = entry.get("recipe") if isinstance(entry, Mapping) else None
        found = recipes.get(path) if isinstance(path, str) else None
        facts = hardware.get(row.runner) if row.runner is not None and isinstance(hardware, Mapping) else None
        gpn = (facts or {}).get("gpus-per-node")
        return refusals(row, Context(entry, found if isinstance(found, Recipe) else None,
                                     found if isinstance(found, str) else None, int(gpn) if gpn else None,
                                     evals))
    return screen


__all__ = ["Context", "PENDING_RULES", "Refusal", "refusals", "screen_for"]


def config_findings(checked, findings: list) -> list:
    """`config validate`'s last gate (a `config.validate.UpperCheck`): in a repository, with a runners
    file that passes its schema and a change, once the files are otherwise clean (its reasons would
    repeat the findings before it), every row of a touched entry must be one a runner serves."""
    change = checked.change
    if checked.src.root is None or checked.hardware is None or not (change.keys or change.files) \
            or any(f.severity != "warning" for f in findings):
        return []
    return servability(checked.entries, checked.recipes, checked.hardware, change)


def servability(valid, recipes, hardware: dict, change) -> list:
    """Touched entries (`config.crossfile.Entry`, `Recipe`, `Change`): every benchmark row they expand
    to must be one a runner serves (`refusals`, the same decision `plan` makes), else an error at the
    entry."""
    from ci_tools.sweep.matrix import Filters, expand

    out = []
    entries = {e.key: e.data for e in valid}
    for e in valid:
        ref = e.data.get("recipe") if isinstance(e.data.get("recipe"), str) else None
        if not change.touches(e.key, ref):
            continue
        rec = recipes.get(ref) if ref else None
        if ref and (rec is None or not rec.valid):
            continue          # recipe_links already reports a missing or invalid recipe
        loaded = Recipe(rec.doc.file, rec.doc.data, rec.doc) if rec else None
        gpn = (hardware.get(e.data.get("runner")) or {}).get("gpus-per-node")
        ctx = Context(e.data, loaded, None, int(gpn) if gpn else None)
        seen: set[tuple[str, str]] = set()
        for keyed in expand(entries, hardware, Filters(config_keys=(e.key,))):
            for r in refusals(keyed.row.replace(config_key=e.key), ctx):
                # a missing point is crossfile.recipe_links' finding already (located in both files)
                if r.pending or r.rule == "no-recipe-point" or (r.rule, r.message) in seen:
                    continue
                seen.add((r.rule, r.message))
                out.append(e.doc.finding((e.key,), f"{e.key}: no runner can serve it: {r.message}", r.fix))
    return out
