"""Eval rows: the harness that runs them, the thresholds they are scored against, the `/use` gate.

| module | layer | what |
|---|---|---|
| `policy.py` | core | the `evals:` section of ci-policy.yaml -> suites and harnesses; a row -> harness commands |
| `thresholds.py` | core | a loaded `eval-thresholds.yaml` -> minimum per (model prefix, task), InferenceX's lookup order |
| `score.py` | core | batch manifest rules, score checks, the eval result document (every failure listed) |
| `gate.py` | core | planned eval rows vs collected eval results -> verdict; `/use` rule over artifact names |
| `report.py` | core | the eval table (status card, collect's step summary) |
| `load.py` | shell | reads and checks the thresholds file |
| `driver.py` | adapter | runs the harness once per eval concurrency, writes per-concurrency files and the manifest |
| `process.py` | shell | an eval job directory -> `eval_result.json` |
| `swebench.py` | adapter | the agentic harness command of runner hosts |

Core modules may import `ci_tools.errors`, `ci_tools.yaml.located`'s data types, `ci_tools.names`, the
config and sweep core modules and each other (results is a floor above: it reads eval results, not
the reverse); the shell ones anything of a lower floor (tests/test_layers.py checks it).
"""
