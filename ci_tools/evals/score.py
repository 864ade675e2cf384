"""Judging one eval job (pure): the batch manifest, the result files, every score against its threshold.

InferenceX's `validate_scores.py` rules are the floor (spec §4.3, cases 65-68): every numeric
`exact_match,*` metric (not its stderr) of every task is checked; zero metrics checked fails; the
manifest (`meta_env.json`: eval_concs, completed_eval_concs, failed_eval_concs) must list positive,
unique concurrencies equal to the expected ones, none failed, all completed, with exactly one
`results..._conc<N>.json` per expected concurrency and no other. Added here: every task the suite
asked for must be present at every concurrency, a score must be finite, and the job itself must have
ended cleanly. Every failed check is reported, not the first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ci_tools.evals.thresholds import Threshold
from ci_tools.errors import Failure

EVAL_RESULT_SCHEMA = "ci-tools/eval-result/v1"
RESULT_FILE = re.compile(r"_conc(\d+)(?:_\d+)?\.json$")
METRIC_PREFIX = "exact_match,"
MANIFEST_KEYS = ("eval_concs", "completed_eval_concs", "failed_eval_concs")


def _join(values) -> str:
    return ", ".join(str(v) for v in sorted(values))


def _positive_ints(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)


def manifest_problems(meta: dict | None, files: list[str], expected: list[int]) -> list[str]:
    """Batch-manifest errors (InferenceX's messages), all of them; [] when the batch is complete."""
    if meta is None:
        return [f"eval manifest is unavailable or invalid (no readable meta_env.json); "
                f"{len(files)} result file(s) cannot be attributed to concurrencies"]
    problems: list[str] = []
    lists: dict[str, list[int]] = {}
    for key in MANIFEST_KEYS:
        if key not in meta:
            continue
        value = meta[key]
        if not _positive_ints(value):
            problems.append(f"{key} must be a list of positive integers, got {value!r}")
            continue
        dups = {v for v in value if value.count(v) > 1}
        if dups:
            problems.append(f"{key} lists concurrency {_join(dups)} more than once")
        lists[key] = value
    file_concs: dict[int, list[str]] = {}
    for name in files:
        m = RESULT_FILE.search(name)
        if m is None:
            problems.append(f"result file {name} has no _conc<N> suffix, so its concurrency is unknown")
        else:
            file_concs.setdefault(int(m.group(1)), []).append(name)
    want = set(expected)
    if "eval_concs" in meta:
        if "eval_concs" in lists and set(lists["eval_concs"]) != want:
            problems.append(f"batched eval metadata does not match workflow concurrencies "
                            f"(metadata: {_join(set(lists['eval_concs']))}; workflow: {_join(want)})")
        failed = set(lists.get("failed_eval_concs", []))
        if failed:
            problems.append(f"eval failed for concurrency: {_join(failed)}")
        completed = set(lists.get("completed_eval_concs", []))
        if want - completed:
            problems.append(f"missing completed concurrency: {_join(want - completed)}")
        if completed - want:
            problems.append(f"unexpected completed concurrency: {_join(completed - want)}")
    else:
        # a single, unbatched eval: exactly one expected concurrency, the manifest's own, one file
        if len(want) != 1 or meta.get("conc") not in want:
            problems.append(f"the manifest has no eval_concs and its conc {meta.get('conc')!r} is not the one "
                            f"expected concurrency ({_join(want)})")
        if len(files) != 1:
            problems.append(f"an unbatched eval must leave exactly one result file, found {len(files)}")
    if want - set(file_concs):
        problems.append(f"missing result files for concurrency: {_join(want - set(file_concs))}")
    if set(file_concs) - want:
        problems.append(f"unexpected result files for concurrency: {_join(set(file_concs) - want)}")
    for conc, names in sorted(file_concs.items()):
        if len(names) > 1:
            problems.append(f"{len(names)} result files for concurrency {conc}: {', '.join(sorted(names))}")
    return problems


@dataclass(frozen=True)
class Score:
    conc: int
    task: str
    metric: str
    score: float
    threshold: Threshold

    @property
    def passed(self) -> bool:
        return self.score >= self.threshold.minimum

    def as_dict(self) -> dict:
        return {"conc": self.conc, "task": self.task, "metric": self.metric, "score": self.score,
                "threshold": self.threshold.minimum, "threshold-source": self.threshold.source,
                "threshold-where": self.threshold.where, "passed": self.passed}


def scores_of(conc: int, name: str, doc, tasks: list[str], lookup: Callable[[str], Threshold]
              ) -> tuple[list[Score], list[Failure]]:
    """Every exact_match score of one result file, and what is wrong with the file."""
    fails: list[Failure] = []
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, dict):
        return [], [Failure("result-file", f"{name} is not a harness result: no `results` mapping of task -> metrics")]
    for task in tasks:
        if task not in results:
            fails.append(Failure("task-missing", f"[conc={conc}] task {task} is missing from {name} "
                                                 f"(it has: {', '.join(sorted(results)) or 'nothing'})"))
    scores: list[Score] = []
    for task, metrics in sorted(results.items()):
        if not isinstance(metrics, dict):
            fails.append(Failure("result-file", f"[conc={conc}] {name}: results.{task} is not a mapping of metrics"))
            continue
        for metric, value in sorted(metrics.items()):
            if not str(metric).startswith(METRIC_PREFIX) or "stderr" in str(metric):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                fails.append(Failure("score", f"[conc={conc}] {task} {metric} is {value!r}, not a finite number"))
                continue
            scores.append(Score(conc, task, metric, float(value), lookup(task)))
    return scores, fails


