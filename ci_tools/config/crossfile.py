"""Rules that span files: master entries against runners.yaml and against their recipes.

Pure functions over already-loaded documents (`YamlDoc`: data plus line marks); they return
findings located in whichever file must change.

Policy decisions (documented in docs/contributor.md, "Validating configs"):
- A master `runner` label missing from runners.yaml is an **error**: the planner cannot place the
  entry on any machine, node filters cannot expand it, and the fix is one line in runners.yaml.
- An image without `@sha256:<64 hex>` is an **error** in entries the change touches, and a
  **warning** elsewhere (legacy entries are reported, grouped per file, without blocking a PR that
  does not touch them). Recipe images follow the entries that reference them.
- The config-key naming convention is advisory: **warning**.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Iterator

from ci_tools import names
from ci_tools.config.rules import entry_points, fmt_point, point_key
from ci_tools.errors import Finding
from ci_tools.yaml.located import YamlDoc

PINNED = re.compile(r"^(?P<name>[^@\s]+)@sha256:(?P<digest>[0-9a-f]{64})$")
CONFIG_FILE_RE = re.compile(r"^CONFIG_FILE=(?P<path>\S+)$")
KEY_CHARS = re.compile(r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")


@dataclass(frozen=True)
class Change:
    """Which entries the change under review touches (pinning is strict only for those).

    keys: config keys or fnmatch patterns (`--changed-key`); files: repository-relative paths that
    changed (from `--base`): an entry whose recipe changed counts as touched.
    """

    keys: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()

    def touches(self, key: str, recipe: str | None = None) -> bool:
        if key in self.keys or any(fnmatch.fnmatchcase(key, k) for k in self.keys if "*" in k or "?" in k):
            return True
        return recipe is not None and recipe in self.files


@dataclass
class Entry:
    key: str
    data: dict
    doc: YamlDoc

    def at(self, *path) -> tuple:
        return (self.key, *path)

    def where(self, *path) -> str:
        line, _ = self.doc.mark(self.at(*path))
        return f"{self.doc.file}:{line}" if line else self.doc.file


@dataclass
class Recipe:
    path: str  # repository-relative, e.g. recipes/x/agentic.yaml
    doc: YamlDoc
    valid: bool  # passed the recipe schema
    referenced_by: list[str] = field(default_factory=list)

    @property
    def data(self) -> dict:
        return self.doc.data

    def where(self, *path) -> str:
        line, _ = self.doc.mark(path)
        return f"{self.doc.file}:{line}" if line else self.doc.file


def recipe_refs(entry: dict) -> Iterator[tuple[tuple, str, str]]:
    """(path in entry, referenced path, how) for `recipe:` and CONFIG_FILE=recipes/... settings."""
    if isinstance(entry.get("recipe"), str):
        yield ("recipe",), entry["recipe"], "recipe"
    # Also used on entries that failed the schema (to know which recipes are referenced at all):
    # every level is type-checked.
    prefix = names.RECIPES_DIR + "/"
    scenarios = entry.get("scenarios")
    if not isinstance(scenarios, dict):
        return
    for kind in ("fixed-seq-len", "agentic-coding"):
        blocks = scenarios.get(kind)
        for i, block in enumerate(blocks if isinstance(blocks, list) else []):
            spaces = block.get("search-space") if isinstance(block, dict) else None
            for j, ss in enumerate(spaces if isinstance(spaces, list) else []):
                for role in ("prefill", "decode"):
                    worker = ss.get(role) if isinstance(ss, dict) else None
                    if not isinstance(worker, dict):
                        continue
                    settings = worker.get("additional-settings")
                    for k, setting in enumerate(settings if isinstance(settings, list) else []):
                        m = CONFIG_FILE_RE.match(setting) if isinstance(setting, str) else None
                        if m and m.group("path").startswith(prefix):
                            yield (("scenarios", kind, i, "search-space", j, role, "additional-settings", k),
                                   m.group("path"), "CONFIG_FILE")


def runner_labels(entries: list[Entry], runners: YamlDoc) -> list[Finding]:
    labels = (runners.data or {}).get("labels") if isinstance(runners.data, dict) else None
    if not isinstance(labels, dict):
        return []
    declared = [str(k) for k in labels]
    users: dict[str, list[Entry]] = {}
    for e in entries:
        if e.data["runner"] not in labels:
            users.setdefault(e.data["runner"], []).append(e)
    out = []
    for label, es in users.items():
        close = difflib.get_close_matches(label, declared, n=2, cutoff=0.6)
        suggestion = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        others = f" (also used by {len(es) - 1} other entr{'y' if len(es) == 2 else 'ies'})" if len(es) > 1 else ""
        for e in es:
            out.append(e.doc.finding(e.at("runner"),
                                     f"{e.key}: runner label '{label}' is not declared in {runners.file}{others}",
                                     f"{suggestion}Declare it under `labels:` in {runners.file} with its runner names, "
                                     f"or use a declared label; an undeclared label cannot be placed on any machine"))
    return out


def dram_hardware(entries: list[Entry], runners: YamlDoc) -> list[Finding]:
    """kv-offloading: dram sizes the offload from the runner's CPU DRAM: runners.yaml must know it."""
    data = runners.data if isinstance(runners.data, dict) else {}
    hardware = data.get("hardware") or {}
    out = []
    for e in entries:
        blocks = (e.data.get("scenarios") or {}).get("agentic-coding") or []
        if not any(ss.get("kv-offloading") == "dram" for b in blocks for ss in b.get("search-space") or []):
            continue
        facts = hardware.get(e.data["runner"]) if isinstance(hardware, dict) else None
        if not isinstance(facts, dict) or "available-cpu-dram-mib" not in facts:
            out.append(e.doc.finding(e.at("runner"),
                                     f"{e.key}: kv-offloading: dram needs the CPU DRAM of runner '{e.data['runner']}', "
                                     f"but {runners.file} has no hardware.{e.data['runner']}.available-cpu-dram-mib",
                                     f"add it under `hardware:` in {runners.file}, or use a runner that has it"))
    return out


