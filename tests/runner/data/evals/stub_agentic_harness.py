"""A stand-in for the agentic eval harness in tests (mini-swe-agent and the SWE-bench harness need
docker images and datasets this CI cannot fetch). It keeps the harness contract exactly: called with
the policy's command template, it asks the served model about each instance, `--conc` at a time,
counts the answers that say RESOLVED (the stub server answers from a table) and writes
`{"results": {task: {"exact_match,resolved": resolved / attempted}}}` to --results.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

INSTANCES = [f"swe-instance-{i}" for i in range(1, 6)]


def ask(base_url: str, model: str, instance: str) -> str:
    body = json.dumps({"model": model, "stream": False,
                       "messages": [{"role": "user", "content": f"Fix the failing test of {instance}."}]}).encode()
    req = urllib.request.Request(f"{base_url}/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"]


def main() -> int:
    p = argparse.ArgumentParser()
    for flag in ("--base-url", "--model", "--tasks", "--work-dir", "--results"):
        p.add_argument(flag, required=True)
    p.add_argument("--conc", type=int, required=True)
    p.add_argument("--limit", type=int, default=0)
    a = p.parse_args()
    instances = INSTANCES[: a.limit] if a.limit else INSTANCES
    with ThreadPoolExecutor(max_workers=a.conc) as pool:
        answers = list(pool.map(lambda i: ask(a.base_url, a.model, i), instances))
    resolved = sum("RESOLVED" in text for text in answers)
    Path(a.work_dir).mkdir(parents=True, exist_ok=True)
    results = {task: {"exact_match,resolved": resolved / len(instances), "alias": task} for task in a.tasks.split(",")}
    Path(a.results).write_text(json.dumps({"results": results, "harness_version": "stub-agentic 1"}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