def judge(*, meta: dict | None, files: Mapping[str, object], expected_concs: list[int], tasks: list[str],
          lookup: Callable[[str], Threshold], job_status: dict | None) -> tuple[list[Score], list[Failure]]:
    """All scores and every failed check of one eval job. `files` maps result file name -> parsed JSON
    (None when it could not be read)."""
    fails = [Failure("manifest", p) for p in manifest_problems(meta, sorted(files), expected_concs)]
    if job_status is not None and not job_status.get("ok"):
        fails.insert(0, Failure("job", f"the eval job did not finish: {job_status.get('phase')}: "
                                       f"{job_status.get('reason') or 'no reason recorded'}"))
    scores: list[Score] = []
    for name, doc in sorted(files.items()):
        m = RESULT_FILE.search(name)
        if m is None:
            continue  # reported by the manifest rules
        if doc is None:
            fails.append(Failure("result-file", f"{name} is not valid JSON"))
            continue
        got, bad = scores_of(int(m.group(1)), name, doc, tasks, lookup)
        scores += got
        fails += bad
    for s in scores:
        if not s.passed:
            fails.append(Failure("score", f"[conc={s.conc}] {s.task} {s.metric} = {s.score:.4f} is below "
                                          f"{s.threshold.minimum:.4f} ({s.threshold.source})"))
    if not scores:
        fails.append(Failure("no-metrics", "no exact_match metric was checked, so nothing shows the model is "
                                           "accurate; the harness wrote no scores"))
    return scores, fails


def eval_result(point: dict, spec: dict, meta: dict | None, scores: list[Score], fails: list[Failure],
                files: list[str]) -> dict:
    """The versioned eval result document (eval_result.json)."""
    meta = meta or {}
    return {
        "schema": EVAL_RESULT_SCHEMA,
        "point": point,
        "valid": not fails,
        "failures": [f.as_dict() for f in fails],
        "harness": {**spec.get("harness", {}), "reported-version": meta.get("harness_version")},
        "tasks": spec.get("tasks", []),
        "model-prefix": spec.get("model-prefix"),
        "concurrencies": {"expected": spec.get("concurrencies", []),
                          "completed": meta.get("completed_eval_concs"), "failed": meta.get("failed_eval_concs")},
        "acceptance": spec.get("acceptance"),
        "scores": [s.as_dict() for s in scores],
        "files": sorted(files),
    }
