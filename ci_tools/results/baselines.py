"""main's results for a comparison, read from main's collected sweep runs (the runs the results app
is sent), through the GitHub API: no database beyond what Actions already keeps.

Main's sweeps are push runs of the sweep workflow on the default branch. Only successful runs
count (a failed or cancelled sweep is never ingested, so it is never a baseline either); each has
a `results_bmk` artifact with `results.json`. Runs are read newest first until every point asked
for has `history` results or `max_runs` runs were looked at, so the cost stays bounded: one
listing page, one artifact listing and one download per run read.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ci_tools import names
from ci_tools.github.models import Artifact, WorkflowRun, named_artifact
from ci_tools.results import compare

MAX_RUNS = 20


@dataclass
class MainResults:
    results: list[dict] = field(default_factory=list)    # newest first
    runs: list[int] = field(default_factory=list)         # the runs they came from
    notes: list[str] = field(default_factory=list)


def collection_from_zip(data: bytes, where: str) -> list[dict]:
    """The result documents of a `results_bmk` archive (its `results.json`)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == names.COLLECTION_JSON]
            if not members:
                raise ValueError(f"no {names.COLLECTION_JSON} in the archive")
            doc = json.loads(z.read(sorted(members, key=len)[0]))
    except (zipfile.BadZipFile, ValueError, KeyError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise ValueError(f"{where}: {names.COLLECTION_JSON} is not a result collection")
    return [r for r in results if isinstance(r, dict)]


class RunSource(Protocol):
    """What reading main's results asks of GitHub (the client, or a flow's narrower protocol of it)."""

    def runs(self, workflow: str, *, branch: str, event: str = ..., status: str = ...) -> Iterable[WorkflowRun]: ...
    def artifacts(self, run_id: int) -> list[Artifact]: ...
    def artifact_zip(self, artifact_id: int, *, max_bytes: int = ...) -> bytes: ...


def main_results(gh: RunSource, *, wanted: set[tuple] | None = None, history: int = 5, branch: str = "main",
                 workflow: str = names.SWEEP_WORKFLOW, max_runs: int = MAX_RUNS) -> MainResults:
    out = MainResults()
    have: Counter = Counter()
    looked = 0
    for run in gh.runs(workflow, branch=branch, event="push", status="completed"):
        if looked >= max_runs:
            out.notes.append(f"stopped after {max_runs} main runs")
            break
        looked += 1
        if run.conclusion != "success":
            continue
        art = named_artifact(gh.artifacts(run.id), names.COLLECTION_ARTIFACT)
        if art is None:
            continue
        try:
            results = collection_from_zip(gh.artifact_zip(art.id), f"run {run.id} {names.COLLECTION_ARTIFACT}")
        except ValueError as exc:
            out.notes.append(f"skipped: {exc}")
            continue
        for r in results:
            r.setdefault("source", f"main run {run.id}")
            if r.get("valid") and isinstance(r.get("point"), dict):
                have[compare.identity(r["point"])] += 1
        out.results.extend(results)
        out.runs.append(run.id)
        if wanted is not None and all(have[w] >= history for w in wanted):
            break
    return out
