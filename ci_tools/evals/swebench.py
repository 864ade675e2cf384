"""InferenceX's agentic eval on a runner host (the default `swebench-agentic` harness command):
`python3 -m ci_tools.evals.swebench --base-url URL --model M --conc N --tasks swebench_lite
--limit L --work-dir DIR --results FILE`.

1. mini-swe-agent (`mini-extra swebench`) solves SWE-bench Lite test instances against the served
   model (OpenAI-compatible, through litellm), `--conc` instances at a time, writing preds.json;
2. the SWE-bench harness (`python -m swebench.harness.run_evaluation`, docker) runs each instance's
   tests on its patch and writes a report;
3. the report becomes the result contract: `exact_match,resolved` = resolved / attempted.

Neither tool can be installed in ci-tools' own CI (no docker images, no dataset download), so this
module's commands are not run there: the tests run the harness contract with a stub harness instead
and check `report_to_results` as a table. What the runner host needs is in ci-policy.yaml (`requires`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

DATASETS = {"swebench_lite": ("lite", "princeton-nlp/SWE-bench_Lite")}


def report_to_results(task: str, report: dict, attempted: int | None = None) -> dict:
    """A SWE-bench harness report -> the result contract. Unsubmitted or errored instances count as
    unresolved: the denominator is what was attempted (or the report's total), never what succeeded."""
    resolved = int(report.get("resolved_instances", 0))
    total = attempted if attempted else int(report.get("total_instances") or report.get("submitted_instances") or 0)
    if total <= 0:
        return {"results": {}, "error": "the SWE-bench report counts no instances"}
    return {"results": {task: {"exact_match,resolved": resolved / total, "alias": task,
                               "resolved": resolved, "attempted": total}},
            "harness_version": "mini-swe-agent + swebench"}


def _run(argv: list[str], env: dict | None = None) -> None:
    print("+ " + " ".join(argv), flush=True)
    code = subprocess.call(argv, env={**os.environ, **(env or {})})
    if code != 0:
        raise SystemExit(f"{argv[0]} exited with code {code}")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python3 -m ci_tools.evals.swebench")
    for flag in ("--base-url", "--model", "--tasks", "--work-dir", "--results"):
        p.add_argument(flag, required=True)
    p.add_argument("--conc", type=int, required=True)
    p.add_argument("--limit", type=int, default=0, help="instances to attempt (0: all)")
    a = p.parse_args(argv)
    tasks = a.tasks.split(",")
    unknown = [t for t in tasks if t not in DATASETS]
    if unknown:
        print(f"error: unknown agentic eval task(s) {', '.join(unknown)}; known: {', '.join(DATASETS)}", file=sys.stderr)
        return 2
    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"results": {}}
    for task in tasks:
        subset, dataset = DATASETS[task]
        out = work / task
        agent = ["mini-extra", "swebench", "--subset", subset, "--split", "test", "--model", f"openai/{a.model}",
                 "--workers", str(a.conc), "--output", str(out)]
        if a.limit:
            agent += ["--slice", f":{a.limit}"]
        _run(agent, {"OPENAI_API_BASE": f"{a.base_url}/v1", "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "EMPTY")})
        run_id = f"ci-tools-{task}-conc{a.conc}"
        _run([sys.executable, "-m", "swebench.harness.run_evaluation", "--dataset_name", dataset,
              "--predictions_path", str(out / "preds.json"), "--max_workers", str(a.conc), "--run_id", run_id,
              "--report_dir", str(out)])
        reports = sorted(out.glob(f"*.{run_id}.json")) or sorted(Path.cwd().glob(f"*.{run_id}.json"))
        if not reports:
            raise SystemExit(f"the SWE-bench harness wrote no report for run {run_id}")
        got = report_to_results(task, json.loads(reports[-1].read_text()), a.limit or None)
        results["results"].update(got["results"])
        results["harness_version"] = got.get("harness_version")
    Path(a.results).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