def _pin_problem(image: str) -> str:
    if PINNED.match(image):
        return ""
    if "@sha256:" in image:
        return "its digest is not sha256 followed by 64 lowercase hex characters"
    if "@" in image:
        return "its digest is not a sha256 digest"
    return "it is not pinned by digest"


_PIN_HINT = ("append @sha256:<digest> (`docker buildx imagetools inspect <image>` prints it) so the sweep runs "
             "exactly the image that was reviewed; a tag can be moved")


def image_pins(entries: list[Entry], change: Change) -> list[Finding]:
    out = []
    legacy: dict[str, list[Entry]] = {}
    for e in entries:
        problem = _pin_problem(e.data["image"])
        if not problem:
            continue
        if change.touches(e.key, e.data.get("recipe")):
            out.append(e.doc.finding(e.at("image"), f"image of {e.key} (touched by this change): {problem}", _PIN_HINT))
        else:
            legacy.setdefault(e.doc.file, []).append(e)
    for file, es in legacy.items():
        first = es[0]
        listed = ", ".join(f"{e.key} (line {e.doc.mark(e.at('image'))[0]})" for e in es[:3])
        more = f" and {len(es) - 3} more" if len(es) > 3 else ""
        out.append(first.doc.finding(
            first.at("image"),
            f"{len(es)} {'entry in this file uses' if len(es) == 1 else 'entries in this file use'} an image without a @sha256 digest: "
            f"{listed}{more}",
            "not blocking here because this change does not touch them; pin them when they are next edited "
            "(an entry the change touches must be pinned)", "warning"))
    return out


def image_allowlist(entries: list[Entry], patterns: tuple[str, ...], policy_file: str) -> list[Finding]:
    """Every entry's image must be on the policy's allowlist (recipes must equal their entry's image,
    which `recipe_links` checks), touched or not: an image the GPU runners refuse cannot be swept."""
    from ci_tools.config.images import problem

    out = []
    for e in entries:
        why = problem(str(e.data["image"]), patterns, policy_file)
        if why:
            out.append(e.doc.finding(e.at("image"), f"{e.key}: {why}",
                                     f"the runners start only images {policy_file} allows (`images: allowed:`)"))
    return out


def recipe_links(entries: list[Entry], recipes: dict[str, Recipe], recipe_paths: set[str],
                 change: Change, hardware: dict | None = None) -> list[Finding]:
    """References exist; for `recipe:` links also config-key, image and points agree."""
    out: list[Finding] = []
    for e in entries:
        for path, ref, how in recipe_refs(e.data):
            if ref not in recipe_paths:
                what = "recipe" if how == "recipe" else "CONFIG_FILE setting"
                out.append(e.doc.finding(e.at(*path), f"{what} {ref} does not exist",
                                         "check the path (relative to the repository root) or add the file"))
                continue
            rec = recipes.get(ref)
            if rec is None:
                continue  # the file exists but did not load; its own finding says why
            rec.referenced_by.append(e.key)
            if how == "recipe" and rec.valid:
                out.extend(_recipe_agrees(e, rec, change, hardware))
    return out


def _digest_of(image: str) -> str:
    m = PINNED.match(image)
    return m.group("digest")[:12] if m else ""


