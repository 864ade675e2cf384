"""The eval client of an eval job (adapter): `ci-tools runner evals JOB_DIR`.

`runner run` starts it in place of AIPerf once the server is ready. It runs the harness commands of
job.json's `evals.runs` in order (per eval concurrency; per task for lm-eval), turns each
concurrency's output into `evals/results_conc<N>.json` (the result contract: lm-eval's
`{"results": {task: {metric: value}}}`), and writes the batch manifest `evals/meta_env.json`
(eval_concs, completed_eval_concs, failed_eval_concs, why each failed). A failed harness run fails its
concurrency, not the driver: the driver exits 0 once the manifest is written, and `results process`
judges the job (exit 1, every failure listed). It exits 1 only when it cannot do its own work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ci_tools.evals.load import json_object_or_none
from ci_tools import names


def _say(message: str) -> None:
    print(f"eval: {message}", flush=True)


def _lm_eval_output(output: Path) -> Path | None:
    """lm-eval writes <output_path>/<model name>/results_<timestamp>.json; the newest one."""
    found = sorted(output.rglob("results_*.json"), key=lambda p: p.stat().st_mtime) if output.is_dir() else []
    return found[-1] if found else None


def run_harness(run: dict, htype: str) -> tuple[dict | None, str]:
    """One harness run -> (its result document, "") or (None, why it failed)."""
    argv = run["argv"]
    _say(f"conc {run['conc']}, {run['task']}: {' '.join(argv[:3])} ...")
    try:
        code = subprocess.call(argv, stdin=subprocess.DEVNULL, env={**os.environ, **(run.get("env") or {})})
    except OSError as exc:
        return None, f"cannot start {argv[0]}: {exc.strerror}"
    if code != 0:
        return None, f"{Path(argv[0]).name} exited with code {code}"
    output = Path(run["output"])
    path = _lm_eval_output(output) if htype == "lm-eval" else output
    if path is None or not path.is_file():
        return None, f"{Path(argv[0]).name} exited 0 but wrote no results ({output})"
    doc = json_object_or_none(path)
    if doc is None or not isinstance(doc.get("results"), dict):
        return None, f"{path} is not a harness result (a JSON object with a `results` mapping)"
    return doc, ""


def merge(docs: list[dict], harness: dict) -> dict:
    """One concurrency's result file from its runs (one per task for lm-eval)."""
    out: dict = {"results": {}, "versions": {}, "n-shot": {}, "n-samples": {}, "harness": harness}
    for doc in docs:
        for key in ("results", "versions", "n-shot", "n-samples"):
            if isinstance(doc.get(key), dict):
                out[key].update(doc[key])
        version = doc.get("lm_eval_version") or doc.get("harness_version")
        if version:
            out["harness_version"] = str(version)
    return out


def drive(job_dir: Path, base_url: str | None = None) -> int:
    """Run every harness run of the job; `base_url` replaces the planned one (with slurm the server's
    node is known only once its job runs)."""
    job = json_object_or_none(job_dir / names.JOB_JSON)
    if job is None or not isinstance(job.get("evals"), dict):
        print(f"error: {job_dir / names.JOB_JSON}: not an eval job (no `evals` section)", file=sys.stderr)
        return 2  # a missing input, like a usage error
    spec = job["evals"]
    planned = spec.get("base-url")
    if base_url and planned and base_url != planned:
        for run in spec["runs"]:
            run["argv"] = [a.replace(planned, base_url) for a in run["argv"]]
    evals = job_dir / names.EVAL_DIR
    evals.mkdir(parents=True, exist_ok=True)
    concs: list[int] = list(spec["concurrencies"])
    completed: list[int] = []
    failed: dict[int, str] = {}
    version = None
    for conc in concs:
        docs = []
        for run in (r for r in spec["runs"] if r["conc"] == conc):
            doc, why = run_harness(run, spec["harness"]["type"])
            if doc is None:
                failed[conc] = f"{run['task']}: {why}"
                _say(f"conc {conc} failed: {failed[conc]}")
                break
            docs.append(doc)
        if conc in failed:
            continue
        merged = merge(docs, spec["harness"])
        version = merged.get("harness_version", version)
        (evals / names.EVAL_RESULTS_PATTERN.format(conc=conc)).write_text(json.dumps(merged, indent=2) + "\n",
                                                                          encoding="utf-8")
        completed.append(conc)
        _say(f"conc {conc} done")
    manifest = {"eval_concs": concs, "completed_eval_concs": completed, "failed_eval_concs": sorted(failed),
                "failures": {str(c): why for c, why in sorted(failed.items())}, "conc": concs[0] if concs else None,
                "infmax_model_prefix": spec.get("model-prefix") or "unknown", "harness": spec["harness"]["name"],
                "harness_version": version or spec["harness"].get("version") or None}
    (evals / names.EVAL_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    _say(f"{len(completed)} of {len(concs)} concurrencies completed"
         + (f"; failed: {', '.join(map(str, sorted(failed)))} (`results process` fails this job)" if failed else ""))
    return 0


def drive_quietly(job_dir: Path, base_url: str | None = None) -> int:
    """`drive` with everything it and the harness print sent to stderr (file descriptor 1 on 2), so
    that stdout carries one document (`runner evals --format json`)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        return drive(job_dir, base_url)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def manifest_of(job_dir: Path) -> dict | None:
    """The batch manifest `drive` wrote (None when there is none)."""
    return json_object_or_none(job_dir / names.EVAL_DIR / names.EVAL_MANIFEST)
