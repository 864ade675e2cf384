"""`config validate`: every master config, runners.yaml and recipe, then the rules across them.

`check` is the functional core: schema validation, cross-field rules, cross-file rules over the
documents `config.load.load_sources` read (a file that cannot be read or parsed is already a finding
there); it returns findings sorted by file and line. `config.load.validate_root` / `validate_files`
do both and are what other commands call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ci_tools.config import crossfile, engineargs, recipetext, rules, schemas
from ci_tools.config.images import allowlist_of
from ci_tools.config.crossfile import Change, Entry, Recipe
from ci_tools.errors import MAX_FINDINGS_PER_FILE, Finding, cap_per_file
from ci_tools.yaml.located import YamlDoc
from ci_tools.yaml.readings import divergences


@dataclass
class Sources:
    """Loaded inputs. `root` is None when files are validated outside a repository layout."""

    root: Path | None
    masters: list[YamlDoc] = field(default_factory=list)
    runners: YamlDoc | None = None
    recipes: dict[str, YamlDoc] = field(default_factory=dict)  # repo-relative path -> doc
    recipe_paths: set[str] = field(default_factory=set)  # every recipe file present, loadable or not
    recipe_texts: dict[str, str] = field(default_factory=dict)  # what each loaded recipe's file says (recipetext)
    findings: list[Finding] = field(default_factory=list)  # files that could not be loaded
    notes: list[str] = field(default_factory=list)  # what was not checked, and why
    masters_failed: int = 0  # master files that could not be parsed
    thresholds: YamlDoc | None = None  # eval-thresholds.yaml (with a root)
    policy: YamlDoc | None = None      # ci-policy.yaml (with a root): its `evals:` section is checked here
    acceptance: YamlDoc | None = None  # acceptance-lengths.yaml (with a root): recipes' synthetic acceptance


@dataclass
class Report:
    findings: list[Finding]
    notes: list[str]
    counts: dict[str, int]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "warning"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors


def _merge_masters(docs: list[YamlDoc]) -> tuple[list[tuple[str, dict | object, YamlDoc]], list[Finding]]:
    out: list[tuple[str, object, YamlDoc]] = []
    found: list[Finding] = []
    first: dict[str, YamlDoc] = {}
    for doc in docs:
        if doc.data is None:
            found.append(Finding(doc.file, 1, 1, "the master config is empty",
                                 "add entries (`<config-key>:` at column 1), or delete the file"))
            continue
        if not isinstance(doc.data, dict):
            found.append(doc.finding((), f"a master config must be a mapping of config key -> entry, got "
                                         f"{schemas.describe(doc.data)}",
                                     "write each config as `<config-key>:` at column 1"))
            continue
        for key, entry in doc.data.items():
            if not isinstance(key, str):
                found.append(doc.finding((key,), f"config key {key!r} is not a string", "quote the key"))
                continue
            if "*" in key:
                found.append(doc.finding((key,), f"config key '{key}' contains '*'",
                                         "'*' is reserved for wildcards in changelog config-keys; rename the key"))
                continue
            if key in first:
                line, _ = first[key].mark((key,))
                found.append(doc.finding((key,), f"config key '{key}' is defined twice (first at {first[key].file}:{line})",
                                         "config keys must be unique across all master files; rename or remove one"))
                continue
            first[key] = doc
            out.append((key, entry, doc))
    return out, found


def _acceptance_findings(src: Sources, recipes: dict[str, Recipe]) -> list[Finding]:
    """Every recipe's synthetic acceptance names or equals a measured reference (config/acceptance.py)."""
    from ci_tools.config import acceptance

    refs = src.acceptance
    if refs is not None:
        problems = schemas.check(refs, refs.data, "acceptance-lengths")
        if problems:
            return problems
    return acceptance.all_findings(((p, r.doc) for p, r in recipes.items() if r.valid), refs)


def entry_findings(key: str, data: object, doc: YamlDoc, *, quick: bool = False,
                   limit: int | None = None) -> tuple[list[Finding], dict | None]:
    """(findings, the entry when it passed the schema) for one master entry: the schema, then its
    cross-field rules.

    `quick`: ask `schemas.is_valid` first and import jsonschema only for an entry it does not pass
    (same verdict, same messages; the planner cannot afford jsonschema's import on every run).
    `limit`: build at most that many schema findings and count the rest (`schemas.check`).
    """
    ref = "mnEntry" if isinstance(data, dict) and data.get("multinode") is True else "snEntry"
    if quick and schemas.is_valid("master", ref, data) is True:
        problems = []
    else:
        problems = schemas.check(doc, data, "master", ref, (key,), limit)
    if problems or not isinstance(data, dict):   # the schema passes mappings only: isinstance holds then
        return problems, None
    out = []
    for issue in rules.entry_issues(data):
        message = f"{key}: {issue.message}"
        if issue.related is not None:
            message += f" (see line {doc.mark((key, *issue.related))[0]})"
        out.append(doc.finding((key, *issue.path), message, issue.hint, issue.severity))
    return out, data


