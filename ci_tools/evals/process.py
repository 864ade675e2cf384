"""`results process` on an eval job directory (shell): job.json's eval spec, the harness files under
evals/, status.json, the thresholds file and the measured acceptance (acceptance.json) -> eval_result.json
(judged by ci_tools.evals.score; the acceptance compared by ci_tools.evals.acceptance)."""

from __future__ import annotations

from pathlib import Path

from ci_tools.evals import score
from ci_tools.evals.acceptance import DEFAULT_TOLERANCE, compare
from ci_tools.evals.thresholds import Thresholds
from ci_tools.evals.load import json_object_or_none
from ci_tools import names


def is_eval_job(job: dict | None) -> bool:
    return isinstance(job, dict) and isinstance(job.get("evals"), dict)


def process_eval_dir(path: Path, job: dict, thresholds: Thresholds, acceptance_tolerance: float = DEFAULT_TOLERANCE) -> dict:
    spec = job["evals"]
    evals = path / names.EVAL_DIR
    meta = json_object_or_none(evals / names.EVAL_MANIFEST)
    files = {p.name: json_object_or_none(p) for p in sorted(evals.glob("results*.json"))} if evals.is_dir() else {}
    prefix = spec.get("model-prefix")
    if not prefix and meta and meta.get("infmax_model_prefix") not in (None, "", "unknown"):
        prefix = meta["infmax_model_prefix"]
    p = job.get("point") or {}
    point = {"name": p.get("name"), "tp": p.get("tp"), "ep": p.get("ep"), "dp-attn": p.get("dp-attn"),
             "conc": p.get("conc"), "gpus": p.get("gpus"), "scenario": p.get("scenario"), "model": p.get("model"),
             "config-key": p.get("config-key"), "runner": p.get("runner"), "image": p.get("image"),
             "result-filename": job.get("result-filename"), "model-prefix": prefix}
    scores, fails = score.judge(meta=meta, files=files, expected_concs=list(spec.get("concurrencies") or []),
                                tasks=list(spec.get("tasks") or []), lookup=lambda task: thresholds.lookup(prefix, task),
                                job_status=json_object_or_none(path / names.STATUS_JSON))
    # the acceptance the engine measured on this row (runner/acceptance.py) beside the synthetic length
    # the point's throughput rows replay (the recipe's, as job.json recorded it)
    measured = compare((job.get("recipe") or {}).get("synthetic-acceptance"),
                       json_object_or_none(path / names.ACCEPTANCE_JSON), acceptance_tolerance)
    acceptance = {**(spec.get("acceptance") or {}), **(measured or {})}
    return score.eval_result(point, {**spec, "model-prefix": prefix, "acceptance": acceptance or None}, meta,
                             scores, fails, list(files))
