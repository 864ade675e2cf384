"""Eval rows: the harness that runs them, the thresholds they are scored against, the `/use` gate.

| module | layer | what |
|---|---|---|
| `policy.py` | core | the `evals:` section of ci-policy.yaml -> suites and harnesses; a row -> harness commands |
| `thresholds.py` | core | `eval-thresholds.yaml` -> minimum per (model prefix, task), InferenceX's lookup order |
| `score.py` | core | batch manifest rules, score checks, the eval result document (every failure listed) |
| `gate.py` | core | planned eval rows vs collected eval results -> verdict; `/use` rule over artifact names |
| `driver.py` | adapter | runs the harness once per eval concurrency, writes per-concurrency files and the manifest |
| `process.py` | shell | an eval job directory -> `eval_result.json` |
"""