def selected_errors(entries: list[tuple[str, object, YamlDoc]], runners: YamlDoc | None,
                    images: tuple[tuple[str, ...], str] | None = None) -> list[Finding]:
    """The errors of some master entries alone (what a plan selects): schema, cross-field rules and,
    with a runners file that passes its schema, the runner-label and DRAM rules; with `images`
    (patterns, policy file), the image allowlist. Rules about the other entries, recipes and image
    pins are `config validate`'s; warnings are left to it too."""
    findings: list[Finding] = []
    valid: list[Entry] = []
    for key, data, doc in entries:
        problems, entry = entry_findings(key, data, doc, quick=True)
        findings += problems
        if entry is not None:
            valid.append(Entry(key, entry, doc))
    if runners is not None and valid and _runners_ok(runners):
        findings += crossfile.runner_labels(valid, runners)
        findings += crossfile.dram_hardware(valid, runners)
    if images is not None and valid:
        findings += crossfile.image_allowlist(valid, *images)
    errors = {f for f in findings if f.severity != "warning"}
    return sorted(errors, key=lambda f: (f.file, f.line or 0, f.col or 0, f.message))


def _runners_ok(runners: YamlDoc) -> bool:
    verdict = schemas.is_valid("runners", None, runners.data)
    return verdict if verdict is not None else not schemas.check(runners, runners.data, "runners")


# Entries failing their schema after which `check` stops (each costs its findings' time and memory).
MAX_INVALID_ENTRIES = 200


@dataclass(frozen=True)
class Checked:
    """What `check` knows once config's own rules ran: what the checks of the floors above take."""

    src: Sources
    change: Change
    entries: list[Entry]              # the entries that passed their schema
    recipes: dict[str, Recipe]
    hardware: dict | None             # runners.yaml's `hardware:`; None when the runners file is absent or fails


# A check a floor above config adds to `config validate` (the eval files, the priority policy, what a
# runner can serve): `(checked, findings so far) -> more findings`. The command composes them
# (`cli/config.py`), in order; config knows nothing of who uses its data.
UpperCheck = Callable[[Checked, list[Finding]], list[Finding]]


def check(src: Sources, change: Change = Change(), upper: Sequence[UpperCheck] = ()) -> Report:
    """The functional core: every rule over loaded sources, then the `upper` checks. Pure: no file or
    process access."""
    findings = list(src.findings)
    notes = list(src.notes)
    merged, found = _merge_masters(src.masters)
    findings += found
    valid: list[Entry] = []
    invalid = 0
    for n, (key, data, doc) in enumerate(merged):
        if invalid >= MAX_INVALID_ENTRIES:
            # An attacker's 40k-entry master would otherwise cost ~1 ms and ~30 KB per reported entry;
            # nobody reads past the first screens of errors anyway.
            notes.append(f"stopped after {invalid} invalid entries: {len(merged) - n} more entries not checked")
            findings.append(doc.finding((key,), f"{len(merged) - n} more entries not checked: stopped after "
                                                f"{invalid} invalid entries", "fix the errors above and run again"))
            break
        # quick: jsonschema only for an entry the schema interpreter does not pass (the same verdict and
        # messages): it was 5 of the 18 s of an entry of 200,000 search-space entries
        problems, entry = entry_findings(key, data, doc, quick=True, limit=MAX_FINDINGS_PER_FILE)
        findings += problems
        if entry is None:
            invalid += 1
            continue
        valid.append(Entry(key, entry, doc))

    runners_ok = False
    hardware = None   # runners.yaml's `hardware:` once the file passed its schema
    if src.runners is not None:
        problems = schemas.check(src.runners, src.runners.data, "runners", limit=MAX_FINDINGS_PER_FILE)
        findings += problems
        runners_ok = not problems
        if runners_ok:
            findings += crossfile.runner_labels(valid, src.runners)
            findings += crossfile.dram_hardware(valid, src.runners)
            hardware = src.runners.data.get("hardware") if isinstance(src.runners.data, dict) else None
        else:
            notes.append("runner labels not checked: fix the runners file first")

    recipes: dict[str, Recipe] = {}
    for rel, doc in src.recipes.items():
        kind = "disagg-recipe" if isinstance(doc.data, dict) and doc.data.get("mode") == "disaggregated" else "recipe"
        problems = schemas.check(doc, doc.data, kind, limit=MAX_FINDINGS_PER_FILE)
        findings += problems or engineargs.findings(doc)
        findings += recipetext.findings(doc, divergences(src.recipe_texts[rel]) if rel in src.recipe_texts else [])
        recipes[rel] = Recipe(rel, doc, valid=not problems)

    findings += crossfile.image_pins(valid, change)
    if src.policy is not None and (patterns := allowlist_of(src.policy.data)) is not None:
        findings += crossfile.image_allowlist(valid, patterns, src.policy.file)
    if src.root is not None:
        findings += crossfile.recipe_links(valid, recipes, src.recipe_paths, change, hardware)
        if not src.masters_failed:  # otherwise the references may sit in the file that did not parse
            referenced = {ref for _, data, _ in merged if isinstance(data, dict)
                          for _, ref, _ in crossfile.recipe_refs(data)}
            findings += crossfile.orphan_recipes(recipes, {key for key, _, _ in merged}, referenced)
    findings += crossfile.naming(valid)
    if src.root is not None:
        findings += _acceptance_findings(src, recipes)
    checked = Checked(src, change, valid, recipes, (hardware or {}) if runners_ok else None)
    for upper_check in upper:
        findings += upper_check(checked, findings)

    # Capped last, so that every rule saw every finding before; the verdict counts the hidden ones too.
    findings = cap_per_file(sorted(set(findings), key=lambda f: (f.file, f.line or 0, f.col or 0, f.message)))
    counts = {"master_files": len(src.masters), "entries": len(merged), "valid_entries": len(valid),
              "runners_files": int(src.runners is not None), "recipes": len(src.recipes)}
    return Report(findings, notes, counts)
