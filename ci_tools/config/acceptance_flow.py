"""`config acceptance-update` (shell): the SPEED-Bench collection's results -> the references file -> a PR.

Reads every `acceptance.json` under the results folder (the measure jobs' artifacts), asks GitHub for
the run that measured them (it must exist and be a run of the collection workflow: its URL is what each
entry records), writes the updated `inferencex-e2e/acceptance-lengths.yaml` (config/acceptance.py decides
it) and, with `--open-pr`, commits it to a new branch and opens the pull request through the REST API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.github.models import WorkflowRun


@dataclass
class UpdateReport:
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    body: str = ""


def _measurements(results: Path, root: Path) -> list[tuple[str, object]]:
    if not results.is_dir():
        raise InputError(f"{results}: results folder not found (download the measure jobs' "
                         f"{names.ACCEPTANCE_ARTIFACT_PREFIX}* artifacts into it)", exit_code=2)
    files = sorted(results.rglob(names.ACCEPTANCE_JSON))
    if not files:
        raise InputError(f"{results}: no results: no {names.ACCEPTANCE_JSON} anywhere below it (no measure job "
                         "uploaded one: see the run's measure jobs); nothing to update", exit_code=2)
    out: list[tuple[str, object]] = []
    for f in files:
        try:
            doc: object = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            doc = None
            out.append((f"{f}: not valid JSON ({exc})", doc))
            continue
        out.append((str(f.relative_to(results)), doc))
    return out


def _expected(matrix: Path | None) -> list[str] | None:
    if matrix is None:
        return None
    try:
        rows = json.loads(matrix.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{matrix}: not the collection matrix (JSON rows of `config acceptance-matrix`): {exc}",
                         exit_code=2) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "id" in r for r in rows):
        raise InputError(f"{matrix}: not the collection matrix (a JSON list of rows with an `id`)", exit_code=2)
    return [str(r["id"]) for r in rows]


def _run(gh, run_id: int, repo: str) -> WorkflowRun:
    from ci_tools.github.client import GitHubError

    try:
        run = gh.workflow_run(run_id)
    except GitHubError as exc:
        if exc.status == 404:
            raise InputError(f"run {run_id} does not exist in {repo} (GitHub answered 404): pass the id of the "
                             f"{names.ACCEPTANCE_WORKFLOW} run whose results these are", exit_code=2) from None
        raise
    if not run.path.endswith(f"/{names.ACCEPTANCE_WORKFLOW}"):
        raise InputError(f"run {run_id} is a run of {run.path or 'an unknown workflow'}, not of the collection "
                         f"({names.WORKFLOWS_DIR}/{names.ACCEPTANCE_WORKFLOW}); its URL would be recorded as the "
                         "measuring run")
    return run


def acceptance_update(root: Path, results: Path, run_id: int, repo: str | None, *, matrix: Path | None = None,
                      allow_partial: bool = False, open_pr: bool = False, base: str = "main") -> UpdateReport:
    from ci_tools.config.acceptance import all_findings, file_findings, update_body, updated_references
    from ci_tools.config import schemas
    from ci_tools.github.client import GitHub
    from ci_tools.yaml.located import load_yaml_text

    refs_path = root / names.ACCEPTANCE_REFERENCES
    if not refs_path.is_file():
        raise InputError(f"{refs_path}: references file not found (pass --root REPO)", exit_code=2)
    if not repo:
        raise InputError("no repository: pass --repo OWNER/NAME (in a workflow GITHUB_REPOSITORY is set)", exit_code=2)
    measurements = _measurements(results, root)
    expected = _expected(matrix)
    gh = GitHub.from_env(repo)
    run = _run(gh, run_id, gh.repo)
    run_url = run.html_url
    update = updated_references(refs_path.read_text(encoding="utf-8"), measurements, run_url,
                                run.created_at[:10] or None, expected)
    report = UpdateReport(warnings=list(update.problems))
    if not update.changes:
        raise InputError("no usable measurement in the results of run "
                         f"{run_id}: " + "; ".join(update.problems) + "; nothing was written")
    if update.missing:
        text = (f"partial collection: {len(update.missing)} of {len(expected or [])} matrix cell(s) have no result: "
                + ", ".join(update.missing))
        if not allow_partial:
            raise InputError(text + "; nothing was written (re-run the failed cells, or pass --allow-partial to "
                                    "update the measured ones and list the rest in the PR)")
        report.warnings.append(text)
    doc = load_yaml_text(update.text, names.ACCEPTANCE_REFERENCES)
    broken = schemas.check(doc, doc.data, "acceptance-lengths") + file_findings(doc)
    if broken:
        raise InputError("the updated references file would not validate: "
                         + "; ".join(f.message for f in broken) + "; nothing was written")
    recipes = [(p.relative_to(root).as_posix(), load_yaml_text(p.read_text(encoding="utf-8"),
                                                                p.relative_to(root).as_posix()))
               for p in sorted((root / names.RECIPES_DIR).rglob("*.yaml"))]
    stale = [f"{f.file}:{f.line}: {f.message}" for f in all_findings(recipes, doc) if f.severity == "error"]
    report.body = update_body(update, run_url, stale)
    refs_path.write_text(update.text, encoding="utf-8")
    report.lines.append(f"wrote {refs_path}: {len(update.changes)} entr{'y' if len(update.changes) == 1 else 'ies'} "
                        f"from run {run_url}")
    report.lines += [f"  {rid}: {'-' if old is None else f'{old:g}'} -> {new:g}" for rid, old, new in update.changes]
    report.outputs = {"changed": str(len(update.changes)), "missing": str(len(update.missing)), "pr-url": ""}
    if open_pr:
        branch = f"acceptance-lengths/run-{run_id}"
        sha = gh.branch_sha(base)
        gh.create_branch(branch, sha)
        gh.put_file(names.ACCEPTANCE_REFERENCES, update.text, branch=branch,
                    message=f"acceptance lengths measured by run {run_id}",
                    sha=gh.file_sha(names.ACCEPTANCE_REFERENCES, branch))
        pr = gh.create_pull(title=f"Acceptance lengths from SPEED-Bench run {run_id}", head=branch, base=base,
                            body=report.body)
        report.outputs["pr-url"] = pr.html_url
        report.lines.append(f"opened {pr.html_url} ({branch} -> {base})")
    report.lines.append(f"GitHub API requests: {gh.log.count}")
    return report


def acceptance_matrix(root: Path, mtp_levels: tuple[int, ...], thinking: str) -> tuple[list[dict], list[str]]:
    """`config acceptance-matrix`: (the rows a single-node recipe can serve, the ids of those none can)."""
    from ci_tools.config.acceptance import DEFAULT_MTP_LEVELS, collection_matrix, references
    from ci_tools.config.load import default_master_paths, read_masters
    from ci_tools.yaml.load import load_yaml_file

    refs = references(load_yaml_file(root / names.ACCEPTANCE_REFERENCES, names.ACCEPTANCE_REFERENCES).data)
    recipes = [(p.relative_to(root).as_posix(), load_yaml_file(p, p.relative_to(root).as_posix()))
               for p in sorted((root / names.RECIPES_DIR).rglob("*.yaml"))]
    modes = {"both": (True, False), "on": (True,), "off": (False,)}[thinking]
    rows = collection_matrix(recipes, refs, mtp_levels=mtp_levels or DEFAULT_MTP_LEVELS, thinking=modes,
                             masters=read_masters(default_master_paths(root), root).entries)
    return [r for r in rows if r["serve"] is not None], [r["id"] for r in rows if r["serve"] is None]
