"""Sweep planning: which GPU work a change runs (`ci-tools plan`, `ci-tools matrix`).

Core (pure; may import `ci_tools.errors`, `ci_tools.names`, `ci_tools.config`, `ci_tools.changelog`
core modules, the YAML parsers and each other; never git, GitHub, click, subprocess or the file
system):
  labels.py      the label policy (`inferencex-e2e/ci-policy.yaml`) as a `Policy`
  event.py       the webhook fields the gate needs -> `GateEvent`
  gate.py        `decide(event, policy)`: check? sweep? mode, concurrency group
  matrix.py      master entries -> InferenceX matrix rows, eval selection
  buckets.py     trimming, recipe fingerprints, buckets, canaries per hardware family, release
  appendonly.py  append-only entries: the base -> head delta and its scope rules
  plan.py        the typed `Plan` from the gate decision, the appended entries and the masters
  canary.py      the canary-release protocol: which families the canary-passed-* markers release
  render.py      a plan (or gate decision) as a table, JSON, GitHub outputs and step summary
Shell (reads files, git, the event):
  load.py        the policy from the working tree or the default (this repository's policy file, built into the package);
                 the canary markers the release job downloaded
  inputs.py      event file + git + masters -> what `plan.plan_sweep` needs
  flow.py        `plan` and `matrix`: inputs -> decisions -> a plan, for the CLI to render
"""
