"""Acceptance-length references: every recipe's synthetic acceptance must come from a measurement.

Pure. `inferencex-e2e/acceptance-lengths.yaml` maps an entry id to what was measured (model, engine
and version, dataset, thinking mode, speculative steps -> acceptance length, and the run that measured
it). A recipe's `synthetic-acceptance` either names its entry (`synthetic-acceptance-reference`) and
must equal it, or equals the length of exactly the entries for its model; anything else is a located
error: an invented speed is what InferenceX's synthetic acceptance gives when its golden file is
missing (spec inferencex-runner-results.md §6, "a file that does not exist at HEAD").
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Iterable

from ci_tools import names
from ci_tools.errors import Finding
from ci_tools.yaml.located import YamlDoc

FIELD = "synthetic-acceptance"
REF_FIELD = "synthetic-acceptance-reference"


@dataclass(frozen=True)
class Reference:
    id: str
    model: str
    engine: str
    engine_version: str
    dataset: str
    thinking: bool
    mtp: int
    acceptance_length: float
    run: str | None
    source: str | None = None

    def describe(self) -> str:
        return (f"{self.id} ({self.model}, {self.engine} {self.engine_version}, {self.dataset}, thinking "
                f"{'on' if self.thinking else 'off'}, mtp {self.mtp}: {self.acceptance_length:g}; measured by "
                f"{self.run or self.source or 'an unrecorded run'})")

    def as_dict(self) -> dict:
        return {"id": self.id, "model": self.model, "engine": self.engine, "engine-version": self.engine_version,
                "dataset": self.dataset, "thinking": self.thinking, "mtp": self.mtp,
                "acceptance-length": self.acceptance_length, "run": self.run, "source": self.source}


def references(data: Any) -> dict[str, Reference]:
    """The entries of a schema-valid references file."""
    out = {}
    for rid, e in ((data or {}).get("entries") or {}).items():
        by = e.get("measured-by") or {}
        out[str(rid)] = Reference(id=str(rid), model=str(e["model"]), engine=str(e["engine"]),
                                  engine_version=str(e["engine-version"]), dataset=str(e["dataset"]),
                                  thinking=bool(e["thinking"]), mtp=int(e["mtp"]),
                                  acceptance_length=float(e["acceptance-length"]), run=by.get("run"),
                                  source=by.get("source"))
    return out


def file_findings(doc: YamlDoc) -> list[Finding]:
    """Rules the schema cannot state: a length within [1, mtp + 1], a run or a source for each entry."""
    found = []
    for rid, ref in references(doc.data).items():
        if not 1 <= ref.acceptance_length <= ref.mtp + 1:
            found.append(doc.finding(("entries", rid, "acceptance-length"),
                                     f"acceptance length {ref.acceptance_length:g} is outside [1, mtp + 1 = {ref.mtp + 1}]",
                                     "one verification step emits at most mtp + 1 tokens: check the measurement"))
        if ref.run is None and not ref.source:
            found.append(doc.finding(("entries", rid, "measured-by"), "no run and no source for this acceptance length",
                                     "name the run that measured it (measured-by.run: its URL)"))
    return found


def _spec_steps(data: Any) -> set[int]:
    """Every `speculative-num-steps` a recipe sets, anywhere (serve, points, prefill/decode workers)."""
    found: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "speculative-num-steps" and isinstance(v, int) and not isinstance(v, bool):
                    found.add(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(data)
    return found


def _image_tag(image: Any) -> str:
    text = str(image or "").split("@", 1)[0]
    return text.rsplit(":", 1)[1] if ":" in text.rsplit("/", 1)[-1] else ""


def recipe_findings(path: str, doc: YamlDoc, refs: dict[str, Reference]) -> list[Finding]:
    """The recipe's synthetic acceptance against the references (none when it sets none)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    value, named = data.get(FIELD), data.get(REF_FIELD)
    if value is None:
        if named is not None:
            return [doc.finding((REF_FIELD,), f"{REF_FIELD} {named!r} without {FIELD}",
                                f"set {FIELD}: to the entry's acceptance length, or remove the reference")]
        return []
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []                                   # the recipe schema reports the type
    model = data.get("model")
    for_model = [r for r in refs.values() if r.model == model]
    where = f"{names.ACCEPTANCE_REFERENCES}"
    if named is None:
        equal = [r for r in for_model if r.acceptance_length == float(value)]
        if equal:
            return []
        known = "; ".join(r.describe() for r in for_model) or f"none for {model}"
        return [doc.finding((FIELD,), f"synthetic acceptance {value:g} has no measured reference: no entry of "
                                      f"{where} for {model} has this length (its entries: {known})",
                            f"name the entry it replays ({REF_FIELD}: <id>) and use its length, or measure it "
                            "with the SPEED-Bench collection (docs/maintainer.md: Acceptance-length references)")]
    ref = refs.get(str(named))
    if ref is None:
        close = difflib.get_close_matches(str(named), list(refs), n=1, cutoff=0.6)
        return [doc.finding((REF_FIELD,), f"{named!r} is not an entry of {where}"
                            + (f" (did you mean {close[0]!r}?)" if close else ""),
                            f"entries: {', '.join(sorted(refs)) or '(none)'}")]
    found = []
    if ref.model != model:
        found.append(doc.finding((REF_FIELD,), f"{ref.id} was measured on {ref.model}, this recipe serves {model}",
                                 "name an entry measured on this model"))
    if ref.acceptance_length != float(value):
        found.append(doc.finding((FIELD,), f"synthetic acceptance {value:g} is stale: {ref.describe()}",
                                 f"set {FIELD}: {ref.acceptance_length:g}"))
    steps = _spec_steps(data)
    if steps and steps != {ref.mtp}:
        found.append(doc.finding((REF_FIELD,), f"{ref.id} was measured with {ref.mtp} speculative steps, this recipe "
                                 f"runs {', '.join(str(s) for s in sorted(steps))}",
                                 "name the entry measured with the recipe's speculative-num-steps"))
    engine = data.get("engine")
    if engine and engine != ref.engine:
        found.append(doc.finding((REF_FIELD,), f"{ref.id} was measured on {ref.engine}, this recipe runs {engine}",
                                 "name an entry measured on this engine"))
    tag = _image_tag(data.get("image"))
    if tag and ref.engine_version not in (tag, *[str(v) for v in data.get("engine-versions") or []]):
        found.append(doc.finding((REF_FIELD,), f"{ref.id} was measured on {ref.engine} {ref.engine_version}, this "
                                 f"recipe's image is {tag}", "re-measure on this image (the SPEED-Bench collection)",
                                 severity="warning"))
    return found