def _recipe_agrees(e: Entry, rec: Recipe, change: Change, hardware: dict | None = None) -> list[Finding]:
    out = []
    data = rec.data
    if data["config-key"] != e.key:
        out.append(rec.doc.finding(("config-key",),
                                   f"recipe says it serves '{data['config-key']}', but it is the recipe of "
                                   f"master entry '{e.key}' ({e.where('recipe')})",
                                   f"set config-key: {e.key}, or point the right master entry at this recipe"))
    m_img, r_img = e.data["image"], data["image"]
    if m_img != r_img:
        same_name = m_img.split("@")[0] == r_img.split("@")[0]
        detail = (f"same tag, different digest: recipe sha256:{_digest_of(r_img) or '?'}..., master "
                  f"sha256:{_digest_of(m_img) or '?'}..." if same_name and "@" in m_img and "@" in r_img
                  else f"recipe {r_img!r}, master {m_img!r}")
        out.append(rec.doc.finding(("image",),
                                   f"recipe image differs from the image of master entry {e.key} at "
                                   f"{e.where('image')} ({detail})",
                                   f"the benchmark runs the master's image with this recipe's settings: make "
                                   f"{rec.doc.file} and {e.doc.file} name the same image@digest"))
    problem = _pin_problem(r_img)
    if problem:
        touched = change.touches(e.key, rec.path) or rec.path in change.files
        out.append(rec.doc.finding(("image",), f"recipe image: {problem}", _PIN_HINT,
                                   "error" if touched else "warning"))
    if data.get("model") != e.data["model"]:
        out.append(rec.doc.finding(("model",),
                                   f"recipe model {data.get('model')!r} differs from master entry {e.key}'s model "
                                   f"{e.data['model']!r} ({e.where('model')})", "make them the same model"))
    if e.data.get("multinode"):
        from ci_tools.config.disaggcheck import disagg_agrees

        out.extend(disagg_agrees(e, rec, hardware))
        out.extend(dynamo_engine(rec))
    elif data.get("mode") == "disaggregated":
        out.append(rec.doc.finding(("mode",), f"a disaggregated recipe serves multinode entries, but master entry "
                                              f"{e.key} is single-node", "point a multinode entry at it, or write "
                                              "a single-node recipe (serve/points with tp/ep/dp-attn/conc)"))
    else:
        out.extend(_points_agree(e, rec))
    return out


def dynamo_engine(rec: Recipe) -> list[Finding]:
    """A Dynamo frontend's release must be one a runner can install as it is published, and run the recipe's
    engine at its engine-versions (its workers import the engine's modules: ci_tools/engines/compat.py)."""
    from ci_tools.engines.compat import frontend_problems

    fe = rec.data.get("frontend")
    if not isinstance(fe, dict) or fe.get("kind") != "dynamo" or fe.get("version") is None:
        return []
    versions = tuple(str(v) for v in rec.data.get("engine-versions") or ())
    found = frontend_problems(str(fe["version"]), str(rec.data.get("engine", "sglang")), versions,
                              str(rec.data.get("image", "")), fe.get("install"))
    return [rec.doc.finding(("frontend", "version"), p, "the releases and pairs ci-tools runs are listed in "
                                                        "ci_tools/engines/compat.py") for p in found]


def _points_agree(e: Entry, rec: Recipe) -> list[Finding]:
    out = []
    master = entry_points(e.data)
    seen: dict[tuple, str] = {}
    for name, p in rec.data["points"].items():
        key = point_key(p, p["conc"])
        if key in seen:
            out.append(rec.doc.finding(("points", name),
                                       f"recipe points '{seen[key]}' and '{name}' are the same point ({fmt_point(key)})",
                                       "keep one of them"))
            continue
        seen[key] = name
        if key not in master:
            out.append(rec.doc.finding(("points", name),
                                       f"recipe point '{name}' ({fmt_point(key)}) is not in the search space of "
                                       f"master entry {e.key} ({e.where('scenarios')})",
                                       "add it to the master search space, or remove the point; only master "
                                       "points are ever run"))
            continue
        out.extend(_router_agrees(e, master[key], rec, name))
        out.extend(_shape_agrees(e, master[key], rec, name))
    for key, path in master.items():
        if key not in seen:
            out.append(e.doc.finding(e.at(*path),
                                     f"master point {fmt_point(key)} of {e.key} has no point in its recipe "
                                     f"{rec.where('points')}",
                                     f"add a point with tp: {key[0]}, ep: {key[1]}, "
                                     f"{'dp-attn: true, ' if key[2] else ''}conc: {key[3]} to the recipe, or drop "
                                     f"the concurrency from the master search space"))
    return out


def _router_id(router: object) -> tuple | None:
    return (router.get("name"), str(router.get("version"))) if isinstance(router, dict) else None