def all_findings(recipes: Iterable[tuple[str, YamlDoc]], refs_doc: YamlDoc | None) -> list[Finding]:
    """Every recipe with a synthetic acceptance, against the references file (missing: one finding)."""
    recipes = list(recipes)
    uses = [(p, d) for p, d in recipes if isinstance(d.data, dict) and d.data.get(FIELD) is not None]
    if refs_doc is None:
        return [d.finding((FIELD,), f"synthetic acceptance without a references file ({names.ACCEPTANCE_REFERENCES})",
                          "restore the file, or remove synthetic-acceptance") for _, d in uses]
    refs = references(refs_doc.data)
    out = file_findings(refs_doc)
    for path, doc in recipes:
        out += recipe_findings(path, doc, refs)
    return out


# ---- the SPEED-Bench collection matrix ------------------------------------------------------------

DATASET = "speed-bench-qualitative-coding"   # SPEED-Bench Qualitative, coding category (spec §6)
DEFAULT_MTP_LEVELS = (1, 2, 3, 4)


def _slug(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


SERVE_ISL = 1024    # the fallback dataset's prompt length (SPEED-Bench's own prompts replace it on a runner)
SERVE_OSL = 4096    # SPEED-Bench's output length (spec §6)


def serve_row(path: str, data: dict, entry: dict | None, think: bool, mtp: int) -> dict | None:
    """The runnable row a collection cell serves: the recipe's point with the fewest users (the
    measurement is per request; batching does not change what is accepted), with the master entry's
    runner and names. None for a disaggregated recipe (measured on one node only)."""
    if data.get("mode") == "disaggregated" or not isinstance(data.get("points"), dict) or not data["points"]:
        return None
    points = [p for p in data["points"].values() if isinstance(p, dict) and isinstance(p.get("tp"), int)]
    if not points:
        return None
    pt = min(points, key=lambda p: (int(p.get("conc") or 0), int(p["tp"])))
    entry = entry or {}
    slug = _slug(str(data.get("model")))
    return {"config-key": data.get("config-key"), "recipe": path, "image": data.get("image"),
            "model": data.get("model"), "model-prefix": entry.get("model-prefix", slug),
            "precision": entry.get("precision", "unknown"), "framework": data.get("engine"),
            "runner": entry.get("runner"), "tp": pt["tp"], "ep": int(pt.get("ep") or 1),
            "dp-attn": bool(pt.get("dp-attn") or False), "conc": int(pt.get("conc") or 1),
            "spec-decoding": "mtp", "scenario-type": "fixed-seq-len", "isl": SERVE_ISL, "osl": SERVE_OSL,
            "exp-name": f"{slug}_al_mtp{mtp}_thinking_{'on' if think else 'off'}"}


def collection_matrix(recipes: Iterable[tuple[str, YamlDoc]], refs: dict[str, Reference], *,
                      mtp_levels: Iterable[int] = DEFAULT_MTP_LEVELS,
                      thinking: Iterable[bool] = (True, False), masters: dict | None = None) -> list[dict]:
    """One row per (model, engine, image) served by a recipe with synthetic acceptance, x thinking
    mode x speculative steps: what the collection workflow measures. A row names the entry its
    measurement updates (an existing one with the same model, engine, mode and steps, else a new id),
    the length recorded now, so the update PR shows old -> new, and the `serve` row `runner
    acceptance` runs (from the first single-node recipe; `masters`: config key -> master entry)."""
    served: dict[tuple[str, str, str], dict] = {}
    for path, doc in recipes:
        data = doc.data if isinstance(doc.data, dict) else {}
        if data.get(FIELD) is None:
            continue
        image = str(data.get("image") or "")
        key = (str(data.get("model")), str(data.get("engine")), image)
        served.setdefault(key, {"recipes": [], "steps": set(), "data": []})
        served[key]["recipes"].append(path)
        served[key]["data"].append((path, data))
        served[key]["steps"] |= _spec_steps(data)
    rows = []
    for (model, engine, image), info in sorted(served.items()):
        version = _image_tag(image) or image
        levels = sorted(set(mtp_levels) | info["steps"])
        for think in thinking:
            for k in levels:
                match = next((r for r in refs.values() if (r.model, r.engine, r.thinking, r.mtp) ==
                              (model, engine, think, k)), None)
                serve = next((r for r in (serve_row(p, d, (masters or {}).get(d.get("config-key")), think, k)
                                          for p, d in info["data"]) if r is not None), None)
                rows.append({"id": match.id if match else
                             f"{_slug(model)}-{engine}-mtp{k}-thinking-{'on' if think else 'off'}",
                             "model": model, "engine": engine, "engine-version": version, "image": image,
                             "dataset": DATASET, "thinking": think, "mtp": k, "recipes": list(info["recipes"]),
                             "current": match.acceptance_length if match else None,
                             "runner": (serve or {}).get("runner"), "serve": serve})
    return rows


# ---- the collection's results -> an updated references file -------------------------------------

MEASUREMENT_FIELDS = ("id", "model", "engine", "engine-version", "dataset", "thinking", "mtp", "acceptance-length")


@dataclass(frozen=True)
class Update:
    """What the collected cells change: the new file text, (id, old, new) per measured cell, and
    what could not be used (each a sentence naming the file or cell)."""
    text: str
    changes: list[tuple[str, float | None, float]]
    problems: list[str]          # results that are no usable measurement (bad file, failed cell, other run)
    missing: list[str]           # matrix cells without a result (a partial collection)


def measurement_problem(doc: Any, run_url: str, where: str) -> str:
    """Why one acceptance.json is no usable measurement of this run ('' when it is one)."""
    if not isinstance(doc, dict) or doc.get("acceptance-version") != 1:
        return f"{where}: not an acceptance.json of `runner acceptance` (acceptance-version 1)"
    absent = [k for k in MEASUREMENT_FIELDS if k not in doc]
    if absent:
        return f"{where}: missing {', '.join(absent)}"
    length, mtp = doc["acceptance-length"], doc["mtp"]
    if length is None:
        return f"{where}: cell {doc['id']} measured nothing: {doc.get('problem') or 'no length'}"
    if isinstance(length, bool) or not isinstance(length, (int, float)) or isinstance(mtp, bool) \
            or not isinstance(mtp, int) or not 1 <= length <= mtp + 1:
        return f"{where}: cell {doc['id']}: acceptance length {length!r} is outside [1, mtp + 1] for mtp {mtp!r}"
    if doc.get("run") != run_url:
        return (f"{where}: cell {doc['id']} was measured by {doc.get('run') or 'no recorded run'}, not by {run_url}: "
                "update from one run's results at a time")
    return ""


def updated_references(text: str, measurements: list[tuple[str, Any]], run_url: str, run_date: str | None,
                       expected: list[str] | None = None) -> Update:
    """The references file with every usable measurement of the run written as its cell's entry
    (`measured-by`: the run, the engine metric, the date), comments and other entries kept.
    `measurements`: (where it was read, the parsed acceptance.json); `expected`: the matrix's cell
    ids, so the cells without a result are named."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    data = yaml.load(text)
    entries = data.setdefault("entries", CommentedMap())
    problems, changes, seen = [], [], []
    for where, doc in measurements:
        problem = measurement_problem(doc, run_url, where)
        if problem:
            problems.append(problem)
            continue
        rid = str(doc["id"])
        if rid in seen:
            problems.append(f"{where}: cell {rid} was measured twice in this run; the first result is kept")
            continue
        seen.append(rid)
        old = entries.get(rid)
        by = CommentedMap([("run", run_url), ("source", str(doc.get("source") or "engine metric"))])
        if run_date:
            by["date"] = run_date
        entry = CommentedMap([("model", str(doc["model"])), ("engine", str(doc["engine"])),
                              ("engine-version", str(doc["engine-version"])), ("dataset", str(doc["dataset"])),
                              ("thinking", bool(doc["thinking"])), ("mtp", int(doc["mtp"])),
                              ("acceptance-length", round(float(doc["acceptance-length"]), 2)), ("measured-by", by)])
        changes.append((rid, float(old["acceptance-length"]) if old is not None else None,
                        entry["acceptance-length"]))
        entries[rid] = entry
    out = io.StringIO()
    yaml.dump(data, out)
    missing = [c for c in (expected or []) if c not in seen]
    return Update(text=out.getvalue(), changes=changes, problems=problems, missing=missing)


def update_body(update: Update, run_url: str, stale: list[str]) -> str:
    """The update PR's description: old -> new per cell, what is missing or unusable, the recipes to follow."""
    lines = [f"Acceptance lengths measured by the SPEED-Bench collection run {run_url}.", "",
             "| entry | before | measured |", "|---|---|---|"]
    lines += [f"| `{rid}` | {'-' if old is None else f'{old:g}'} | {new:g} |" for rid, old, new in update.changes]
    if update.missing:
        lines += ["", f"Not measured by this run ({len(update.missing)} cell(s) of its matrix): "
                  + ", ".join(f"`{c}`" for c in update.missing)]
    if update.problems:
        lines += ["", "Results not used:"] + [f"- {p}" for p in update.problems]
    if stale:
        lines += ["", "Recipes whose synthetic acceptance no longer matches its entry (`config validate` fails "
                  "them until they replay the new length):"] + [f"- {s}" for s in stale]
    return "\n".join(lines) + "\n"