def _router_agrees(e: Entry, ss_path: tuple, rec: Recipe, name: str) -> list[Finding]:
    """The router the master declares for a point (its search-space entry's, else the entry's) is the
    one the recipe starts for it (the point's, else serve's): same name and version, or none on both."""
    ss = e.data
    for part in ss_path:
        ss = ss[part]
    master = _router_id(ss.get("router")) or _router_id(e.data.get("router"))
    point = rec.data["points"][name]
    serve = rec.data.get("serve") or {}
    recipe = _router_id(point.get("router")) or _router_id(serve.get("router"))
    if master == recipe:
        return []
    show = lambda r: f"{r[0]} {r[1]}" if r else "no router"  # noqa: E731
    return [rec.doc.finding(("points", name, "router") if point.get("router") else ("points", name),
                            f"recipe point '{name}' runs behind {show(recipe)}, but master entry {e.key} declares "
                            f"{show(master)} for it ({e.where(*ss_path)})",
                            "the router is part of the benchmarked point: make the recipe and the master agree")]


def _shape_agrees(e: Entry, ss_path: tuple, rec: Recipe, name: str) -> list[Finding]:
    """What else of the master's point the runner serves from the recipe: pipeline and context parallel
    sizes (on the point) and DRAM KV offload (the recipe's `kv-offload`, the same backend)."""
    ss = e.data
    for part in ss_path:
        ss = ss[part]
    point = rec.data["points"][name]
    out = []
    for size in ("pp", "dcp-size", "pcp-size"):
        want, have = int(ss.get(size, 1) or 1), int(point.get(size, 1))
        if want != have:
            out.append(rec.doc.finding(("points", name), f"recipe point '{name}' has {size} {have}, but master "
                                                         f"entry {e.key} runs {size} {want} ({e.where(*ss_path)})",
                                       f"set {size}: {want} on the point"))
    kv = ss.get("kv-offloading") or "none"
    backend = (ss.get("kv-offload-backend") or {}).get("name")
    off = rec.data.get("kv-offload")
    if kv == "none":
        return out
    if not off or not isinstance(off, dict):   # the schema makes a present one a mapping
        out.append(rec.doc.finding(("points", name), f"master entry {e.key} offloads KV for point '{name}' ({kv}, "
                                                     f"{backend}; {e.where(*ss_path)}), but the recipe has no "
                                                     "`kv-offload`", f"add kv-offload: {{backend: {backend}, "
                                                                     f"medium: {kv}}}"))
    elif (off.get("medium"), off.get("backend")) != (kv, backend):
        out.append(rec.doc.finding(("kv-offload",), f"kv-offload {off.get('medium')}/{off.get('backend')} differs "
                                                    f"from master entry {e.key}'s {kv}/{backend} for point '{name}'",
                                   "make them the same backend"))
    return out


def orphan_recipes(recipes: dict[str, Recipe], keys: set[str], referenced: set[str]) -> list[Finding]:
    """Recipes no master entry points at (`referenced`: every path any entry names, valid or not)."""
    out = []
    for rec in recipes.values():
        if rec.path in referenced or not rec.valid:
            continue
        ck = rec.data["config-key"]
        hint = (f"add `recipe: {rec.path}` to master entry {ck}" if ck in keys
                else f"no master entry is named {ck!r}; add one with `recipe: {rec.path}`, or delete the recipe")
        out.append(rec.doc.finding(("config-key",), "this recipe is not referenced by any master entry, so it never runs",
                                   hint, "warning"))
    return out


def naming(entries: list[Entry]) -> list[Finding]:
    """Advisory: <model-prefix>-<precision>-<gpu>-...<framework>...; the GPU as in the runner label."""
    out = []
    for e in entries:
        d = e.data
        problems: list[str] = []
        prefix = f"{d['model-prefix']}-{d['precision']}-"
        if not KEY_CHARS.match(e.key):
            problems.append("uses characters other than lowercase letters, digits, '.' and '-'")
        if not e.key.startswith(prefix):
            problems.append(f"does not start with '{prefix}' (model-prefix-precision-)")
        else:
            gpu = e.key[len(prefix):].split("-")[0]
            label_gpu = d["runner"].removeprefix("cluster:").split("-")[0]
            if gpu != label_gpu:
                problems.append(f"names GPU '{gpu}' but runs on runner '{d['runner']}' ({label_gpu})")
        fw = d["framework"]
        if fw not in e.key and fw.split("-")[-1] not in e.key:
            problems.append(f"does not contain the framework '{fw}'")
        if problems:
            out.append(e.doc.finding((e.key,), f"config key '{e.key}' " + "; ".join(problems),
                                     f"the convention is <model-prefix>-<precision>-<gpu>-<framework>[-variant], "
                                     f"e.g. {prefix}{d['runner'].removeprefix('cluster:').split('-')[0]}-{fw}",
                                     "warning"))
    return out
